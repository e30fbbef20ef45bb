#include "collector/stack_cost.h"

#include <cstdio>

#include "collector/frame_ring.h"

namespace nb {

void StackCost::add(uint64_t header) {
  const uint64_t native = stack_header::native_ticks(header), python = stack_header::python_ticks(header);
  ++stacks;
  native_frames += stack_header::native(header);
  python_frames += stack_header::python(header);
  native_ticks += native;
  python_ticks += python;
  if (native + python > max_ticks) max_ticks = native + python;
  if (native == stack_header::kMaxCostTicks || python == stack_header::kMaxCostTicks) ++saturated;
}

std::string StackCost::note(double ns_per_tick) const {
  if (stacks == 0) return "";
  const double n = static_cast<double>(stacks);
  const double us = ns_per_tick / 1000.0;
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "Stacks taken on the calling threads in the run so far: %llu, %.3f ms in all; per stack %.1f native frames in %.2f us"
                " and %.1f Python frames in %.2f us; the longest %.1f us (measured)",
                static_cast<unsigned long long>(stacks),
                static_cast<double>(native_ticks + python_ticks) * ns_per_tick / 1e6,
                static_cast<double>(native_frames) / n, static_cast<double>(native_ticks) * us / n,
                static_cast<double>(python_frames) / n, static_cast<double>(python_ticks) * us / n,
                static_cast<double>(max_ticks) * us);
  std::string line = buf;
  if (saturated != 0) {
    // Their excess is not in the sums: say how many, and from where.
    std::snprintf(buf, sizeof buf, "; %llu took over %.0f us (counted as %.0f)",
                  static_cast<unsigned long long>(saturated), static_cast<double>(stack_header::kMaxCostTicks) * us,
                  static_cast<double>(stack_header::kMaxCostTicks) * us);
    line += buf;
  }
  return line;
}

}  // namespace nb
