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
// Work cannot start before its call did, but the two clocks can drift
// apart: the join measures by how much (the lag) and allows for it.
//
// Each record goes to the first open call that fits, with three guards
// against one lost record shifting every later arrow onto the next
// identical call:
//  - ids skipped (a record CUPTI dropped, or records not handed over yet
//    at a window's deadline): once the ids have been seen to be dense, a
//    record after a gap of g ids goes to the fitting call that has g calls
//    passed over before it, if there is one (not the first record after
//    nb was dormant); at a window's deadline (a NoWait pass) after a gap of
//    more than max_positional_gap, to no other call with fewer passed over
//    (an earlier call of the same kernel: a layer repeats);
//  - a call nb did not record (a full ring): once the ids have been seen to
//    be dense, taking a call that passes over more calls than ids were
//    skipped is refused when the records that come next fit the
//    passed-over calls in order;
//  - a record that fits no call in every detail is given the next call by
//    order alone only if the record after it does not fit that call, and
//    never a kernel to a launch of another kernel.
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
    uint32_t range = 0;   // Record::range, step and stack: where the device time goes
    uint32_t step = 0;
    uint32_t stack = 0;
    static Host from(const Record& r, uint64_t start_ns, uint64_t end_ns, uint64_t window);
  };
  struct Link {
    bool joined = false;
    uint64_t host_id = 0;
    uint64_t window = 0;
    uint32_t host_tid = 0;        // where and when the call began (monotonic ns)
    uint64_t host_start_ns = 0;
    uint32_t host_range = 0;      // the call's NVTX range, step and stack (Record::range, step, stack)
    uint32_t host_step = 0;
    uint32_t host_stack = 0;
  };
  struct Config {
    uint64_t hold_ns = 500000000;    // how long a missing id holds back the ids after it
    uint64_t settle_ns = 5000000;    // a record waits until the rings were drained this long after its end
    uint64_t slack_ns = 20000;       // a call may appear to start this much after its work (clock conversion)
    // On top of the slack, the lag measured on recent joins (device times
    // behind the host's), up to this much.
    uint64_t max_lag_ns = 2000000;
    size_t lookahead = 512;          // calls looked at past the first unresolved one
    // Calls passed over, and the intervals of joined ids, are kept this long
    // (host time) for records that come late: a kernel that ran longer
    // than this on one stream while another went on gets no arrow.
    uint64_t keep_ns = 5000000000;
    uint64_t forget_ns = 30000000000;  // open calls never matched are dropped after this long
    size_t max_calls = size_t(1) << 15;
    size_t max_linked = size_t(1) << 16;  // joined ids remembered (64 bytes each, reserved at once)
    uint64_t max_positional_gap = 8;      // ids skipped past which a deadline takes only the call at its place
    // Records waiting at most; past it the oldest are placed without their
    // waits (a device far behind the host holds many finished records
    // whose ids are not all in yet, each ~120 bytes).
    size_t max_waiting = size_t(1) << 14;
  };
  struct Counts {
    uint64_t joined = 0;
    uint64_t unjoined = 0;        // no call fits (its host record lost, or a call nb does not hook)
    uint64_t late = 0;            // came after the ids around it were joined
    uint64_t weak = 0;            // joined by order alone (the next call, same kind, details differ)
    uint64_t refused = 0;         // of the unjoined: the fitting call would have shifted the records after it
    uint64_t forgotten_calls = 0; // calls dropped unmatched by age or number
    uint64_t hurried = 0;         // placed without their waits: too many were waiting
    uint64_t max_lag_ns = 0;      // the largest lag measured (see lag_ns)
  };
  // How far a pass goes: Normal waits for missing ids and for a record
  // after each; NoWait does not (a window's deadline); Final joins
  // everything, the calls still returning included (the end of the run).
  enum class Pass { Normal, NoWait, Final };
  using Emit = std::function<void(const DeviceRecord&, const Link&)>;

  OrderJoin() : OrderJoin(Config{}) {}
  explicit OrderJoin(const Config& c);

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

  // Recording resumed at `mono_ns` after nb was dormant: the ids of the
  // calls made meanwhile are a gap no recorded call accounts for.
  void note_resume(uint64_t mono_ns) {
    resumed_ = true;
    resume_ns_ = mono_ns;
  }

  size_t waiting() const { return waiting_.size() + arriving_.size(); }
  // How far device times run behind host times, as the joins measure it.
  uint64_t lag_ns() const { return lag_ns_; }
  // Calls kept: open ones and those passed over (joined ones leave at once).
  size_t calls() const { return open_live_ + passed_.size() + incoming_.size(); }
  const Counts& counts() const { return counts_; }
  const Config& config() const { return config_; }

 private:
  using Key = std::pair<uint64_t, uint64_t>;  // (start, record id): time order
  struct Pending {
    DeviceRecord d;
    uint64_t id;  // the correlation id widened to 64 bits (CUPTI's wraps at 2^32)
    uint64_t arrival_ns;
  };
  struct Linked {
    Link link;
    uint64_t start_ns, end_ns;  // the call's interval (joined ones)
  };
  struct Slot {
    Key key;
    Host h;
    bool live;  // false: taken or passed over (a hole, left until it reaches the front)
  };

  // A vector read from `head`: popping the front is an index step, the dead
  // front is cut off once it is a quarter of the vector (amortized O(1);
  // the vector never holds more than 4/3 of what is live, plus 4096).
  // Sorted sequences that grow at the back and are consumed from the front
  // (calls in time order, records in id order) live in one of these rather
  // than in a tree: a record costs no node, no rebalancing, and a pass
  // reads memory in order.
  template <typename T>
  struct Line {
    std::vector<T> v;
    size_t head = 0;
    bool empty() const { return head == v.size(); }
    size_t size() const { return v.size() - head; }
    T& operator[](size_t i) { return v[head + i]; }
    const T& operator[](size_t i) const { return v[head + i]; }
    T& front() { return v[head]; }
    T& back() { return v.back(); }
    typename std::vector<T>::iterator begin() { return v.begin() + static_cast<std::ptrdiff_t>(head); }
    typename std::vector<T>::iterator end() { return v.end(); }
    typename std::vector<T>::const_iterator begin() const { return v.begin() + static_cast<std::ptrdiff_t>(head); }
    typename std::vector<T>::const_iterator end() const { return v.end(); }
    void pop_front() {
      if (++head >= 4096 && 4 * head >= v.size()) {
        v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(head));
        head = 0;
      }
    }
  };

  uint64_t widen(uint32_t id);
  bool dense() const;
  void merge_arrivals();
  Link place(const Pending& q);
  Link forward(const Pending& q);
  Link late(const Pending& q);
  bool next_records_fit(size_t chosen, uint64_t id) const;
  bool next_record_fits(const Host& h, uint64_t id) const;
  Link take(size_t i, uint64_t id);
  // A join's (work start - call start), toward the lag.
  void measure(size_t chosen, const DeviceRecord& d);
  uint64_t limit(const DeviceRecord& d) const { return d.start + config_.slack_ns + lag_ns_; }
  Link link(const Host& h, uint64_t id);
  void remember(uint64_t id, const Linked& l);
  // The first joined id at or after `id`; the first waiting record after `id`.
  std::vector<std::pair<uint64_t, Linked>>::iterator linked_at(uint64_t id);
  std::vector<Pending>::const_iterator waiting_after(uint64_t id) const;
  void prune();

  Config config_;
  // Calls not joined yet. `open_` in time order; holes where a call was
  // taken or passed over. Calls passed over move to `passed_` for a while,
  // for a record that comes late (rare: a tree is fine there). Calls come
  // in any order across threads (a pass apart): they gather in `incoming_`
  // and are merged in at the start of each pass.
  Line<Slot> open_;
  size_t open_live_ = 0;
  std::vector<Slot> incoming_;
  std::map<Key, Host> passed_;
  // Device records waiting for their turn, by id (equal ids in arrival
  // order); those added since the last pass in `arriving_`.
  Line<Pending> waiting_;
  std::vector<Pending> arriving_;
  uint64_t high_water_ = 0;  // the largest widened id seen
  uint64_t last_id_ = 0;     // the largest id placed so far
  // id → its call, for records sharing an id and late ones; by id.
  Line<std::pair<uint64_t, Linked>> linked_;
  uint64_t newest_start_ = 0;
  uint64_t forward_seen_ = 0;  // records placed in order, and how often after a gap (moving average)
  double gap_rate_ = 0;
  std::vector<uint64_t> ends_;  // forward()'s scratch, kept to spare an allocation per record
  // Device times come through CUPTI's conversion of the GPU's clock, host
  // times through nb's of the TSC: the two can drift apart (20 us a second
  // seen on the H200, after CUPTI was paused for a while), until work
  // seems to start before the call that made it. The least (work start -
  // call start) over the joins of calls of the last 0.5-1 s that could
  // hardly have been another call says by how much; calls that far after
  // the work still count.
  static constexpr uint64_t kLagSpanNs = 500000000;
  uint64_t lag_span_end_ = 0;
  int64_t lag_span_min_ = INT64_MAX, lag_prev_min_ = INT64_MAX;
  uint64_t lag_scan_after_ = 0;  // joins of calls starting before this are not scanned for the lag
  uint64_t lag_ns_ = 0;
  Pass pass_ = Pass::Normal;  // the pass under way
  bool resumed_ = false;      // recording resumed (at resume_ns_) and no call made since taken yet
  uint64_t resume_ns_ = 0;
  Counts counts_;
};

// Does device record `d` describe work call `h` could have made? `strict`
// also compares the details (name, grid, block, bytes); otherwise only the
// kind of work.
bool order_join_fits(const OrderJoin::Host& h, const DeviceRecord& d, bool strict);

}  // namespace nb
