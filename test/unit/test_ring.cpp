#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "collector/drain_pace.h"
#include "core/ring.h"
#include "core/thread_registry.h"

using nb::Record;
using nb::Ring;

TEST_CASE("ring hands records over in order and frees their slots", "[ring]") {
  std::vector<Record> slots(8);
  Ring ring(slots.data(), 8);
  for (uint64_t i = 1; i <= 5; ++i) {
    Record* r = ring.reserve();
    REQUIRE(r != nullptr);
    r->id = i;
    ring.publish();
  }
  std::vector<uint64_t> seen;
  REQUIRE(ring.drain([&](const Record& r) { seen.push_back(r.id); }) == 5);
  REQUIRE(seen == std::vector<uint64_t>{1, 2, 3, 4, 5});
  REQUIRE(ring.empty());
  REQUIRE(ring.dropped() == 0);
}

TEST_CASE("a full ring never blocks: the record is counted as dropped", "[ring]") {
  std::vector<Record> slots(4);
  Ring ring(slots.data(), 4);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(ring.reserve() != nullptr);
    ring.publish();
  }
  REQUIRE(ring.reserve() == nullptr);
  REQUIRE(ring.reserve() == nullptr);
  REQUIRE(ring.dropped() == 2);
  // Draining makes room again.
  REQUIRE(ring.drain([](const Record&) {}) == 4);
  REQUIRE(ring.reserve() != nullptr);
  REQUIRE(ring.dropped() == 2);
}

TEST_CASE("a reserved but unpublished record is not visible to the consumer", "[ring]") {
  std::vector<Record> slots(4);
  Ring ring(slots.data(), 4);
  Record* r = ring.reserve();
  REQUIRE(r != nullptr);
  REQUIRE(ring.drain([](const Record&) {}) == 0);
  ring.publish();
  REQUIRE(ring.drain([](const Record&) {}) == 1);
}

TEST_CASE("concurrent producer and consumer: every record is delivered or counted", "[ring][threads]") {
  constexpr uint64_t kCount = 2000000;
  std::vector<Record> slots(1024);
  Ring ring(slots.data(), 1024);
  std::atomic<bool> done{false};
  uint64_t delivered = 0, last = 0;
  bool ordered = true;
  std::thread consumer([&] {
    while (!done.load(std::memory_order_acquire) || !ring.empty()) {
      ring.drain([&](const Record& r) {
        if (r.id <= last) ordered = false;
        last = r.id;
        ++delivered;
      });
    }
  });
  for (uint64_t i = 1; i <= kCount; ++i) {
    if (Record* r = ring.reserve()) {
      r->id = i;
      ring.publish();
    }
  }
  done.store(true, std::memory_order_release);
  consumer.join();
  REQUIRE(ordered);
  REQUIRE(delivered + ring.dropped() == kCount);
}

TEST_CASE("registry recycles the ring of an exited thread once drained", "[ring]") {
  nb::ThreadRegistry reg(64);
  nb::ThreadSlot* a = reg.acquire(100);
  REQUIRE(a != nullptr);
  REQUIRE(a->ring.capacity() == 64);
  REQUIRE(a->ring.reserve() != nullptr);
  a->ring.publish();
  nb::ThreadRegistry::release(a);
  // Not drained yet: a new thread must get a different ring.
  nb::ThreadRegistry::recycle_if_exited(*a);
  nb::ThreadSlot* b = reg.acquire(101);
  REQUIRE(b != a);
  REQUIRE(a->ring.drain([](const Record&) {}) == 1);
  nb::ThreadRegistry::recycle_if_exited(*a);
  nb::ThreadSlot* c = reg.acquire(102);
  REQUIRE(c == a);
  REQUIRE(c->tid.load() == 102);
  REQUIRE(c->index != b->index);
  int slots = 0;
  reg.for_each([&](nb::ThreadSlot&) { ++slots; });
  REQUIRE(slots == 2);
}

