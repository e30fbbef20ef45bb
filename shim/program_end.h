// The program's end: when its main returns or it calls exit (before the
// atexit handlers and destructors that follow), or, for a Python program,
// when its interpreter begins finalizing (its main module has finished; the
// teardown that frees its objects comes after). Memory calls after it are
// teardown (record_flag::kTeardown), and the snapshot shows the state at it.
#pragma once
#include "core/control.h"

namespace nb::shim {

// Sets g_control.program_end, once (main returned, exit called).
void mark_program_end();

// Out of line: whether a Python interpreter in this process is finalizing
// (marking the end if so).
bool python_finalizing_now();

inline bool program_ended() {
  if (__builtin_expect(g_control.program_end.load(std::memory_order_relaxed) != 0, 0)) return true;
  return python_finalizing_now();
}

}  // namespace nb::shim
