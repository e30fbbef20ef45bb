// A single-producer / single-consumer ring of Records. The producer is the one
// application thread that owns it; the consumer is the collector thread. The
// producer reserves a slot, fills it in place while the intercepted call runs,
// and publishes it with one release store; it never waits: when the ring is
// full the record is counted as dropped.
#pragma once
#include <emmintrin.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/record.h"

namespace nb {

// Zeroes a reserved record with eight 16-byte stores (a memset of 128 bytes
// becomes `rep stos`, whose start-up cost is most of the price of a short
// call).
inline void clear_record(Record* r) {
  auto* p = reinterpret_cast<__m128i*>(r);
  const __m128i z = _mm_setzero_si128();
  for (int i = 0; i < 8; ++i) _mm_store_si128(p + i, z);
}

class Ring {
 public:
  // `capacity` must be a power of two; `slots` is owned by the caller.
  Ring(Record* slots, uint32_t capacity) : slots_(slots), mask_(capacity - 1) {}

  // Producer side.
  Record* reserve() {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    if (h - cached_tail_ > mask_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h - cached_tail_ > mask_) {
        dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return nullptr;
      }
    }
    return &slots_[h & mask_];
  }
  void publish() {
    const uint64_t next = head_.load(std::memory_order_relaxed) + 1;
    head_.store(next, std::memory_order_release);
    // The next slot's two cache lines were last touched by the consumer on
    // another core: ask for them now, so the next call does not wait.
    const char* p = reinterpret_cast<const char*>(&slots_[next & mask_]);
    __builtin_prefetch(p, 1);
    __builtin_prefetch(p + 64, 1);
  }
  void count_drop() {
    dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Consumer side: calls f(const Record&) for every published record, then
  // frees their slots. Returns how many were consumed.
  template <typename F>
  size_t drain(F&& f) {
    const uint64_t t = tail_.load(std::memory_order_relaxed);
    const uint64_t h = head_.load(std::memory_order_acquire);
    for (uint64_t i = t; i != h; ++i) f(slots_[i & mask_]);
    tail_.store(h, std::memory_order_release);
    return static_cast<size_t>(h - t);
  }

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint32_t capacity() const { return mask_ + 1; }
  // Consumer: records drained so far.
  uint64_t released() const { return tail_.load(std::memory_order_relaxed); }
  bool empty() const {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed);
  }

 private:
  Record* const slots_;
  const uint32_t mask_;
  // Producer and consumer indices on their own cache lines.
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;  // producer's last view of tail_
  std::atomic<uint64_t> dropped_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace nb
