// Stacks on the hot path (NB_STACKS): which calls get one, and the capture
// into the thread's FrameRing.
#pragma once
#include <cstdint>
#include <string>

#include "core/options.h"
#include "core/record.h"
#include "shim/thread_state.h"

namespace nb::shim {

// Bit (1 << Kind) set for each kind of call that gets a stack; 0 = none.
extern uint32_t g_stack_kinds;

// Reads NB_STACKS / NB_STACK_DEPTH / NB_UNWIND, loads libunwind. Once, at start-up,
// outside any hook. Returns the FrameRing capacity each thread needs (0 when
// no stacks are taken); `note` says what was given up, if anything.
uint32_t init_stacks(StackKinds which, uint32_t depth, Unwinder unwinder, std::string& note);

// Out of line: only called for the kinds in g_stack_kinds.
void capture_stack(ThreadState& t, Record* r);

inline bool wants_stack(Kind k) { return (g_stack_kinds >> static_cast<unsigned>(k)) & 1u; }

}  // namespace nb::shim
