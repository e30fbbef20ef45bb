// Join mode "order" (the default): device work reaches its host call
// through the order of CUPTI's correlation ids, with no CUPTI work per call.
//
// What real CUPTI does (measured on the H200, docs/gpu-validation.md): with only kernel / copy / set activity enabled, every device
// record carries a correlation id, and the ids are handed out in the order
// the calls that made the work entered the driver: 1, 2, 3 ... over those
// calls alone. A call's id is taken while its hook's interval is open, so
// if call A returned before call B began, A's id is the smaller. Device
// records taken in id order therefore meet the host calls in start order,
// except where calls of two threads overlap in time; there the record's own
// description (kernel name, grid and block; bytes of a copy or set; graph
// or not) picks the call. Only calls that overlap in time *and* look the
// same (one kernel, one grid, from two threads at once) cannot be told
// apart; either is then taken.
//
// Each record goes to the first open call that fits, with three guards
// against one lost record shifting every later arrow onto the next
// identical call:
//  - ids skipped (a record CUPTI dropped): once the ids have been seen to
//    be dense, a record after a gap of g ids goes to the fitting call that
//    has g calls passed over before it, if there is one;
//  - a call nb did not record (a full ring): once the ids have been seen to
//    be dense, taking a call that passes over more calls than ids were
//    skipped is refused when the records that come next fit the
//    passed-over calls in order;
//  - a record that fits no call in every detail is given the next call by
//    order alone only if the record after it does not fit that call.
//
// Records come out of CUPTI in any order (buffers per stream and thread,
// work finishing at different times), so they wait until the ids before
// them have come and one after them has too, or until `hold_ns` has passed
// (an id that never comes). One that comes after its turn was skipped is
// placed between the calls of the ids around it. A record also waits while
// a call that began before its work is still in flight (Now::in_call_ns):
// that call may be the one that made it.
//
// Plain data in, links out: no threads, no clocks of its own (times are
// passed in), so tests drive it directly.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <vector>

#include "collector/device_record.h"
#include "core/record.h"

namespace nb {

class OrderJoin {
 public:
  // A host call that makes device work (makes_device_work), reduced to
  // what the join compares. Times in monotonic ns.
  struct Host {
    uint64_t start_ns = 0, end_ns = 0;
    uint64_t id = 0;      // the host record's id
    uint64_t window = 0;  // the collector's window number, 0 = none
    uint32_t tid = 0;     // the calling thread (for the arrow's start)
    Kind kind = Kind::Other;
    uint32_t name = 0;    // interned mangled kernel name, 0 = unknown
    uint32_t grid[3] = {0, 0, 0};
    uint32_t block[3] = {0, 0, 0};
    uint64_t bytes = 0;
    static Host from(const Record& r, uint64_t start_ns, uint64_t end_ns, uint64_t window);
  };
  struct Link {
    bool joined = false;
    uint64_t host_id = 0;
    uint64_t window = 0;
    uint32_t host_tid = 0;        // where and when the call began (monotonic ns)
    uint64_t host_start_ns = 0;
  };
  struct Config {
    uint64_t hold_ns = 500000000;    // how long a missing id holds back the ids after it
    uint64_t settle_ns = 5000000;    // a record waits until the rings were drained this long after its end
    uint64_t slack_ns = 20000;       // a call may appear to start this much after its work (clock conversion)
    size_t lookahead = 512;          // calls looked at past the first unresolved one
    // Calls passed over, and the intervals of joined ids, are kept this long
    // (host time) for records that come late: a kernel that ran longer
    // than this on one stream while another went on gets no arrow.
    uint64_t keep_ns = 5000000000;
    uint64_t forget_ns = 30000000000;  // open calls never matched are dropped after this long
    size_t max_calls = size_t(1) << 20;
    size_t max_linked = size_t(1) << 18;  // joined ids remembered
    uint64_t max_positional_gap = 8;      // ids skipped that the dense rule above accounts for
  };
  struct Counts {
    uint64_t joined = 0;
    uint64_t unjoined = 0;        // no call fits (its host record lost, or a call nb does not hook)
    uint64_t late = 0;            // came after the ids around it were joined
    uint64_t weak = 0;            // joined by order alone (the next call, same kind, details differ)
    uint64_t refused = 0;         // of the unjoined: the fitting call would have shifted the records after it
    uint64_t forgotten_calls = 0; // calls dropped unmatched by age or number
  };
  // How far a pass goes: Normal waits for missing ids and for a record
  // after each; NoWait does not (a window's deadline); Final joins
  // everything, the calls still returning included (the end of the run).
  enum class Pass { Normal, NoWait, Final };
  using Emit = std::function<void(const DeviceRecord&, const Link&)>;

