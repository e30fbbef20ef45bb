#include <catch2/catch.hpp>

#include <thread>

#include "core/clock.h"

using namespace nb;

TEST_CASE("TimeMap: ticks to epoch ns through two anchors", "[clock]") {
  const bool saved = g_ticks_are_tsc;
  g_ticks_are_tsc = true;
  // 2 ticks per ns: 3 GHz-ish made simple.
  const ClockAnchor a{1000, 5000, 1700000000000000000};
  const ClockAnchor b{1000 + 2000000000ull, 5000 + 1000000000ull, 1700000001000000000};
  const TimeMap m = TimeMap::between(a, b);
  CHECK(m.ns_per_tick == Approx(0.5));
  CHECK(m.epoch_ns(1000) == 1700000000000000000);
  CHECK(m.epoch_ns(1000 + 2000) == 1700000000000001000);
  CHECK(m.epoch_ns(500) == 1699999999999999750);  // before the first anchor
  CHECK(m.duration_ns(4000) == 2000);
  // Ticks to monotonic ns (compared with CUPTI's times by the order join).
  CHECK(m.mono_ns(1000) == 5000);
  CHECK(m.mono_ns(1000 + 2000) == 6000);
  g_ticks_are_tsc = saved;
}

TEST_CASE("TimeMap: monotonic ticks only need the offset", "[clock]") {
  const bool saved = g_ticks_are_tsc;
  g_ticks_are_tsc = false;
  const ClockAnchor a{123, 1000, 1700000000000000000};
  const TimeMap m = TimeMap::between(a, a);
  CHECK(m.epoch_ns(1000) == 1700000000000000000);
  CHECK(m.epoch_ns(3000) == 1700000000000002000);
  CHECK(m.duration_ns(77) == 77);
  CHECK(m.mono_ns(3000) == 3000);  // ticks are monotonic ns already
  g_ticks_are_tsc = saved;
}

TEST_CASE("the chosen tick source agrees with the monotonic clock", "[clock]") {
  const bool saved = g_ticks_are_tsc;
  choose_tick_source(true);
  const ClockAnchor a = read_anchor();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const uint64_t mid_ticks = now_ticks();
  const uint64_t mid_mono = monotonic_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const ClockAnchor b = read_anchor();
  const TimeMap m = TimeMap::between(a, b);
  // A tick read in the middle maps to within 100 us of the epoch time the
  // monotonic clock gives for it.
  const int64_t expected = a.epoch_ns + static_cast<int64_t>(mid_mono - a.mono_ns);
  CHECK(std::llabs(m.epoch_ns(mid_ticks) - expected) < 100000);
  g_ticks_are_tsc = saved;
}
