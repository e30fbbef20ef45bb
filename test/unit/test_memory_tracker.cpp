#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "collector/memory_tracker.h"
#include "collector/session.h"
#include "formats/memory_snapshot.h"

using namespace nb;
using formats::Action;

namespace {
Record rec(Kind kind, uint64_t ptr, uint64_t bytes, uint64_t t, int32_t result = 0, int device = 0) {
  Record r{};
  r.kind = kind;
  r.ptr = ptr;
  r.bytes = bytes;
  r.start = t;
  r.end = t + 10;
  r.result = result;
  r.device = device;
  return r;
}

std::vector<Action> actions(const formats::SnapshotData& s, size_t device = 0) {
  std::vector<Action> out;
  const auto traces = formats::traces_of(s);
  for (const auto& e : traces.at(device)) out.push_back(e.action);
  return out;
}
}  // namespace

TEST_CASE("allocations and frees become segment/alloc and free/segment_free entries", "[memory]") {
  MemoryTracker m(100);
  m.on_record(rec(Kind::Alloc, 0x1000, 256, 1000));
  m.on_record(rec(Kind::Alloc, 0x2000, 512, 2000));
  m.on_record(rec(Kind::Free, 0x1000, 0, 3000));
  const auto s = m.snapshot(TimeMap::offset_only(1000000));
  REQUIRE(actions(s) == std::vector<Action>{Action::SegmentAlloc, Action::Alloc, Action::SegmentAlloc,
                                            Action::Alloc, Action::FreeRequested, Action::FreeCompleted,
                                            Action::SegmentFree});
  // The free carries the size of what it freed; times are epoch microseconds.
  REQUIRE(formats::traces_of(s)[0][4].size == 256);
  REQUIRE(formats::traces_of(s)[0][4].time_us == (3000 + 1000000) / 1000);
  // What is live at the end is a segment with one block covering it.
  REQUIRE(formats::segments_of(s).size() == 1);
  REQUIRE(formats::segments_of(s)[0].address == 0x2000);
  REQUIRE(formats::segments_of(s)[0].total_size == 512);
  REQUIRE(formats::segments_of(s)[0].blocks.size() == 1);
  REQUIRE(formats::segments_of(s)[0].blocks[0].size == 512);
  REQUIRE(m.live_bytes(0) == 512);
  REQUIRE(m.peak_bytes(0) == 768);
  REQUIRE(m.counts().allocs == 2);
  REQUIRE(m.counts().frees == 1);
}

TEST_CASE("a failed allocation for lack of memory is an oom entry with device_free", "[memory]") {
  MemoryTracker m(100);
  Record r = rec(Kind::Alloc, 0, 1ull << 40, 5000, 2);
  r.aux = 777;
  m.on_record(r);
  m.on_record(rec(Kind::Alloc, 0, 16, 6000, 1));  // other errors leave no entry
  const auto s = m.snapshot(TimeMap::offset_only(0));
  REQUIRE(actions(s) == std::vector<Action>{Action::Oom});
  REQUIRE(formats::traces_of(s)[0][0].device_free == 777);
  REQUIRE(formats::traces_of(s)[0][0].size == (1ull << 40));
  REQUIRE(formats::segments_of(s).empty());
  REQUIRE(m.counts().ooms == 1);
}

TEST_CASE("frees of unknown or null pointers leave no entry but are counted", "[memory]") {
  MemoryTracker m(100);
  m.on_record(rec(Kind::Free, 0, 0, 1));
  m.on_record(rec(Kind::Free, 0xdead, 0, 2));
  m.on_record(rec(Kind::Free, 0xbeef, 0, 3, 1));
  const auto s = m.snapshot(TimeMap::offset_only(0));
  REQUIRE(formats::traces_of(s)[0].empty());
  REQUIRE(m.counts().unmatched_frees == 1);
}

TEST_CASE("devices get their own trace lists", "[memory]") {
  MemoryTracker m(100);
  m.on_record(rec(Kind::Alloc, 0x1000, 8, 1, 0, 2));
  m.on_record(rec(Kind::Free, 0x1000, 0, 2, 0, -1));  // frees do not know their device
  const auto s = m.snapshot(TimeMap::offset_only(0));
  REQUIRE(formats::traces_of(s).size() == 3);
  REQUIRE(formats::traces_of(s)[0].empty());
  REQUIRE(formats::traces_of(s)[2].size() == 5);
}

