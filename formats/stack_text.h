// A stack as a trace shows it: the frames a reader of a timeline wants (the
// memory snapshot keeps every frame). Each distinct stack is written once
// per trace (chrome_trace.h), so the bound is for readability, not size.
#pragma once

#include <string>
#include <vector>

#include "formats/snapshot_model.h"

namespace nb::formats {

// At most kTraceStackFrames lines, innermost first, "name (file:line)". With
// Python frames in the stack, only those (the native frames under them are
// the interpreter and the framework); otherwise the native ones. A last line
// "… N more" says how many were left out.
inline constexpr size_t kTraceStackFrames = 32;
std::vector<std::string> trace_stack_lines(const Stack& stack);
std::string trace_stack_text(const Stack& stack);  // the lines, joined by newlines

}  // namespace nb::formats