TEST_CASE("drain pace: a flood drains at once, a busy pass rests briefly, a quiet one the full period", "[unit][ring]") {
  using namespace nb;
  using std::chrono::microseconds;
  constexpr uint32_t kRing = 16384, kFrames = 1u << 19;
  CHECK(drain_pause(0, 0, kRing, kFrames) == kDrainPeriod);
  CHECK(drain_pause(kRing / 16, 0, kRing, kFrames) == kDrainPeriod);
  CHECK(drain_pause(kRing / 16 + 1, 0, kRing, kFrames) == kBusyDrainPeriod);
  CHECK(drain_pause(kRing / 4 + 1, 0, kRing, kFrames) == microseconds{0});
  // Deep stacks: few records, many frames.
  CHECK(drain_pause(500, kFrames / 16 + 1, kRing, kFrames) == kBusyDrainPeriod);
  CHECK(drain_pause(500, kFrames / 4 + 1, kRing, kFrames) == microseconds{0});
  // No stacks: no frame ring, frames never count.
  CHECK(drain_pause(10, 0, kRing, 0) == kDrainPeriod);
  CHECK(kBusyDrainPeriod.count() > 0);
}

TEST_CASE("calls whose record a full ring dropped are counted per API, with their errors, across recycling",
          "[ring]") {
  using nb::DroppedCall;
  nb::ThreadRegistry reg(64);
  nb::ThreadSlot* a = reg.acquire(100);
  REQUIRE(a != nullptr);
  for (int i = 0; i < 64; ++i) {
    REQUIRE(a->ring.reserve() != nullptr);
    a->ring.publish();
  }
  // As the shim's drop path does: the call counted when its record cannot
  // be had, its error when it returns.
  for (int i = 0; i < 10; ++i) {
    REQUIRE(a->ring.reserve() == nullptr);
    DroppedCall d = DroppedCall::own(a->drops, nb::kApi_cuLaunchKernel);
    REQUIRE(static_cast<bool>(d));
    d.returned(i % 3 == 0 ? 1 : 0);  // 0, 3, 6, 9 fail
  }
  REQUIRE(a->ring.reserve() == nullptr);
  DroppedCall::own(a->drops, nb::kApi_cuMemFree_v2).returned(0);
  CHECK(a->ring.dropped() == 11);
  CHECK(a->drops.calls[nb::kApi_cuLaunchKernel].load() == 10);
  CHECK(a->drops.errors[nb::kApi_cuLaunchKernel].load() == 4);
  CHECK(a->drops.calls[nb::kApi_cuMemFree_v2].load() == 1);
  CHECK(a->drops.errors[nb::kApi_cuMemFree_v2].load() == 0);
  CHECK(a->drops.calls[nb::kApi_cuMemAlloc_v2].load() == 0);
  CHECK(a->drops.changes.load() == 15);  // 11 calls, 4 errors
  CHECK_FALSE(static_cast<bool>(DroppedCall()));

  // Recycled: the next owner counts on from the last one's figures, so a
  // reader summing every slot neither loses nor repeats them.
  nb::ThreadRegistry::release(a);
  REQUIRE(a->ring.drain([](const Record&) {}) == 64);
  nb::ThreadRegistry::recycle_if_exited(*a);
  nb::ThreadSlot* b = reg.acquire(101);
  REQUIRE(b == a);
  DroppedCall::own(b->drops, nb::kApi_cuLaunchKernel).returned(2);
  CHECK(b->drops.calls[nb::kApi_cuLaunchKernel].load() == 11);
  CHECK(b->drops.errors[nb::kApi_cuLaunchKernel].load() == 5);

  // Lost before a ring existed: any thread counts them in one place.
  nb::DropCounts lost{};
  DroppedCall::shared(lost, nb::kApi_cuMemAlloc_v2).returned(2);
  DroppedCall::shared(lost, nb::kApi_cuMemAlloc_v2).returned(0);
  CHECK(lost.calls[nb::kApi_cuMemAlloc_v2].load() == 2);
  CHECK(lost.errors[nb::kApi_cuMemAlloc_v2].load() == 1);
  CHECK(lost.changes.load() == 3);
}

