// A thread's stacks, beside its record ring: the producer (the thread, inside
// a hook) writes a stack as one header entry followed by its native return
// addresses and its Python frames, contiguously, and points its record at the
// header; the collector reads it when it drains that record, then frees the
// space. Records are drained in order, so the space is freed in order too and
// a single pair of counters suffices, as in Ring.
//
// A stack never wraps round the end of the array: when it would, the
// producer skips to the start, and the skipped tail is freed with the next
// stack. No room: the stack is left out (the record keeps no stack) and
// counted; the thread never waits.
#pragma once
#include <atomic>
#include <cstdint>

namespace nb {

namespace stack_header {
// Header entry: counts of native and Python frames that follow it, whether
// libunwind read the native ones (bit 15: nb's own unwinder could not, or
// NB_UNWIND=libunwind), and, for
// the stacks that were timed (bit 31), what taking each part cost the
// calling thread (now_ticks() units / 16, at most 0xffff: about 0.35–1 ms
// with the TSC, 1.05 ms on CLOCK_MONOTONIC), which the table's footer
// reports. Python counts have 15 bits: NB_STACK_DEPTH is at most 256.
constexpr uint64_t kTimed = uint64_t(1) << 31;
constexpr uint64_t kByLibunwind = uint64_t(1) << 15;
inline uint64_t cost16(uint64_t ticks) { return ticks >> 4 > 0xffff ? 0xffff : ticks >> 4; }
inline uint64_t make(uint32_t native, uint32_t python) {
  return uint64_t(native & 0x7fff) | (uint64_t(python & 0x7fff) << 16);
}
inline uint64_t make_timed(uint32_t native, uint32_t python, uint64_t native_ticks, uint64_t python_ticks) {
  return make(native, python) | kTimed | (cost16(native_ticks) << 32) | (cost16(python_ticks) << 48);
}
inline uint32_t native(uint64_t h) { return uint32_t(h & 0x7fff); }
inline bool by_libunwind(uint64_t h) { return (h & kByLibunwind) != 0; }
inline uint32_t python(uint64_t h) { return uint32_t((h >> 16) & 0x7fff); }
inline bool timed(uint64_t h) { return (h & kTimed) != 0; }
inline uint64_t native_ticks(uint64_t h) { return ((h >> 32) & 0xffff) << 4; }
inline uint64_t python_ticks(uint64_t h) { return (h >> 48) << 4; }
constexpr uint64_t kMaxCostTicks = uint64_t(0xffff) << 4;  // a part that took this long or longer
}  // namespace stack_header

class FrameRing {
 public:
  FrameRing() = default;
  // `capacity` must be a power of two, larger than any one stack.
  void init(uint64_t* slots, uint32_t capacity) {
    slots_ = slots;
    mask_ = capacity - 1;
  }
  bool valid() const { return slots_ != nullptr; }

  // Producer: room for up to `n` entries, contiguous; nullptr when full.
  // `pos` receives the position to pass to commit() and to store in the record.
  uint64_t* reserve(uint32_t n, uint64_t& pos) {
    uint64_t h = head_;
    if ((h & mask_) + n > mask_ + 1) h = (h | mask_) + 1;  // would wrap: start over
    if (h + n - cached_tail_ > mask_ + 1) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h + n - cached_tail_ > mask_ + 1) {
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return nullptr;
      }
    }
    pos = h;
    return &slots_[h & mask_];
  }
  // Producer: the stack at `pos` ended at `end`. Made visible to the consumer
  // by the release store that publishes its record.
  void commit(uint64_t end) { head_ = end; }

  // Consumer: the stack whose record holds `low32 + 1`, given in order;
  // nullptr when that position is not between the tail and the head (a
  // record delivered twice after a failed pass: its frames are gone).
  // `entries` receives how many entries may be read from the result.
  const uint64_t* at(uint32_t low32, uint64_t& pos, uint64_t& entries) const {
    const uint64_t t = tail_.load(std::memory_order_relaxed);
    const uint32_t ahead = static_cast<uint32_t>(low32 - static_cast<uint32_t>(t));
    if (ahead > mask_) return nullptr;
    pos = t + ahead;
    entries = mask_ + 1 - (pos & mask_);  // a stack never wraps
    return &slots_[pos & mask_];
  }
  // Consumer: everything before `end` has been read.
  void release(uint64_t end) { tail_.store(end, std::memory_order_release); }

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Consumer: entries released so far (the difference of two readings is
  // what a pass consumed).
  uint64_t released() const { return tail_.load(std::memory_order_relaxed); }

 private:
  uint64_t* slots_ = nullptr;
  uint64_t mask_ = 0;
  uint64_t head_ = 0;         // producer only
  uint64_t cached_tail_ = 0;  // producer's last view of tail_
  std::atomic<uint64_t> dropped_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace nb
