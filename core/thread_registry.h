// Per-thread rings and the list the collector walks. A thread gets its ring on
// its first record (one mmap, off the steady state); when the thread exits the
// ring is marked so, drained by the collector, and handed to the next new
// thread, so memory is bounded by the number of threads alive at once.
#pragma once
#include <atomic>
#include <cstdint>

#include "core/drop_counts.h"
#include "core/frame_ring.h"
#include "core/ring.h"

namespace nb {

struct ThreadSlot {
  enum State : int { kOwned, kExited, kFree };
  ThreadSlot(Record* records, uint32_t capacity) : ring(records, capacity) {}

  Ring ring;
  FrameRing frames;  // stacks of the ring's records; empty when NB_STACKS=none
  std::atomic<int> state{kOwned};
  std::atomic<uint32_t> tid{0};
  // Start (ticks) of the call that makes device work this thread is inside,
  // 0 when none. Its record is published only when it returns, but its work
  // may run, and CUPTI report it, before that: the order join must not
  // place such a record until the call is in (order_join.h). The owner
  // writes it twice per such call, the collector reads it once per pass
  // (of owned slots only).
  alignas(64) std::atomic<uint64_t> in_call{0};
  // The same for a call about device memory: its record may be overtaken by
  // later ones of other threads, so the collector applies memory records
  // only up to the earliest such call still in flight.
  std::atomic<uint64_t> in_memory_call{0};
  // Calls of this thread whose record the full ring dropped, by API. Kept
  // over recycling: they only grow (drop_counts.h).
  alignas(64) DropCounts drops{};
  uint32_t index = 0;     // process-unique per owner; high half of record ids
  char name[16] = {};     // thread name when the owner registered
  ThreadSlot* next = nullptr;
  // The collector's only (ThreadRegistry::keep_ahead): for the records and
  // the frames, bytes made resident from the start of each, and where the
  // writer was at the last look.
  struct Ahead {
    uint64_t resident = 0, last_pos = 0;
  } ahead[2];
};

class ThreadRegistry {
 public:
  // `frame_capacity`: entries of each thread's FrameRing (a power of two, or
  // 0 for no stacks).
  explicit ThreadRegistry(uint32_t ring_capacity, uint32_t frame_capacity = 0)
      : capacity_(ring_capacity), frame_capacity_(frame_capacity) {}

  // Called by a thread that has no slot yet. Returns nullptr only when memory
  // for a new ring cannot be had (the caller counts the record as dropped).
  ThreadSlot* acquire(uint32_t tid);
  // Called when the owning thread exits.
  static void release(ThreadSlot* slot) { slot->state.store(ThreadSlot::kExited, std::memory_order_release); }

  // Collector side: visit every slot (never removed from the list).
  template <typename F>
  void for_each(F&& f) {
    for (ThreadSlot* s = head_.load(std::memory_order_acquire); s; s = s->next) f(*s);
  }
  // Collector side, after draining an owned slot `s`: the pages its owner
  // will write next made resident now, on the collector's thread, so that
  // the owner does not take a page fault every 32 records or 4 KiB of
  // stacks while its rings fill for the first time (some 13 us each on the
  // 2-core CI kind, inside a CUDA call: docs/performance.md, "Page
  // faults"). At most `budget` bytes, taken off it.
  void keep_ahead(ThreadSlot& s, uint64_t& budget);
  // Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14), which
  // keep_ahead needs (without it the writer faults its pages in).
  static bool kernel_populates();
  // Collector side: after draining an exited slot, make it reusable.
  static void recycle_if_exited(ThreadSlot& s) {
    int expected = ThreadSlot::kExited;
    if (s.ring.empty()) s.state.compare_exchange_strong(expected, ThreadSlot::kFree);
  }

  uint32_t capacity() const { return capacity_; }
  uint32_t frame_capacity() const { return frame_capacity_; }
  uint64_t failed_acquires() const { return failed_.load(std::memory_order_relaxed); }
  uint32_t threads_seen() const { return next_index_.load(std::memory_order_relaxed); }

 private:
  const uint32_t capacity_;
  const uint32_t frame_capacity_;
  std::atomic<ThreadSlot*> head_{nullptr};
  std::atomic<uint32_t> next_index_{0};
  std::atomic<uint64_t> failed_{0};
};

}  // namespace nb
