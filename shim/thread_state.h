// Per-thread state of the shim: the thread's ring and the re-entry guard.
// Plain __thread data with the initial-exec model: a preloaded library has
// static TLS, so each access is one %fs-relative load, no function call.
#pragma once
#include <cstdint>

#include "core/drop_counts.h"
#include "core/record.h"
#include "core/thread_registry.h"

namespace nb::shim {

enum class Level : uint8_t { Driver, Runtime };

struct ThreadState {
  ThreadSlot* slot;    // this thread's ring, null until its first record
  uint32_t tid;
  uint32_t seq;        // low half of record ids
  uint16_t depth;      // > 0 while inside a hook (re-entry guard)
  Level outer_level;   // level of the outermost hook on this thread
  uint8_t stack_clock; // untimed stacks before the next timed one (stack_capture.cpp)
  bool internal;       // the shim's own threads: never record
  bool lost;           // the last register_thread failed and counted the call as dropped
  Record* outer;       // record of the outermost hook (inner driver calls annotate it)
  uint32_t corr_first; // CUPTI correlation ids handed out during the outermost
  uint32_t corr_last;  // hook's call (device_tracing.cpp, join mode "callback")
  DroppedCall dropped; // the outermost hook's call, when its record was dropped (hook_scope.h)
  uint32_t range;      // the innermost recorded NVTX range open here (Record::range), 0 = none
};

extern __thread ThreadState t_state __attribute__((tls_model("initial-exec")));

// Slow path of the first record on a thread: start the shim if needed, get a
// ring, arrange for it to be released at thread exit. False = cannot record;
// `t.lost` then says whether the call is counted as dropped (nb was being
// started by another thread for too long, or no ring could be mapped) or is
// simply not recorded (nb off or stopping).
bool register_thread(ThreadState& t);

}  // namespace nb::shim
