// A stack as the short text a trace event carries (the `stack` argument that
// Perfetto shows with the event). Short on purpose: every traced call has
// one, so a generate() run's 160,000 allocations and frees with full
// 70-frame stacks made a 500 MB trace; the memory snapshot keeps the full
// stacks. Perfetto reads no shared stack table from JSON, so the text is it.
#pragma once

#include <string>

#include "formats/snapshot_model.h"

namespace nb::formats {

// At most kTraceStackFrames lines, innermost first, "name (file:line)". With
// Python frames in the stack, only those (the native frames under them are
// the interpreter and the framework); otherwise the native ones. A last line
// "… N more" says how many were left out.
inline constexpr size_t kTraceStackFrames = 8;
std::string trace_stack_text(const Stack& stack);

}  // namespace nb::formats
