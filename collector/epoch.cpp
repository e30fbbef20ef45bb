#include "collector/clock.h"

namespace nb {

int64_t monotonic_to_epoch_offset_ns() {
  // Read the two clocks back to back three times and keep the pair read
  // closest together, so the offset is good to about a microsecond.
  int64_t best_offset = 0;
  uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 3; ++i) {
    const uint64_t a = now_ns();
    timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    const uint64_t b = now_ns();
    const int64_t epoch = static_cast<int64_t>(rt.tv_sec) * 1000000000ll + rt.tv_nsec;
    if (b - a < best_gap) {
      best_gap = b - a;
      best_offset = epoch - static_cast<int64_t>(a + (b - a) / 2);
    }
  }
  return best_offset;
}

}  // namespace nb
