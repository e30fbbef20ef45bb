// formats/stack_text.h: fields (split at the first byte) in threes are a
// frame's file name, line and function name. trace_stack_text must give what
// its comment promises: with any ".py" frame only those, else all; at most
// kTraceStackFrames "name (file:line)" lines, innermost first, then
// "… N more" counting exactly the frames left out.
#include "formats/stack_text.h"
#include "fuzz/fuzz_support.h"

using namespace nb::formats;
using nbfuzz::shown;

namespace {

bool is_python(const Frame& f) {
  return f.filename.size() > 3 && f.filename.compare(f.filename.size() - 3, 3, ".py") == 0;
}

std::string reference(const Stack& stack) {
  bool python = false;
  for (const Frame& f : stack) python = python || is_python(f);
  std::vector<std::string> lines;
  size_t eligible = 0;
  for (const Frame& f : stack) {
    if (python && !is_python(f)) continue;
    if (++eligible > kTraceStackFrames) continue;
    lines.push_back(f.name + " (" + f.filename + (f.line > 0 ? ":" + std::to_string(f.line) : std::string()) + ")");
  }
  if (eligible > kTraceStackFrames) {
    lines.push_back("\xE2\x80\xA6 " + std::to_string(eligible - kTraceStackFrames) + " more");
  }
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) out += (k ? "\n" : "") + lines[k];
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> f = nbfuzz::split_fields(data, size);
  Stack stack;
  for (size_t i = 0; i < f.size(); i += 3) {
    stack.push_back({f[i], i + 1 < f.size() ? nbfuzz::number_s64(f[i + 1]) : 0, i + 2 < f.size() ? f[i + 2] : ""});
  }
  const std::string got = trace_stack_text(stack), want = reference(stack);
  NB_FUZZ_CHECK(got == want, "got " + shown(got, 400) + "\nwant " + shown(want, 400));
  bool valid = true;
  for (const std::string& field : f) valid = valid && nbfuzz::ref_valid_utf8(field);
  if (valid) {
    NB_FUZZ_CHECK(nbfuzz::ref_valid_utf8(got), "valid names gave invalid UTF-8: " + shown(got));
  }
  return 0;
}