TEST_CASE("the history is a ring of the newest entries", "[memory]") {
  MemoryTracker m(5);
  for (uint64_t i = 0; i < 4; ++i) m.on_record(rec(Kind::Alloc, 0x1000 * (i + 1), 8, 1000 * i));
  const auto s = m.snapshot(TimeMap::offset_only(0));
  REQUIRE(formats::traces_of(s)[0].size() == 5);
  REQUIRE(m.counts().overwritten == 3);
  // Oldest kept first; the newest five of the eight entries are the second
  // allocation's alloc and the third and fourth's segment_alloc + alloc.
  REQUIRE(formats::traces_of(s)[0][0].action == Action::Alloc);
  REQUIRE(formats::traces_of(s)[0][0].addr == 0x2000);
  REQUIRE(formats::traces_of(s)[0][4].addr == 0x4000);
  // Live allocations are all segments, whatever fell out of the history.
  REQUIRE(formats::segments_of(s).size() == 4);
}

TEST_CASE("virtual memory: maps are segment_map + alloc, unmaps release every mapping inside", "[memory]") {
  MemoryTracker m(100);
  Record create = rec(Kind::VmmCreate, 0xabc, 2 << 20, 1, 0, 1);
  m.on_record(create);
  Record map1 = rec(Kind::VmmMap, 0x100000, 2 << 20, 2);
  map1.ptr2 = 0xabc;
  m.on_record(map1);
  Record map2 = rec(Kind::VmmMap, 0x300000, 2 << 20, 3);
  map2.ptr2 = 0xabc;
  m.on_record(map2);
  REQUIRE(m.live_bytes(1) == (4u << 20));
  m.on_record(rec(Kind::VmmUnmap, 0x100000, 4 << 20, 4));
  const auto s = m.snapshot(TimeMap::offset_only(0));
  REQUIRE(actions(s, 1) == std::vector<Action>{Action::SegmentMap, Action::Alloc, Action::SegmentMap,
                                               Action::Alloc, Action::FreeRequested, Action::FreeCompleted,
                                               Action::SegmentUnmap, Action::FreeRequested,
                                               Action::FreeCompleted, Action::SegmentUnmap});
  REQUIRE(formats::segments_of(s).empty());
  REQUIRE(m.counts().maps == 2);
  REQUIRE(m.counts().unmaps == 2);
}

TEST_CASE("an address reused without a seen free closes the old block first", "[memory]") {
  MemoryTracker m(100);
  m.on_record(rec(Kind::Alloc, 0x1000, 8, 1));
  m.on_record(rec(Kind::Alloc, 0x1000, 16, 2));
  const auto s = m.snapshot(TimeMap::offset_only(0));
  REQUIRE(formats::segments_of(s).size() == 1);
  REQUIRE(formats::segments_of(s)[0].total_size == 16);
  REQUIRE(m.live_bytes(0) == 16);
}

TEST_CASE("session: memory records are applied in time order, whatever order the rings gave", "[memory]") {
  // T1 frees P (calls at 100-200); T2 gets P again (300-400). The collector
  // happened to drain T2's ring first.
  Session s(SessionLimits{});
  Record alloc_t1 = rec(Kind::Alloc, 0x1000, 64, 10);
  Record free_t1 = rec(Kind::Free, 0x1000, 0, 100);
  Record alloc_t2 = rec(Kind::Alloc, 0x1000, 64, 300);
  s.consume(alloc_t1);
  s.consume(alloc_t2);  // T2's ring first
  s.consume(free_t1);
  s.apply_memory(50);   // only what is older than the horizon: T1's alloc
  CHECK(s.memory().counts().allocs == 1);
  s.apply_all_memory();
  CHECK(s.memory().counts().allocs == 2);
  CHECK(s.memory().counts().frees == 1);
  CHECK(s.memory().live_bytes(0) == 64);  // T2's allocation is live at the end
  const auto snap = s.memory().snapshot(TimeMap::offset_only(0));
  REQUIRE(formats::segments_of(snap).size() == 1);
  CHECK(formats::segments_of(snap)[0].address == 0x1000);
}

