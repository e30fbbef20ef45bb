// The collector thread: drains every thread's ring every few milliseconds
// into the Session, and when recording ends (at exit) drains the rest and
// writes the outputs. The only thread that does I/O for the shim. It is the
// shim's Recorder (core/recorder.h).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <mutex>
#include <thread>
#include <vector>

#include "collector/device_tracer.h"
#include "core/name_table.h"
#include "core/recorder.h"
#include "collector/order_join.h"
#include "collector/output.h"
#include "collector/phase_times.h"
#include "collector/schedule.h"
#include "collector/session.h"
#include "collector/stack_cost.h"
#include "collector/stack_table.h"
#include "collector/trace_file.h"
#include "collector/trace_stream.h"
#include "core/thread_registry.h"

namespace nb {

class Collector final : public Recorder {
 public:
  Collector(const RecorderSetup& setup, Host& host);

  bool start_device(std::string& why) override;
  const CuptiApi* cupti() const override { return tracer_ ? &tracer_->api() : nullptr; }
  // Spawns the thread (all signals blocked in it, so the program's handlers
  // keep running on the program's threads). Returns false if it could not.
  bool start() override;
  // Safe if start() never ran.
  void finish() override { finish_tagged(""); }
  void finish_tagged(const std::string& tag) override;
  void resume_device() override;
  void hand_over_device() override;
  void before_fork() override;
  void after_fork() override;

  // One pass over all rings (the thread's loop body; tests call it).
  size_t drain_once();
  uint64_t dropped() const;
  const Session& session() const { return *session_; }

 private:
  void run();
  size_t drain_rings();  // every thread's ring, records routed
  void keep_rings_ahead();  // each owned ring's next pages made resident (the collector thread's passes)
  // CUPTI's records so far. NoWait: a window's deadline (the order join
  // stops waiting for missing ids); Final: the last take (after the device
  // was synchronized and CUPTI flushed), nothing waits any longer.
  // At most `max` of the records CUPTI handed over (a pass takes a piece, so
  // that it comes back to the rings soon: they fill in milliseconds).
  void take_device_records(OrderJoin::Pass pass = OrderJoin::Pass::Normal, size_t max = SIZE_MAX);
  uint64_t memory_horizon() const;
  uint32_t intern_stack(FrameRing& frames, uint32_t tagged);
  // The dropped-call counters of every slot and the process-wide ones,
  // summed into the run's totals (and a window's) when they have moved.
  void take_drop_counts();

  // Windows (windows.cpp). Records go to the window their step belongs to;
  // memory records also to the run-long feed.
  // One recording's outputs in the making: its event names, its trace
  // streaming to disk, its Session (which feeds the trace).
  struct Recording {
    std::unique_ptr<TraceNames> names;
    std::unique_ptr<TraceStream> trace;
    std::unique_ptr<Session> session;
  };
  Recording make_recording(std::shared_ptr<MemoryFeed> shared);
  struct Window {
    Recording rec;
    Session* session = nullptr;  // rec.session
    uint64_t first_active = 0;   // absolute number of its first active step
    uint64_t active = 0;         // steps it should get
    uint64_t end_tick = 0;       // end of its last step, once complete
    uint64_t host_work = 0;      // calls routed here that make device work
    uint64_t device_got = 0;     // device records routed here
    // Calls whose record was dropped while the window recorded, by ApiId
    // (take_drop_counts says how they are placed).
    std::vector<uint64_t> dropped_calls, dropped_errors;
    bool complete = false;
    std::chrono::steady_clock::time_point close_at{};
  };
  void route(const Record& r);
  void route(const DeviceRecord& d, bool last_try);
  // Join mode "order": host calls that make device work go to the join
  // (window 0: outside every window); what it joins is delivered.
  void note_for_join(const Record& r, uint64_t window);
  void deliver(const DeviceRecord& d, const OrderJoin::Link& link);
  StepPlan plan(uint64_t step) const;  // absolute step → window (relative to arming)
  Window& window(uint64_t n, uint64_t rel_step);
  void note_step_end(uint64_t step, uint64_t tick, uint32_t tid);
  void route_point(const MemoryPoint& p);  // windows: a memory curve point to its window
  void check_arming();     // each pass, first: armed by a signal?
  void service_windows();  // each pass, last: time steps, disarming, windows due
  void close_window(uint64_t n, bool at_exit);
  // Whether no work that a window records can be running on the device now
  // (a forced CUPTI flush then loses none of it).
  bool nothing_recorded_running(bool ends_arming) const;
  std::vector<OutputContext::StepSpan> step_spans(uint64_t first, uint64_t count, uint64_t fallback_start) const;
  // `phases`: the exit's timing so far (NB_LOG=debug says it), or none.
  void write(Recording& rec, OutputContext ctx, PhaseTimes* phases = nullptr);
  OutputContext current_context();
  void write_census(const OutputContext& ctx);  // NB_CENSUS: <prefix>.steps.txt
  void note_for_census(const Record& r);
  uint64_t memory_limit() const;
  // Recorded calls that made device work still without their device record
  // (the whole run's, or any window's).
  bool device_records_pending() const;
  // NB_STEP as the user reads it in messages ("sync" when not given).
  std::string step_text() const { return options_.step.spec.empty() ? "sync" : options_.step.spec; }

