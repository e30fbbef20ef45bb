// NB_STEP: what ends a step in a program that never calls prof.step().
//   kernel:REGEX    each host launch of a kernel whose name matches (POSIX extended regex, searched)
//   nvtx:NAME       each end of an NVTX range with that name
//   sync            each host-blocking synchronize or synchronous device-to-host copy
//   launches:N      every N kernel launches
//   time:DURATION   every DURATION of wall time (ns, us, ms, s; e.g. 500ms, 1.5s)
//   profiler-api    cudaProfilerStart / cudaProfilerStop bound the active part
// Parsing only; the shim decides what matches.
#pragma once
#include <cstdint>
#include <string>

namespace nb {

struct StepMarker {
  enum class Kind : uint8_t { None, Kernel, Nvtx, Sync, Launches, Time, ProfilerApi };
  Kind kind = Kind::None;
  std::string spec;    // as written (NB_STEP's value), for messages
  std::string text;    // the regex (kernel) or the range name (nvtx)
  uint64_t count = 0;  // launches:N
  uint64_t ns = 0;     // time:DURATION
};

// Empty spec: Kind::None. On a bad spec returns false with `error` saying
// what was wrong and what is accepted.
bool parse_step_marker(const std::string& spec, StepMarker& out, std::string& error);

// The marker a run uses: NB_STEP as parsed; with none, `sync` when a
// schedule (NB_ACTIVE) is set, since a schedule counts steps.
StepMarker step_marker_for(const StepMarker& given, bool scheduled);

// "500ms", "1.5s", "250us", "1000ns" → nanoseconds; false if malformed or 0.
bool parse_duration_ns(const std::string& text, uint64_t& ns);

}  // namespace nb
