// Turns one recording's records into trace events as they are drained, so
// that the timeline streams out (trace_file.h) instead of piling up.
//
// Most records become an event at once. What waits, bounded:
//  - a call that makes device work, until its device record is joined
//    (its event carries the CUPTI correlation id of that record, which HTA
//    joins on), or `hold_ns` has passed (then it goes without);
//  - in join mode "callback", a device record whose call is not drained
//    yet, until it is or `hold_ns` has passed;
//  - the last device event of each stream, so that a box crossing the next
//    one's start by a few ns is clipped (viewers cannot nest a partial
//    overlap);
//  - each NVTX range's device span (gpu_user_annotation), until the device
//    work of its calls has had `hold_ns` to come.
// Pure: records in, events out through an EventSink; times through the
// TimeMap the collector sets each pass. No threads, no I/O.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/device_record.h"
#include "collector/memory_tracker.h"
#include "core/clock.h"
#include "core/options.h"
#include "core/record.h"
#include "formats/trace_model.h"

namespace nb {

class NameTable;

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void event(const formats::Event& e) = 0;
  virtual void flow(const formats::Flow& f) = 0;
  virtual void counter(const formats::Counter& c) = 0;
};

// What joining host and device records found (for the footer and tests).
struct JoinStats {
  uint64_t device_records = 0;
  uint64_t joined = 0;        // device records whose host call is in the trace
  uint64_t overlaps_clipped = 0;
  // Successful calls that make device work (launches, copies other than
  // host to host, sets), and those of them no device record was joined to:
  // CUPTI's records went elsewhere (another client took the buffers), were
  // lost, or came and the join failed.
  uint64_t work_calls = 0;
  uint64_t work_without_device = 0;
  // Calls whose event went out before their device record came (held
  // longer than hold_ns, or too many held): no correlation id on them.
  uint64_t released_unjoined = 0;
};

struct TraceSetup {
  int64_t pid = 0;
  bool device_traced = false;
  CuptiJoin join_mode = CuptiJoin::None;
  bool debug_args = false;
  uint64_t hold_ns = 2000000000;     // how long a call or a range waits for its device records
  size_t max_held = size_t(1) << 15;  // calls held at once
  uint64_t max_host_events = 0;       // NB_TRACE_MAX_EVENTS, 0 = all
};

// Event names: the API names (index = ApiId), the memory counter's, then
// the NameTable's (index = kNameBase + name id), fetched as they appear.
// Without a table (tests), the names given are the table's.
class TraceNames {
 public:
  explicit TraceNames(const NameTable* table, std::vector<std::string> fixed = {});
  const std::vector<std::string>* all() const { return &names_; }
  uint32_t counter() const;
  uint32_t kernel(uint32_t name_id);  // fetches new names from the table
  // The name of a NameTable id as text ("" when unknown).
  const std::string& kernel_text(uint32_t name_id) { return names_[kernel(name_id)]; }

 private:
  const NameTable* table_;
  std::vector<std::string> fixed_;
  std::vector<std::string> names_;
};

class TraceBuilder {
 public:
  TraceBuilder(const TraceSetup& setup, TraceNames& names, EventSink& sink);

  void set_time(const TimeMap& m) { time_ = m; }
  // A call's record (not NVTX); `r.stack` is a StackTable id.
  void host(const Record& r);
  // Device work, with the call it was joined to (order join), or none.
  void device(const DeviceRecord& d, const CorrelationLink* link);
  // Told of each piece of device work once it is placed (now, or after
  // waiting for its call), with where its call was (joined false: none
  // known): the regions' and the stacks' device time.
  void on_device(std::function<void(const DeviceRecord&, const CallOrigin&)> f) { on_device_ = std::move(f); }
  void nvtx(const Record& r);
  void step(uint64_t number, uint64_t start_ticks, uint64_t end_ticks, uint32_t tid);
  void memory_point(const MemoryPoint& p);
  // Each pass: what has waited long enough goes out (monotonic ns).
  void advance(uint64_t now_ns);
  // The end: everything still waiting goes out.
  void flush();
  // Device tracing starts at the first CUDA call, after the recording may
  // have begun; after a hand-over to the program's own CUPTI client no
  // device record comes, and nothing waits for one any more. Cheap to call
  // every pass.
  void set_device(bool traced, CuptiJoin mode, bool handed_over);

  const JoinStats& stats() const { return stats_; }
  uint64_t host_events_left_out() const { return host_left_out_; }
  // Tracks seen, for the tail's metadata.
  const std::set<uint32_t>& step_threads() const { return step_threads_; }
  const std::set<std::pair<uint32_t, uint32_t>>& streams() const { return streams_; }
  const std::set<uint32_t>& gpus() const { return gpus_; }
  // Earliest event start seen (epoch ns), INT64_MAX before any.
  int64_t first_ns() const { return first_ns_; }
  // Stack ids referenced by events (their text goes in the tail).
  const std::set<uint32_t>& stacks_used() const { return stacks_used_; }
  size_t held() const { return held_.size(); }

