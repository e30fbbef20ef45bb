// The collector thread: drains every thread's ring every few milliseconds
// into the Session, and when recording ends (at exit) drains the rest and
// writes the outputs. The only thread that does I/O for the shim.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "collector/device_tracer.h"
#include "collector/name_table.h"
#include "collector/options.h"
#include "collector/output.h"
#include "collector/session.h"
#include "collector/stack_table.h"
#include "collector/thread_registry.h"

namespace nb {

// What the collector needs from the CUDA side at the end of recording.
struct CollectorHooks {
  std::function<bool()> synchronize;  // wait for the device before the final flush; false: timed out
  std::function<std::vector<formats::DeviceProperties>()> devices;
  std::function<uint64_t()> extra_dropped;  // records the shim lost before they reached a ring
  StackSources stacks;                      // naming the frames of NB_STACKS
  // A terminating signal the program left at its default action arrived
  // (0 = none): polled every pass; the collector thread then stops and
  // calls on_signal, which writes the outputs and ends the process.
  std::function<int()> pending_signal;
  std::function<void(int)> on_signal;
};

class Collector {
 public:
  // `tracer` may be null or not running (no device time).
  Collector(const Options& options, ThreadRegistry& registry, NameTable& names,
            OutputContext context, DeviceTracer* tracer = nullptr, CollectorHooks hooks = {});

  // Spawns the thread (all signals blocked in it, so the program's handlers
  // keep running on the program's threads). Returns false if it could not.
  bool start(std::function<void()> on_thread_start = {});
  // Stops the thread, drains what is left, writes the files, prints the table
  // and where the files are. Idempotent; safe if start() never ran.
  void finish();

  // One pass over all rings (the thread's loop body; tests call it).
  size_t drain_once();
  uint64_t dropped() const;
  const Session& session() const { return session_; }

 private:
  void run();
  void take_device_records();
  uint64_t memory_horizon() const;
  uint32_t intern_stack(FrameRing& frames, uint32_t tagged);

  const Options options_;
  ThreadRegistry& registry_;
  NameTable& names_;
  OutputContext context_;
  DeviceTracer* tracer_;
  CollectorHooks hooks_;
  std::chrono::steady_clock::time_point last_flush_{};
  Session session_;
  StackTable stacks_;

  ClockAnchor start_anchor_;  // with the one taken at finish: ticks → epoch
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t failed_passes_ = 0;  // drain passes that ran out of memory
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace nb
