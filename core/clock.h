// The one process-wide clock of host records. A hook reads it twice per
// call, so it must be cheap: where the CPU's time-stamp counter is invariant
// and the kernel itself trusts it (clocksource "tsc"), records hold raw TSC
// ticks (one rdtsc, about half the cost of clock_gettime through the vDSO);
// elsewhere they hold CLOCK_MONOTONIC nanoseconds. The collector turns ticks
// into epoch nanoseconds with a TimeMap fitted between two anchors taken at
// the start and at the end of recording, so no record pays for conversion.
#pragma once
#include <cstdint>
#include <ctime>

namespace nb {

// Chosen once, before the first record (choose_tick_source), never changed.
extern bool g_ticks_are_tsc;

inline uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t now_ticks() {
#if defined(__x86_64__)
  if (g_ticks_are_tsc) return __builtin_ia32_rdtsc();
#endif
  return monotonic_ns();
}

// Decides g_ticks_are_tsc from /proc/cpuinfo (constant_tsc, nonstop_tsc) and
// the kernel's clocksource; `allow_tsc` false forces CLOCK_MONOTONIC.
// Returns a one-line description for the debug log.
const char* choose_tick_source(bool allow_tsc);

// Ticks, monotonic and epoch nanoseconds read as close together as possible.
struct ClockAnchor {
  uint64_t ticks = 0;
  uint64_t mono_ns = 0;
  int64_t epoch_ns = 0;
};
ClockAnchor read_anchor();

// Ticks → epoch nanoseconds, linear between two anchors (the slope from the
// monotonic clock, which NTP cannot step; the offset from the epoch clock).
struct TimeMap {
  uint64_t tick0 = 0;
  int64_t epoch0 = 0;
  double ns_per_tick = 1.0;
  // Monotonic ns (device records, through CUPTI's timestamp callback).
  uint64_t mono0 = 0;
  int64_t mono_epoch0 = 0;

  static TimeMap between(const ClockAnchor& a, const ClockAnchor& b);
  // Ticks that are already nanoseconds on a clock `offset` away from the epoch.
  static TimeMap offset_only(int64_t offset_ns) { return TimeMap{0, offset_ns, 1.0, 0, offset_ns}; }

  int64_t epoch_from_mono(uint64_t mono_ns) const {
    return mono_epoch0 + static_cast<int64_t>(mono_ns - mono0);
  }
  // Ticks → monotonic ns, to compare host records with CUPTI's times.
  // The ticks of a monotonic time (the inverse of mono_ns).
  uint64_t ticks_at_mono(uint64_t mono) const {
    const double ns = static_cast<double>(epoch_from_mono(mono) - epoch0);
    return tick0 + static_cast<uint64_t>(static_cast<int64_t>(ns / ns_per_tick));
  }
  uint64_t mono_ns(uint64_t ticks) const { return mono0 + static_cast<uint64_t>(epoch_ns(ticks) - mono_epoch0); }

  int64_t epoch_ns(uint64_t ticks) const {
    const double d = static_cast<double>(static_cast<int64_t>(ticks - tick0)) * ns_per_tick;
    return epoch0 + static_cast<int64_t>(d);
  }
  uint64_t duration_ns(uint64_t ticks) const {
    return static_cast<uint64_t>(static_cast<double>(ticks) * ns_per_tick);
  }
};

}  // namespace nb
