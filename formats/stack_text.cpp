#include "formats/stack_text.h"

namespace nb::formats {
namespace {

bool is_python(const Frame& f) {
  const std::string& n = f.filename;
  return n.size() > 3 && n.compare(n.size() - 3, 3, ".py") == 0;
}

}  // namespace

std::string trace_stack_text(const Stack& stack) {
  bool python = false;
  for (const Frame& f : stack) python |= is_python(f);
  std::string text;
  size_t shown = 0, left = 0;
  for (const Frame& f : stack) {
    if (python && !is_python(f)) continue;
    if (shown == kTraceStackFrames) {
      ++left;
      continue;
    }
    if (!text.empty()) text += '\n';
    text += f.name + " (" + f.filename + (f.line > 0 ? ":" + std::to_string(f.line) : "") + ")";
    ++shown;
  }
  if (left > 0) text += "\n\u2026 " + std::to_string(left) + " more";
  return text;
}

}  // namespace nb::formats
