#include "core/clock.h"

#include <fstream>
#include <string>

namespace nb {

bool g_ticks_are_tsc = false;

namespace {
bool cpu_has_invariant_tsc() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) == 0) {
      line += ' ';
      return line.find(" constant_tsc ") != std::string::npos && line.find(" nonstop_tsc ") != std::string::npos;
    }
  }
  return false;
}

bool kernel_uses_tsc() {
  std::ifstream f("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string cs;
  return f && std::getline(f, cs) && cs == "tsc";
}
}  // namespace

const char* choose_tick_source(bool allow_tsc) {
#if defined(__x86_64__)
  // The kernel only keeps "tsc" as its clocksource when the counter is
  // synchronised across CPUs; that is what makes ticks from different
  // threads comparable.
  if (allow_tsc && cpu_has_invariant_tsc() && kernel_uses_tsc()) {
    g_ticks_are_tsc = true;
    return "host timestamps: invariant TSC (converted to ns at output)";
  }
#else
  (void)allow_tsc;
#endif
  g_ticks_are_tsc = false;
  return "host timestamps: CLOCK_MONOTONIC";
}

ClockAnchor read_anchor() {
  // Best of five: keep the reading whose bracketing ticks are closest.
  ClockAnchor best;
  uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const uint64_t t0 = now_ticks();
    const uint64_t mono = monotonic_ns();
    timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    const uint64_t t1 = now_ticks();
    if (t1 - t0 < best_gap) {
      best_gap = t1 - t0;
      best.ticks = t0 + (t1 - t0) / 2;
      best.mono_ns = mono;
      best.epoch_ns = static_cast<int64_t>(rt.tv_sec) * 1000000000ll + rt.tv_nsec;
    }
  }
  return best;
}

TimeMap TimeMap::between(const ClockAnchor& a, const ClockAnchor& b) {
  TimeMap m;
  m.mono0 = a.mono_ns;
  m.mono_epoch0 = a.epoch_ns;
  if (!g_ticks_are_tsc) {
    // Ticks are monotonic nanoseconds already: only the offset matters.
    m.tick0 = a.mono_ns;
    m.epoch0 = a.epoch_ns;
    return m;
  }
  m.tick0 = a.ticks;
  m.epoch0 = a.epoch_ns;
  if (b.ticks > a.ticks && b.mono_ns > a.mono_ns) {
    m.ns_per_tick = static_cast<double>(b.mono_ns - a.mono_ns) / static_cast<double>(b.ticks - a.ticks);
  }
  return m;
}

}  // namespace nb
