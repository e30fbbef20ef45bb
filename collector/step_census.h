// `nbprof steps`: which kernel or NVTX range should be NB_STEP? Given every
// kernel launch and NVTX range end of one run, finds the names that recur the
// way an iteration does (a steady interval, a moderate count) and prints a
// ranked table with the NB_STEP value to use for each. Pure: the shim records
// the events and nbprof prints the text. `sync` leaves no event here, so it
// is only ever offered as the fallback.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nb {

struct CensusEvent {
  std::string name;   // the kernel's name as NB_STEP=kernel: matches it, or the NVTX range's
  bool nvtx = false;  // true: an NVTX range ended; false: a kernel was launched
  uint64_t ns = 0;    // host time
  uint32_t tid = 0;   // host thread (only counted: steps are counted process-wide)
};

// The table, best candidate first (max_rows rows; 0 = all), then one line
// "suggested: NB_STEP='...'". Every kernel regex offered has been checked
// as the shim matches it (POSIX extended, core/kernel_regex.h) to match its kernel and no other
// kernel name in `events`.
std::string step_census(const std::vector<CensusEvent>& events, size_t max_rows);

}  // namespace nb