namespace {

// Pages of [p, p + bytes) resident now (mincore).
size_t resident_pages(const void* p, size_t bytes) {
  std::vector<unsigned char> v((bytes + 4095) / 4096);
  if (mincore(const_cast<void*>(p), bytes, v.data()) != 0) return SIZE_MAX;
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

bool thp_always() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return std::getline(f, line) && line.find("[always]") != std::string::npos;
}

}  // namespace

TEST_CASE("registry: the collector makes a ring's next pages resident, ahead of its writer", "[ring]") {
  if (!nb::ThreadRegistry::kernel_populates()) {
    WARN("skipped: this kernel has no MADV_POPULATE_WRITE (Linux 5.14), so nb leaves the pages to the writer");
    return;
  }
  if (thp_always()) {
    WARN("skipped: transparent huge pages are 'always' here, so a page made resident brings 2 MiB with it "
         "and pages cannot be counted");
    return;
  }
  constexpr uint32_t kRecords = 16384, kFrames = 1u << 19;
  nb::ThreadRegistry reg(kRecords, kFrames);
  nb::ThreadSlot* s = reg.acquire(7);
  REQUIRE(s != nullptr);
  const char* records = reinterpret_cast<const char*>(s) + 4096;
  const char* frames = records + sizeof(Record) * kRecords;
  const size_t record_bytes = sizeof(Record) * kRecords, frame_bytes = 8ull * kFrames;
  CHECK(resident_pages(records, record_bytes) == 0);  // the writer has written nothing
  uint64_t plenty = UINT64_MAX;  // no limit
  const auto write_records = [&](int n) {
    for (int i = 0; i < n; ++i) {
      REQUIRE(s->ring.reserve() != nullptr);
      s->ring.publish();
    }
    s->ring.drain([](const Record&) {});
  };

  // Nothing written yet: 16 KiB of each ring.
  reg.keep_ahead(*s, plenty);
  CHECK(resident_pages(records, 16 * 1024) == 4);
  CHECK(resident_pages(records, record_bytes) == 4);
  CHECK(resident_pages(frames, frame_bytes) == 4);

  // 1,000 records written and drained: twice that again plus 16 KiB ahead
  // of the writer (128,000 + 256,000 + 16,384 bytes: 98 pages).
  write_records(1000);
  reg.keep_ahead(*s, plenty);
  CHECK(resident_pages(records, record_bytes) == 98);
  CHECK(resident_pages(frames, frame_bytes) == 4);  // no stacks written

  // 10,000 frames: 80,000 + 160,000 + 16,384 bytes, 63 pages.
  uint64_t pos = 0;
  REQUIRE(s->frames.reserve(10000, pos) != nullptr);
  s->frames.commit(pos + 10000);
  s->frames.release(pos + 10000);
  reg.keep_ahead(*s, plenty);
  CHECK(resident_pages(frames, frame_bytes) == 63);
  CHECK(resident_pages(records, record_bytes) == 98);

  // A budget: no more bytes than it holds, the rest at the next call.
  write_records(1000);  // wants 256,000 + 256,000 + 16,384 bytes: 129 pages
  uint64_t budget = 8 * 4096;
  reg.keep_ahead(*s, budget);
  CHECK(budget == 0);
  CHECK(resident_pages(records, record_bytes) == 98 + 8);
  reg.keep_ahead(*s, plenty);
  CHECK(resident_pages(records, record_bytes) == 129);

  // Never more than a quarter of the ring ahead, and the whole ring once
  // the writer went round it; the frames as they were.
  write_records(7000);
  reg.keep_ahead(*s, plenty);
  CHECK(resident_pages(records, record_bytes) == (9000 * sizeof(Record) + record_bytes / 4 + 4095) / 4096);
  write_records(8000);
  reg.keep_ahead(*s, plenty);
  CHECK(resident_pages(records, record_bytes) == record_bytes / 4096);
  CHECK(resident_pages(frames, frame_bytes) == 63);
}
