// Where an unmodified program's steps end (NB_STEP), seen from the hooks.
//
// Every record carries the number of steps ended so far (`Record::step`,
// read when the call begins); the call that ends a step gets
// record_flag::kStepEnd. The collector turns steps into windows
// (collector/schedule.h) and ProfilerStep spans. Here only counting: a
// relaxed load per record, and for marker calls one atomic increment.
#pragma once
#include <atomic>
#include <cstdint>

#include "core/control.h"
#include "core/record.h"
#include "core/step_marker.h"

namespace nb::shim {

// StepMarker::Kind of NB_STEP (None: no marker; the hot path tests this first).
extern StepMarker::Kind g_step_kind;

// Once, at start-up, with the parsed NB_STEP (kind None: no markers).
void init_steps(const StepMarker& marker);

// After a recorded call's record is filled: does it end a step?
void after_call_slow(Record& r);
inline void after_call(Record& r) {
  if (__builtin_expect(g_step_kind == StepMarker::Kind::None, 1)) return;
  after_call_slow(r);
}

// An NVTX range named `name_id` (NameTable) ended: whether it ends a step.
bool nvtx_ends_step(uint32_t name_id);

// Marks `r` as the end of a step and starts the next. The step it ended is
// the one current now, which another thread may have moved on since `r`
// began: the record takes the number it really ended.
inline void end_step(Record& r) {
  r.flags |= record_flag::kStepEnd;
  r.step = g_control.step.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace nb::shim
