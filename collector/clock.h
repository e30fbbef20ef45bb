// The one process-wide clock: CLOCK_MONOTONIC in nanoseconds, read through
// the vDSO (no system call). Device timestamps are put on the same clock.
#pragma once
#include <cstdint>
#include <ctime>

namespace nb {

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Offset that turns now_ns() into nanoseconds since the Unix epoch, measured
// once (the outputs need epoch times: baseTimeNanoseconds, time_us).
int64_t monotonic_to_epoch_offset_ns();

}  // namespace nb
