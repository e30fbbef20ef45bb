// What taking stacks cost the program's threads. About one stack in nine
// carries in its header the time its native and its Python frames took
// (shim/stack_capture.cpp); the collector sums them here as it interns
// stacks, and the table's footer says the result, extrapolated to all, so
// the cost of NB_STACKS is measured where it is paid instead of guessed from
// a benchmark on another machine.
#pragma once
#include <cstdint>
#include <string>

namespace nb {

struct StackCost {
  uint64_t stacks = 0;
  uint64_t native_frames = 0, python_frames = 0;
  uint64_t by_libunwind = 0;  // stacks whose native frames libunwind read, not nb's unwinder
  // Of the timed stacks only (about one in nine: shim/stack_capture.cpp).
  uint64_t timed = 0;
  uint64_t native_ticks = 0, python_ticks = 0;
  uint64_t max_ticks = 0;  // the longest one stack took
  uint64_t saturated = 0;  // timed stacks with a part too long for its header field
  // Timed stacks by their whole time, four buckets per power of two: a mean can
  // hide that a few stacks (libunwind off its fast path) cost most.
  static constexpr size_t kBuckets = 96;
  uint64_t histogram[kBuckets] = {};

  void add(uint64_t header);
  // The time (ticks) under which a share q of the timed stacks took, to a bucket's
  // width (a quarter of a power of two); 0 when there are none.
  uint64_t quantile_ticks(double q) const;
  // One footer line, or "" when no stack was taken. `ns_per_tick`: the
  // recording's clock rate (TimeMap::ns_per_tick).
  std::string note(double ns_per_tick) const;
};

}  // namespace nb
