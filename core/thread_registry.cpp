#include "core/thread_registry.h"

#include <sys/mman.h>
#include <sys/prctl.h>

#include <cstring>
#include <new>

namespace nb {

ThreadSlot* ThreadRegistry::acquire(uint32_t tid) {
  ThreadSlot* slot = nullptr;
  // Reuse a ring that an exited thread left behind and the collector drained.
  for (ThreadSlot* s = head_.load(std::memory_order_acquire); s; s = s->next) {
    int expected = ThreadSlot::kFree;
    if (s->state.compare_exchange_strong(expected, ThreadSlot::kOwned, std::memory_order_acq_rel)) {
      slot = s;
      // A mark its last owner left (a longjmp out of a CUDA call) is not ours.
      slot->in_call.store(0, std::memory_order_relaxed);
      break;
    }
  }
  if (slot == nullptr) {
    // One anonymous mapping for the slot header and its records: pages are
    // only touched as the ring fills, and it never goes through malloc, which
    // the host program (or another preloaded tool) may have replaced.
    const size_t record_bytes = sizeof(Record) * capacity_;
    const size_t bytes = 4096 + record_bytes + sizeof(uint64_t) * frame_capacity_;
    void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    auto* records = reinterpret_cast<Record*>(static_cast<char*>(mem) + 4096);
    slot = new (mem) ThreadSlot(records, capacity_);
    if (frame_capacity_) {
      slot->frames.init(reinterpret_cast<uint64_t*>(static_cast<char*>(mem) + 4096 + record_bytes), frame_capacity_);
    }
    static_assert(sizeof(ThreadSlot) <= 4096, "slot header fits its page");
    ThreadSlot* head = head_.load(std::memory_order_relaxed);
    do {
      slot->next = head;
    } while (!head_.compare_exchange_weak(head, slot, std::memory_order_release,
                                          std::memory_order_relaxed));
  }
  slot->index = next_index_.fetch_add(1, std::memory_order_relaxed) + 1;
  slot->tid.store(tid, std::memory_order_relaxed);
  std::memset(slot->name, 0, sizeof slot->name);
  prctl(PR_GET_NAME, slot->name, 0, 0, 0);
  slot->name[sizeof slot->name - 1] = 0;
  return slot;
}

}  // namespace nb