  OrderJoin() = default;
  explicit OrderJoin(const Config& c) : config_(c) {}

  // Host calls, in any order across threads.
  void add(const Host& h);
  // A device record as it arrived (`arrival_ns`: monotonic now).
  void add(const DeviceRecord& d, uint64_t arrival_ns);
  // Where the host side stands (monotonic ns).
  struct Now {
    uint64_t now_ns = 0;
    // When the rings were last drained: calls that returned before it are
    // in. A record waits for a drain settle_ns after its end.
    uint64_t drained_ns = 0;
    // The earliest start of a call that makes device work and was still in
    // flight at that drain (UINT64_MAX: none). Its work may have run and
    // come back before its record is published (the thread descheduled
    // inside the call), so records of work begun after it wait, up to
    // hold_ns after they arrived (in a Normal pass only).
    uint64_t in_call_ns = UINT64_MAX;
  };
  // Joins every device record whose turn has come and emits it with its
  // link. The waits above are skipped in a Final pass.
  void advance(const Now& now, Pass pass, const Emit& emit);

  size_t waiting() const { return waiting_.size(); }
  size_t calls() const { return calls_.size(); }
  const Counts& counts() const { return counts_; }

 private:
  struct Pending {
    DeviceRecord d;
    uint64_t id;  // the correlation id widened to 64 bits (CUPTI's wraps at 2^32)
    uint64_t arrival_ns;
  };
  struct Linked {
    Link link;
    uint64_t start_ns, end_ns;  // the call's interval (joined ones)
  };

  // Calls not joined yet, by (start, record id): insertion anywhere
  // (threads' records arrive a pass apart), iteration in time order. A
  // joined call leaves at once (linked_ keeps its interval); one passed
  // over stays a while, for a record that comes late.
  using Key = std::pair<uint64_t, uint64_t>;
  struct Call {
    Host h;
    bool open = true;  // false: passed over
  };
  // Nodes come from one pool (pool_, declared first so that it outlives
  // them): a call or a record costs no malloc once the pool has grown to
  // what is in flight.
  using Calls = std::pmr::map<Key, Call>;
  using Open = std::pmr::map<Key, Call*>;  // the open calls, in time order
  using Waiting = std::pmr::multimap<uint64_t, Pending>;  // by id; equal ids in arrival order

  uint64_t widen(uint32_t id);
  bool dense() const;
  Link place(const Pending& q);
  Link forward(const Pending& q);
  Link late(const Pending& q);
  bool next_records_fit(Open::iterator chosen, uint64_t id) const;
  bool next_record_fits(const Host& h, uint64_t id) const;
  Link take(Open::iterator it, uint64_t id);
  Link link(Calls::iterator it, uint64_t id);
  void prune();

  Config config_;
  std::unique_ptr<std::pmr::unsynchronized_pool_resource> pool_ =
      std::make_unique<std::pmr::unsynchronized_pool_resource>();
  Calls calls_{pool_.get()};
  Open open_{pool_.get()};
  Waiting waiting_{pool_.get()};
  uint64_t high_water_ = 0;  // the largest widened id seen
  uint64_t last_id_ = 0;     // the largest id placed so far
  std::pmr::map<uint64_t, Linked> linked_{pool_.get()};  // id → its call, for records sharing an id and late ones
  uint64_t newest_start_ = 0;
  uint64_t forward_seen_ = 0;  // records placed in order, and how often after a gap (moving average)
  double gap_rate_ = 0;
  std::vector<uint64_t> ends_;  // forward()'s scratch, kept to spare an allocation per record
  Counts counts_;
};

// Does device record `d` describe work call `h` could have made? `strict`
// also compares the details (name, grid, block, bytes); otherwise only the
// kind of work.
bool order_join_fits(const OrderJoin::Host& h, const DeviceRecord& d, bool strict);

}  // namespace nb
