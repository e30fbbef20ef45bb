#include "collector/stack_cost.h"

#include <algorithm>
#include <cstdio>

#include "core/frame_ring.h"

namespace nb {
namespace {

// Bucket of `t` ticks: t itself below 4, else 4 per power of two (the two
// bits after the leading one).
size_t bucket_of(uint64_t t) {
  if (t < 4) return static_cast<size_t>(t);
  const unsigned b = 63u - static_cast<unsigned>(__builtin_clzll(t));
  const size_t i = 4 * size_t{b} + ((t >> (b - 2)) & 3);
  return i < StackCost::kBuckets ? i : StackCost::kBuckets - 1;
}

// The largest time in bucket `i`.
uint64_t bucket_top(size_t i) {
  if (i < 8) return i;  // 4..7 are never used (bucket_of: t < 4, or b >= 2)
  const unsigned b = static_cast<unsigned>(i / 4), sub = static_cast<unsigned>(i % 4);
  return ((uint64_t{4} + sub + 1) << (b - 2)) - 1;
}

}  // namespace

uint64_t StackCost::quantile_ticks(double q) const {
  if (timed == 0) return 0;
  const double want = q * static_cast<double>(timed);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += histogram[i];
    if (static_cast<double>(seen) >= want && seen != 0) return std::min(bucket_top(i), max_ticks);
  }
  return max_ticks;
}

void StackCost::add(uint64_t header) {
  ++stacks;
  native_frames += stack_header::native(header);
  python_frames += stack_header::python(header);
  if (stack_header::by_libunwind(header)) ++by_libunwind;
  if (!stack_header::timed(header)) return;
  const uint64_t native = stack_header::native_ticks(header), python = stack_header::python_ticks(header);
  ++timed;
  native_ticks += native;
  python_ticks += python;
  if (native + python > max_ticks) max_ticks = native + python;
  ++histogram[bucket_of(native + python)];
  if (native == stack_header::kMaxCostTicks || python == stack_header::kMaxCostTicks) ++saturated;
}

std::string StackCost::note(double ns_per_tick) const {
  if (stacks == 0) return "";
  const double n = static_cast<double>(stacks);
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "Stacks taken on the calling threads in the run so far: %llu, per stack %.1f native frames and %.1f Python frames",
                static_cast<unsigned long long>(stacks), static_cast<double>(native_frames) / n,
                static_cast<double>(python_frames) / n);
  std::string line = buf;
  if (by_libunwind != 0) {
    std::snprintf(buf, sizeof buf, "; %llu of them read by libunwind (not nb's unwinder)",
                  static_cast<unsigned long long>(by_libunwind));
    line += buf;
  }
  if (timed == 0) return line;
  // The timed ones stand for all: their mean, times the count, is the total.
  const double k = static_cast<double>(timed);
  const double us = ns_per_tick / 1000.0;
  std::snprintf(buf, sizeof buf,
                "; timed %llu of them, at random (measured): %.2f us native and %.2f us Python per stack, about %.3f ms in all;"
                " half took under %.2f us, 90%% under %.2f us, 99%% under %.2f us, the longest %.1f us",
                static_cast<unsigned long long>(timed), static_cast<double>(native_ticks) * us / k,
                static_cast<double>(python_ticks) * us / k,
                static_cast<double>(native_ticks + python_ticks) * ns_per_tick / 1e6 * n / k,
                static_cast<double>(quantile_ticks(0.5)) * us, static_cast<double>(quantile_ticks(0.9)) * us,
                static_cast<double>(quantile_ticks(0.99)) * us, static_cast<double>(max_ticks) * us);
  line += buf;
  if (saturated != 0) {
    // Their excess is not in the sums: say how many, and from where.
    std::snprintf(buf, sizeof buf, "; %llu had a part over %.0f us (counted as %.0f)",
                  static_cast<unsigned long long>(saturated), static_cast<double>(stack_header::kMaxCostTicks) * us,
                  static_cast<double>(stack_header::kMaxCostTicks) * us);
    line += buf;
  }
  return line;
}

}  // namespace nb