TEST_CASE("session: two threads' memory records, drained in chunks and applied in passes, keep time order", "[memory]") {
  // Each thread's records come in its own time order (most go straight to
  // the feed's in-order line); the interleaving of the two rings does not
  // (those go through its heap). Whatever the mix, the history is sorted by
  // the allocations' times (their call's end), drained order breaking ties.
  Session s(SessionLimits{});
  std::vector<Record> threads[2];
  uint64_t seed = 12345;
  const auto next = [&seed] { return (seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  for (int t = 0; t < 2; ++t) {
    uint64_t time = 1000;
    for (int i = 0; i < 1500; ++i) {
      time += next() % 50;  // ties too
      threads[t].push_back(rec(Kind::Alloc, 0x100000 + uint64_t(t) * 0x1000000 + uint64_t(i) * 0x100, 64, time));
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> drained;  // (effect time, address) in drained order
  size_t at[2] = {0, 0};
  uint64_t horizon = 0;
  while (at[0] < threads[0].size() || at[1] < threads[1].size()) {
    const int t = (at[1] >= threads[1].size() || (at[0] < threads[0].size() && next() % 2)) ? 0 : 1;
    const size_t chunk = 1 + next() % 64;
    for (size_t k = 0; k < chunk && at[t] < threads[t].size(); ++k, ++at[t]) {
      s.consume(threads[t][at[t]]);
      drained.emplace_back(threads[t][at[t]].end, threads[t][at[t]].ptr);
    }
    // A horizon both threads have passed: what is older is final.
    const auto seen = [&](int u) { return at[u] == 0 ? 0 : threads[u][at[u] - 1].end; };
    const uint64_t both = std::min(at[0] < threads[0].size() ? seen(0) : UINT64_MAX,
                                   at[1] < threads[1].size() ? seen(1) : UINT64_MAX);
    if (both != UINT64_MAX && both > horizon) {
      horizon = both;
      s.apply_memory(horizon);
    }
  }
  s.apply_all_memory();
  std::stable_sort(drained.begin(), drained.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<uint64_t> want, got;
  for (const auto& d : drained) want.push_back(d.second);
  const auto snap = s.memory().snapshot(TimeMap::offset_only(0));
  const auto traces = formats::traces_of(snap);
  for (const auto& e : traces.at(0)) {
    if (e.action == Action::Alloc) got.push_back(e.addr);
  }
  CHECK(got.size() == 3000);
  CHECK(got == want);
}

TEST_CASE("memory curve: allocated and reserved; several pools add up, each as last reported", "[memory]") {
  MemoryTracker m(100);
  std::vector<MemoryPoint> c;
  m.on_point([&](const MemoryPoint& p) { c.push_back(p); });
  auto async_alloc = [](uint64_t ptr, uint64_t bytes, uint64_t t, uint64_t pool, uint64_t pool_bytes) {
    Record r = rec(Kind::Alloc, ptr, bytes, t);
    r.flags = record_flag::kAsync | record_flag::kPoolReserved;
    r.ptr2 = pool;
    r.aux = pool_bytes;
    return r;
  };
  m.on_record(rec(Kind::Alloc, 0x100000, 1 << 20, 1000));                        // plain: 1 MiB
  m.on_record(async_alloc(0x200000, 64 << 10, 2000, 0xa, 2 << 20));              // pool A holds 2 MiB
  m.on_record(async_alloc(0x400000, 3 << 20, 3000, 0xb, 4 << 20));               // pool B holds 4 MiB
  Record free_a = rec(Kind::Free, 0x200000, 0, 4000);
  free_a.flags = record_flag::kAsync | record_flag::kPoolReserved;
  free_a.ptr2 = 0xa;
  free_a.aux = 0;  // pool A gave its memory back
  m.on_record(free_a);
  REQUIRE(c.size() == 4);
  CHECK(c[0].allocated == (1 << 20));
  CHECK(c[0].reserved == (1 << 20));
  CHECK(c[1].allocated == (1 << 20) + (64 << 10));
  CHECK(c[1].reserved == (1 << 20) + (2 << 20));
  CHECK(c[2].allocated == (1 << 20) + (64 << 10) + (3 << 20));
  CHECK(c[2].reserved == (1 << 20) + (2 << 20) + (4 << 20));  // both pools, not the last one only
  CHECK(c[3].allocated == (1 << 20) + (3 << 20));
  CHECK(c[3].reserved == (1 << 20) + (4 << 20));
}
