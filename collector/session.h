// What one recording accumulates from the drained records: per-API
// statistics for the table, the memory history, the names of the threads
// seen, and its timeline, built as the records come (trace_builder.h) and
// handed to a sink (the trace file) rather than kept. No threads, no I/O:
// the collector feeds it, output.cpp reads it, tests drive it directly.
#pragma once
#include <cstdint>
#include <array>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/device_record.h"
#include "collector/memory_tracker.h"
#include "collector/trace_builder.h"
#include "core/record.h"
#include "core/api.h"

namespace nb {

struct ApiStats {  // durations in ticks
  uint64_t calls = 0;
  uint64_t total = 0;
  uint64_t min = UINT64_MAX;
  uint64_t max = 0;
  uint64_t errors = 0;
};

struct DeviceStats {  // durations in ns
  DeviceKind kind = DeviceKind::Kernel;
  uint64_t calls = 0;
  uint64_t total = 0;
  uint64_t min = UINT64_MAX;
  uint64_t max = 0;
};

// Memory records reach the tracker in time order, not in the order the
// rings were drained (a free on one thread and the allocation that reuses
// its address on another can sit in two rings): they wait here and are
// applied, sorted, once older than a horizon (ticks), or all at the end.
// One feed spans the whole run, across recording windows: a window's
// snapshot needs the allocations made before it began.
class MemoryFeed {
 public:
  explicit MemoryFeed(size_t max_entries) : memory_(max_entries) {}
  void consume(const Record& r);  // memory kinds only; others are ignored
  void apply(uint64_t horizon);
  void apply_all() { apply(UINT64_MAX); }
  bool pending() const { return !pending_memory_.empty() || in_order_head_ < in_order_.size(); }
  const MemoryTracker& tracker() const { return memory_; }
  void forget_before(uint64_t ticks) { memory_.forget_before(ticks); }
  void on_point(std::function<void(const MemoryPoint&)> f) { memory_.on_point(std::move(f)); }

 private:
  MemoryTracker memory_;
  // A min-heap on (effect time, arrival): a pass costs O(log n) per record,
  // not a sort of everything still waiting (a burst of frees behind a
  // memory call still in flight can be 100,000 records).
  // The heap holds small keys; the records stay put in `pending_slots_`
  // (slots are reused through a free list), so nothing 128 bytes long is
  // moved while the heap is kept.
  struct PendingKey {
    uint64_t time;
    uint64_t arrival;
    uint32_t slot;
    bool operator>(const PendingKey& o) const { return time != o.time ? time > o.time : arrival > o.arrival; }
  };
  std::vector<PendingKey> pending_memory_;
  // Keys that came in order (each after the last one here): most of them,
  // from one thread. They skip the heap; apply() takes the smaller front.
  // Taken from in_order_head_ on; the taken ones are dropped when all are.
  std::vector<PendingKey> in_order_;
  size_t in_order_head_ = 0;
  std::deque<Record> pending_slots_;  // never copied whole to grow
  std::vector<uint32_t> free_slots_;
  uint64_t memory_arrivals_ = 0;
};


// What the table counts, over some span of records.
// A region of the program: an NVTX range (by its path, Record::range) or
// nb's steps. Host time in ticks (the ranges' own spans), device time in ns
// of the work launched directly in it (not in a range inside it).
struct RegionStats {
  uint64_t calls = 0;
  uint64_t host = 0;
  uint64_t device_self = 0;
  void add(const RegionStats& o) {
    calls += o.calls;
    host += o.host;
    device_self += o.device_self;
  }
};

// Distinct regions a tally keeps; the rest are one row, kOtherRegions.
constexpr size_t kMaxRegions = 4096;
constexpr uint32_t kOtherRegions = UINT32_MAX;

struct Tally {
  std::array<ApiStats, kApiCount> api{};  // by ApiId
  std::unordered_map<uint32_t, DeviceStats> device;  // by the record's name id
  std::unordered_map<uint32_t, RegionStats> regions;  // by range path (name id)
  RegionStats steps;  // ProfilerStep: the steps' spans and the work launched in them
  // For the flame graphs: device ns by (the launch's stack << 32 | the
  // work's name id), stack 0 = none or not joined; host ticks of calls
  // with a stack by (stack << 32 | ApiId).
  struct StackTime {
    uint64_t time = 0, calls = 0;
  };
  std::unordered_map<uint64_t, StackTime> device_by_stack, host_by_stack;
  uint64_t consumed = 0, device_consumed = 0;
  uint64_t first = UINT64_MAX, last = 0;  // earliest start, latest end of the calls (ticks)
  uint64_t since_ns = 0;                  // monotonic, when its first record came (slices)
  void add(const Tally& o);
};

struct SessionLimits {
  size_t mem_max_entries = 1000000;
  // Sum device and host time by the call's stack (the folded files and
  // the source table, with launch stacks): off, the collector does none of it.
  bool by_stack = false;
};

// What a recording keeps for "nbRun" (chrome_trace.h), up to a bound: a run
// with more steps or memory changes than this leaves them to the events.
struct RunLog {
  static constexpr size_t kMaxPoints = size_t(1) << 16;
  static constexpr size_t kMaxSteps = size_t(1) << 16;
  std::vector<MemoryPoint> points;
  bool points_complete = true;
  struct Step {
    uint64_t number, start, end;  // ticks
    uint32_t tid;
  };
  std::vector<Step> steps;
  bool steps_complete = true;
};

class Session {
 public:
  // `sink` receives the timeline's events as records come (null: none are
  // built, as in tests of the statistics). With its own memory feed (the
  // whole run is one recording), or sharing the collector's, which then
  // feeds it memory records and points itself.
  // `names`: the event names the sink reads too (null: its own, without
  // kernel names).
  explicit Session(const SessionLimits& limits, EventSink* sink = nullptr, const TraceSetup& setup = {},
                   TraceNames* names = nullptr, std::shared_ptr<MemoryFeed> shared = nullptr);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void consume(const Record& r);
  // Device work, with the call it was joined to (join mode "order") or none.
  void consume(const DeviceRecord& d, const CorrelationLink* link = nullptr);
  void step(uint64_t number, uint64_t start, uint64_t end, uint32_t tid);
  void memory_point(const MemoryPoint& p);
  void apply_memory(uint64_t horizon) { feed_->apply(horizon); }
  void apply_all_memory() { feed_->apply_all(); }
  // A flight recorder forgets memory history, steps and curve points older
  // than `ticks` (the live allocations stay).
  void forget_before(uint64_t ticks);
  bool memory_pending() const { return feed_->pending(); }
  void note_thread(uint32_t tid, const char* name);
  // The tick → time map of now, and monotonic now: each pass.
  void advance(const TimeMap& time, uint64_t now_ns);
  // The end of the recording: what the timeline still holds goes out.
  void finish_timeline();