 private:
  struct Cover {  // device work of one call, for NVTX ranges' device spans
    uint64_t host_ns;  // the call's start, monotonic
    uint64_t start, end;
    uint32_t device, stream;
  };
  struct PendingRange {
    uint32_t name;
    uint64_t start_ns, end_ns;  // monotonic
  };
  // Returns where the event starts (epoch ns).
  uint64_t emit_host(const Record& r, uint32_t correlation);
  void release_held(uint64_t older_than_ns);
  void emit_device(formats::Event& e);
  void finish_ranges(uint64_t before_ns);
  void add_cover(uint32_t tid, const Cover& c);
  int64_t epoch(uint64_t ticks) {
    const int64_t t = time_.epoch_ns(ticks);
    if (t < first_ns_) first_ns_ = t;
    return t;
  }

  TraceSetup setup_;
  TraceNames& names_;
  // By trace name index: the NCCL collective a kernel's name gives (an
  // index into the list in trace_builder.cpp), -1 none, kNotLooked.
  static constexpr int8_t kNotLooked = -2;
  std::vector<int8_t> collective_of_;
  EventSink& sink_;
  TimeMap time_;
  formats::Event scratch_;  // reused: no allocation per event
  formats::Event device_scratch_;
  formats::Counter counter_scratch_;
  JoinStats stats_;
  uint64_t host_events_ = 0;
  uint64_t host_left_out_ = 0;
  uint64_t next_flow_ = 1;
  bool holding_ = false;
  // Map nodes from a pool: a held call costs no malloc once it has grown.
  std::unique_ptr<std::pmr::unsynchronized_pool_resource> pool_ =
      std::make_unique<std::pmr::unsynchronized_pool_resource>();
  // Calls held: record id → a slot of held_records_ (a map node of a
  // 64-byte-aligned Record would take twice its room; a deque grows
  // without copying what it holds).
  std::pmr::unordered_map<uint64_t, uint32_t> held_{pool_.get()};
  std::deque<Record> held_records_;
  std::vector<uint32_t> free_held_;
  uint32_t hold(const Record& r);
  void unhold(uint32_t slot) { free_held_.push_back(slot); }
  std::deque<std::pair<uint64_t, uint64_t>> held_order_;  // (since_ns, id), oldest first
  // Join mode "callback": correlation id → the call, for the arrow.
  struct CallRef {
    uint32_t tid;
    uint64_t start_ns;  // monotonic
    uint64_t id;
    bool joined;
    uint32_t other;  // the call's second id (corr_last), 0 if none
    uint32_t range, step, stack;  // Record::range, step, stack
  };
  void forget_call(uint32_t correlation);
  std::pmr::unordered_map<uint32_t, CallRef> by_corr_{pool_.get()};
  std::deque<std::pair<uint64_t, uint32_t>> corr_order_;  // (since_ns, correlation)
  // Callback join: device records whose call was not drained yet (it may
  // still be returning), with when they came; retried each pass until
  // hold_ns has passed.
  std::deque<std::pair<uint64_t, DeviceRecord>> retry_;
  bool retrying_now_ = false;
  // Where the event of a call that made device work was written (epoch ns),
  // by record id, for the arrows of its later device records (a graph
  // launch has many); forgotten after hold_ns.
  void note_written(uint64_t id, uint64_t ts_ns);
  std::pmr::unordered_map<uint64_t, uint64_t> written_ts_{pool_.get()};
  std::deque<std::pair<uint64_t, uint64_t>> written_order_;  // (since_ns, id)
  std::map<std::pair<uint32_t, uint32_t>, formats::Event> last_on_stream_;
  std::set<std::pair<uint32_t, uint32_t>> streams_;
  std::set<uint32_t> gpus_;
  std::set<uint32_t> step_threads_;
  std::set<uint32_t> stacks_used_;
  std::vector<bool> stack_seen_;  // by stack id: in stacks_used_ already
  std::pair<uint32_t, uint32_t> last_stream_{UINT32_MAX, UINT32_MAX};  // (device, stream) last put in streams_
  std::unordered_map<uint32_t, std::deque<Cover>> covers_;  // by thread
  std::unordered_map<uint32_t, std::deque<PendingRange>> ranges_;  // by thread, in end order
  uint64_t now_ns_ = 0;
  int64_t first_ns_ = INT64_MAX;
  std::function<void(const DeviceRecord&, const CallOrigin&)> on_device_;
};

}  // namespace nb
