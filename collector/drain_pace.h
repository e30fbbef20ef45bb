// How long the collector rests after a pass, from how much the pass found:
// the threads' rings (records, and the stack frames beside them) must not
// overflow between two passes, and a quiet program should cost one wake-up
// per period.
#pragma once
#include <chrono>
#include <cstdint>

namespace nb {

// 16384 records per ring drain in well under a millisecond; without stacks a
// thread would have to make more than ~8 million calls a second to overrun
// its ring in one period. Stacks (up to 2 x NB_STACK_DEPTH + 1 entries per
// call) fill a frame ring far sooner, hence the frames term below.
constexpr std::chrono::microseconds kDrainPeriod{2000};
constexpr std::chrono::microseconds kBusyDrainPeriod{250};
static_assert(kBusyDrainPeriod.count() > 0 && kBusyDrainPeriod < kDrainPeriod, "a busy pass rests, but less");

// `records` and `frames`: what the pass consumed, summed over all threads;
// `ring_capacity` and `frame_capacity`: one thread's ring of each (0 frames:
// no stacks). More than a quarter of one ring: go round at once (a flood);
// more than a sixteenth: a short rest; else the full period. Deep stacks
// fill the frame rings long before the record rings.
inline std::chrono::microseconds drain_pause(uint64_t records, uint64_t frames, uint32_t ring_capacity,
                                             uint32_t frame_capacity) {
  const auto above = [&](uint32_t share) { return records > ring_capacity / share || frames > frame_capacity / share; };
  if (above(4)) return std::chrono::microseconds{0};
  if (above(16)) return kBusyDrainPeriod;
  return kDrainPeriod;
}

}  // namespace nb
