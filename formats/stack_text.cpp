#include "formats/stack_text.h"

namespace nb::formats {
namespace {

bool is_python(const Frame& f) {
  const std::string& n = f.filename;
  return n.size() > 3 && n.compare(n.size() - 3, 3, ".py") == 0;
}

}  // namespace

std::vector<std::string> trace_stack_lines(const Stack& stack) {
  bool python = false;
  for (const Frame& f : stack) python |= is_python(f);
  std::vector<std::string> lines;
  size_t left = 0;
  for (const Frame& f : stack) {
    if (python && !is_python(f)) continue;
    if (lines.size() == kTraceStackFrames) {
      ++left;
      continue;
    }
    lines.push_back(f.name + " (" + f.filename + (f.line > 0 ? ":" + std::to_string(f.line) : "") + ")");
  }
  if (left > 0) lines.push_back("\u2026 " + std::to_string(left) + " more");
  return lines;
}

std::string trace_stack_text(const Stack& stack) {
  std::string text;
  for (const std::string& line : trace_stack_lines(stack)) {
    if (!text.empty()) text += '\n';
    text += line;
  }
  return text;
}

}  // namespace nb::formats