  // A flight recorder (NB_KEEP) keeps its statistics in slices and drops
  // the oldest, as its trace does: cut_slice() starts a new one and keeps
  // the newest `keep` (the current one included). The accessors below then
  // sum the kept slices.
  void cut_slice(size_t keep, uint64_t now_ns);
  // When the oldest kept slice began (monotonic ns; 0 without slices).
  uint64_t kept_since_ns() const { return slices_.empty() ? 0 : slices_.front().since_ns; }
  // Every call of the run, kept or not.
  uint64_t run_consumed() const { return run_consumed_; }

  // Indexed by ApiId; calls == 0 for APIs never called.
  const std::array<ApiStats, kApiCount>& api_stats() const { return tally().api; }
  const MemoryTracker& memory() const { return feed_->tracker(); }
  // Indexed by the record's name id.
  const std::unordered_map<uint32_t, DeviceStats>& device_stats() const { return tally().device; }
  // By range path (a NameTable id whose text is the path, kRangePathSep).
  const std::unordered_map<uint32_t, RegionStats>& region_stats() const { return tally().regions; }
  const RegionStats& step_stats() const { return tally().steps; }
  const std::unordered_map<uint64_t, Tally::StackTime>& device_by_stack() const { return tally().device_by_stack; }
  const std::unordered_map<uint64_t, Tally::StackTime>& host_by_stack() const { return tally().host_by_stack; }
  uint64_t device_consumed() const { return tally().device_consumed; }
  const std::map<uint32_t, std::string>& threads() const { return threads_; }
  uint64_t consumed() const { return tally().consumed; }
  // Earliest start and latest end of the calls, in ticks.
  uint64_t first() const { return tally().first; }
  uint64_t last() const { return tally().last; }
  void set_device(bool traced, CuptiJoin mode, bool handed_over) {
    if (builder_) builder_->set_device(traced, mode, handed_over);
  }
  const TraceBuilder* timeline() const { return builder_.get(); }
  TraceBuilder* timeline() { return builder_.get(); }
  const RunLog& run_log() const { return run_; }

 private:
  const Tally& tally() const;
  SessionLimits limits_;
  Tally cur_;                  // the whole run, or the current slice
  std::deque<Tally> slices_;   // with slices: the older kept ones, oldest first
  mutable Tally sum_;          // their sum with cur_, made when asked
  mutable bool sum_valid_ = false;
  uint64_t run_consumed_ = 0;
  bool own_feed_;
  std::shared_ptr<MemoryFeed> feed_;
  std::unique_ptr<TraceNames> own_names_;
  std::unique_ptr<TraceBuilder> builder_;
  RunLog run_;
  std::map<uint32_t, std::string> threads_;
  // Device time of work whose call began in a step not ended yet, by step:
  // it counts as the steps' once that step ends.
  void placed(const DeviceRecord& d, const CallOrigin& o);
  uint64_t steps_ended_ = 0;  // steps 0 .. steps_ended_ - 1 have ended
  std::map<uint32_t, uint64_t> step_device_waiting_;
};

}  // namespace nb