  bool windowed_ = false;      // else the whole run is one window (session_), plain file names
  bool capture_range_ = false; // NB_STEP=profiler-api
  bool toggle_ = false;        // NB_TRIGGER=signal without a schedule
  Schedule schedule_;
  uint64_t time_step_ns_ = 0;  // NB_STEP=time:D
  uint64_t next_time_step_ns_ = 0;
  std::shared_ptr<MemoryFeed> feed_;
  std::map<uint64_t, Window> windows_;
  struct StepEnd {
    uint64_t tick;
    uint32_t tid;
  };
  std::map<uint64_t, StepEnd> step_ends_;  // absolute step → where and when it ended
  uint64_t step_ends_dropped_ = 0;
  uint64_t steps_ended_ = 0;
  std::unordered_map<uint32_t, uint64_t> corr_window_;  // CUPTI correlation id → window
  bool armed_ = true;
  uint64_t arm_step_ = 0;
  uint64_t arm_tick_ = 0;
  uint64_t window_base_ = 0;   // numbers used by earlier armings
  uint64_t arming_base_ = 0;   // window_base_ of the current arming
  uint64_t last_written_ = 0;  // windows are written in order
  uint64_t late_records_ = 0;  // arrived after their window was written
  uint64_t late_device_ = 0;
  uint64_t unjoined_in_windows_ = 0;
  uint64_t host_work_ = 0;   // without windows: recorded calls that make device work
  uint64_t device_got_ = 0;  // ... and the device records routed to them  // order join: device records joined to no call, so in no window
  std::vector<DeviceRecord> retry_device_;  // no window known yet: tried again after the next drain
  std::map<uint32_t, std::string> thread_names_;  // for the windows' thread names

  const Settings& settings_;
  const Options& options_;
  ThreadRegistry& registry_;
  NameTable& names_;
  Control& control_;
  Host& host_;
  OutputContext context_;
  DeviceTracer* tracer_ = nullptr;  // device time, once start_device succeeded
  DeviceTracer* tracer_kept_ = nullptr;  // what start_device made; never destroyed: CUPTI may call it late
  std::chrono::steady_clock::time_point last_flush_{};
  TraceWriter writer_;  // compresses every recording's trace, on a thread of its own
  Recording main_;      // the whole run's (without windows)
  Session* session_ = nullptr;  // main_.session
  // NB_CENSUS: launches and NVTX range ends, for `nbprof steps`.
  struct CensusRecord {
    uint32_t name;
    bool nvtx;
    uint32_t tid;
    uint64_t tick;
  };
  std::vector<CensusRecord> census_;
  StackTable stacks_;
  uint64_t frames_drained_ = 0;  // stack frames the current pass consumed (collector thread)
  StackCost stack_cost_;  // what the stacks interned so far cost their threads

  ClockAnchor start_anchor_;  // with the one taken at finish: ticks → epoch
  // Join mode "order": ticks → monotonic ns meanwhile, fitted once a pass;
  // when the rings were last drained (monotonic ns).
  bool order_join_on_ = false;
  TimeMap pass_map_;
  uint64_t drained_ns_ = 0;
  uint64_t in_call_ns_ = UINT64_MAX;  // earliest start of a device-work call in flight at that drain
  bool device_behind_ = false;              // device records left for the next pass
  std::vector<DeviceRecord> device_piece_;  // what a pass took from the tracer
  uint64_t drain_ticks_ = 0;             // when the last drain began
  uint64_t memory_in_call_ = UINT64_MAX; // earliest start (ticks) of a memory call in flight then
  OrderJoin order_join_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t failed_passes_ = 0;  // drain passes that ran out of memory
  std::mutex pass_mu_;          // held by a drain pass; a fork waits for it
  bool pass_locked_for_fork_ = false;
  uint64_t base_ns_ = 0;        // traces' baseTimeNanoseconds: a whole second before nb began
  // Flight recorder (NB_KEEP; collector.cpp, keep_pass).
  void keep_pass(uint64_t now_ns);
  void keep_context(OutputContext& ctx, uint64_t now_ns) const;
  void dump(uint64_t now_ns);  // SIGUSR2: <prefix>.d<N>.*, recording goes on
  uint64_t keep_ns_ = 0;       // 0: the whole run is kept
  uint64_t slice_ns_ = 0;
  size_t table_slices_ = 0, trace_slices_ = 0;
  uint64_t slice_began_ns_ = 0;
  uint64_t dumps_ = 0;
  // Calls whose record was dropped, run so far, by ApiId; NVTX ranges
  // dropped; the sum of the counters' change marks when last summed.
  std::vector<uint64_t> dropped_calls_ = std::vector<uint64_t>(kApiCount);
  std::vector<uint64_t> dropped_errors_ = std::vector<uint64_t>(kApiCount);
  uint64_t dropped_ranges_ = 0;
  uint64_t drop_changes_ = 0;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace nb
