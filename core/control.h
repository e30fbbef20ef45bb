// What the shim and the collector both touch without calling each other:
// a few atomics, each written on one side and read on the other. One per
// process (g_control); the collector is handed a reference, so that tests
// can give it their own.
#pragma once
#include <atomic>
#include <cstdint>

#include "core/drop_counts.h"

namespace nb {

struct Control {
  // Steps ended so far (NB_STEP): every record carries the value at its
  // call's start; a marker call (shim) or a time step (collector) adds one.
  std::atomic<uint32_t> step{0};
  // NB_TRIGGER=signal. SIGUSR2 sets `arm_request`; the next hooked call arms
  // the shim and leaves the step and tick of arming here, with `armed` set,
  // for the collector to take. Without a schedule, a request that comes
  // while armed ends the window (the collector takes it).
  std::atomic<bool> arm_request{false};
  std::atomic<bool> armed{false};
  std::atomic<uint64_t> arm_step{0};
  std::atomic<uint64_t> arm_tick{0};
  // Calls that came while another thread was starting nb: recorded nowhere,
  // counted as dropped.
  std::atomic<uint64_t> lost_at_start{0};
  // Calls whose record was lost before their thread had a ring (those of
  // lost_at_start, and those of a thread whose ring could not be mapped),
  // by API, for the table's counts.
  DropCounts lost_calls{};
  // A terminating signal (SIGINT, SIGTERM, SIGHUP) the collector is to act
  // on: write the files, then let the process die of it. 0 = none.
  std::atomic<int> exit_signal{0};
  // Ticks when the program ended (main returned, exit was called, or its
  // Python interpreter began finalizing), 0 while it runs: what is freed
  // after it is teardown, and the snapshot shows the state at that moment.
  std::atomic<uint64_t> program_end{0};
};

extern Control g_control;

}  // namespace nb
