#include "core/step_marker.h"

#include "core/kernel_regex.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace nb {

namespace {
constexpr const char* kForms =
    "kernel:REGEX, nvtx:NAME, sync, launches:N, time:DURATION (e.g. 500ms, 2s) or profiler-api";

bool starts_with(const std::string& s, const char* prefix, std::string& rest) {
  const std::string p(prefix);
  if (s.compare(0, p.size(), p) != 0) return false;
  rest = s.substr(p.size());
  return true;
}
}  // namespace

bool parse_duration_ns(const std::string& text, uint64_t& ns) {
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return false;
  const std::string number = text.substr(0, digits), unit = text.substr(digits);
  if (number.find('.') != number.rfind('.')) return false;  // two dots
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return false;
  const double value = std::strtod(number.c_str(), nullptr) * scale;
  if (!(value >= 1) || value > 1e18) return false;
  ns = static_cast<uint64_t>(std::llround(value));
  return true;
}

bool parse_step_marker(const std::string& spec, StepMarker& out, std::string& error) {
  out = StepMarker{};
  out.spec = spec;
  std::string rest;
  if (spec.empty()) return true;
  if (spec == "sync") {
    out.kind = StepMarker::Kind::Sync;
    return true;
  }
  if (spec == "profiler-api") {
    out.kind = StepMarker::Kind::ProfilerApi;
    return true;
  }
  if (starts_with(spec, "kernel:", rest)) {
    if (rest.empty()) {
      error = "NB_STEP=kernel: needs a regular expression after the colon";
      return false;
    }
    KernelRegex check;
    std::string why;
    if (!check.compile(rest, why)) {
      error = "NB_STEP=" + spec + ": not a valid POSIX extended regular expression (" + why + ")";
      return false;
    }
    out.kind = StepMarker::Kind::Kernel;
    out.text = rest;
    return true;
  }
  if (starts_with(spec, "nvtx:", rest)) {
    if (rest.empty()) {
      error = "NB_STEP=nvtx: needs the NVTX range's name after the colon";
      return false;
    }
    out.kind = StepMarker::Kind::Nvtx;
    out.text = rest;
    return true;
  }
  if (starts_with(spec, "launches:", rest)) {
    // Digits only: strtoull alone would take " -5" as 2^64 - 5 and clamp
    // overflow to 2^64 - 1. Nineteen digits always fit in 64 bits.
    const bool digits = !rest.empty() && rest.size() <= 19 && rest.find_first_not_of("0123456789") == std::string::npos;
    const unsigned long long n = digits ? std::strtoull(rest.c_str(), nullptr, 10) : 0;
    if (n == 0) {
      error = "NB_STEP=" + spec + ": launches:N needs a whole number N >= 1";
      return false;
    }
    out.kind = StepMarker::Kind::Launches;
    out.count = n;
    return true;
  }
  if (starts_with(spec, "time:", rest)) {
    if (!parse_duration_ns(rest, out.ns)) {
      error = "NB_STEP=" + spec + ": time:DURATION needs a positive number with ns, us, ms or s (e.g. 500ms)";
      return false;
    }
    out.kind = StepMarker::Kind::Time;
    return true;
  }
  error = "NB_STEP=" + spec + ": not a step marker; accepted: " + kForms;
  return false;
}

StepMarker step_marker_for(const StepMarker& given, bool scheduled) {
  if (given.kind != StepMarker::Kind::None || !scheduled) return given;
  StepMarker sync;
  sync.kind = StepMarker::Kind::Sync;
  sync.spec = "sync";
  return sync;
}

}  // namespace nb
