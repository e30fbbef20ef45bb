#include "core/thread_registry.h"

#include <sys/mman.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace nb {

namespace {

// A slot's mapping: its header's page, then the records, then the frames.
constexpr size_t kHeaderBytes = 4096;
constexpr uintptr_t kPage = 4096;

// One byte of each page of [from, to) read, by a load the sanitizers do
// not see (the owner may be writing there: the value is not used). On the
// CI kind's VM the first access to a page the kernel populated still took
// about 4 us, whichever thread made it; after one read, none did.
void touch_pages(uintptr_t from, uintptr_t to) {
  for (uintptr_t at = from; at < to; at += kPage) {
    asm volatile("movb (%0), %%al" : : "r"(at) : "al", "memory");
  }
}

// Makes the pages of [from, to) resident and writable, as a write would,
// without writing: the owner may be writing there already. In pieces of
// 16 KiB: the call holds the address space's lock for reading, and a
// program thread's mmap or munmap waits for it, so never for long. False
// when it could not be done (no memory, a fatal signal pending).
bool make_resident(uintptr_t from, uintptr_t to) {
  constexpr uintptr_t kPiece = 16 * 1024;
  const uintptr_t end = (to + kPage - 1) & ~(kPage - 1);
  for (uintptr_t at = from & ~(kPage - 1); at < end; at += kPiece) {
    const uintptr_t len = std::min(kPiece, end - at);
    if (madvise(reinterpret_cast<void*>(at), len, MADV_POPULATE_WRITE) != 0) return false;
    touch_pages(at, at + len);
  }
  return true;
}

}  // namespace

// Asked with a page of our own: EINVAL from it means no, and from then on
// EINVAL could only be an argument of ours.
bool ThreadRegistry::kernel_populates() {
  void* p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  const bool ok = madvise(p, kPage, MADV_POPULATE_WRITE) == 0;
  munmap(p, kPage);
  return ok;
}

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
    // only made resident as the rings fill (by their writer, or by the
    // collector just ahead of it: keep_ahead), and it never goes through
    // malloc, which the host program (or another preloaded tool) may have
    // replaced.
    const size_t record_bytes = sizeof(Record) * capacity_;
    const size_t bytes = kHeaderBytes + record_bytes + sizeof(uint64_t) * frame_capacity_;
    void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    auto* records = reinterpret_cast<Record*>(static_cast<char*>(mem) + kHeaderBytes);
    slot = new (mem) ThreadSlot(records, capacity_);
    if (frame_capacity_) {
      slot->frames.init(reinterpret_cast<uint64_t*>(static_cast<char*>(mem) + kHeaderBytes + record_bytes),
                        frame_capacity_);
    }
    static_assert(sizeof(ThreadSlot) <= kHeaderBytes, "slot header fits its page");
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

void ThreadRegistry::keep_ahead(ThreadSlot& s, uint64_t& budget) {
  static const bool populates = kernel_populates();  // the collector's thread only
  if (!populates) return;
  // Ahead of where the writer is (what the collector drained: all it had
  // written at the drain): twice what it wrote since the last look, at
  // least 16 KiB, at most a quarter of the ring. A thread that makes few
  // calls keeps few pages more than it uses (32 KiB for both rings; with
  // transparent huge pages "always", 2 MiB may come at once, as they would
  // with the writer's own first write); a fast one finds its next pages
  // ready.
  constexpr uint64_t kLeast = 16 * 1024;
  char* const base = reinterpret_cast<char*>(&s) + kHeaderBytes;
  const uint64_t record_bytes = uint64_t{sizeof(Record)} * capacity_;
  const struct {
    char* start;
    uint64_t bytes, pos;
  } regions[2] = {{base, record_bytes, s.ring.released() * sizeof(Record)},
                  {base + record_bytes, uint64_t{sizeof(uint64_t)} * frame_capacity_, s.frames.released() * 8}};
  for (int i = 0; i < 2; ++i) {
    const auto& r = regions[i];
    ThreadSlot::Ahead& a = s.ahead[i];
    if (a.resident >= r.bytes) continue;  // all of it (or nothing to do: no frames)
    const uint64_t wrote = r.pos - a.last_pos;
    uint64_t want = std::min(r.bytes, r.pos + std::min(r.bytes / 4, 2 * wrote + kLeast));
    if (want > a.resident && want - a.resident > budget) {
      want = a.resident + budget;  // the rest at the next pass, from the same last look
    } else {
      a.last_pos = r.pos;
    }
    if (want <= a.resident) continue;
    budget -= want - a.resident;
    // Failed: the owner's own writes fault the pages in, as they would
    // without this; no more tries for this ring.
    const auto start = reinterpret_cast<uintptr_t>(r.start);
    a.resident = make_resident(start + a.resident, start + want) ? want : r.bytes;
  }
}

}  // namespace nb
