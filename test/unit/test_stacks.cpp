// Stacks from the hot path to the snapshot: the per-thread frame ring, the
// table that interns and names them, and NB_TORCH_ALLOCS' configuration merge.
#include <catch2/catch.hpp>

#include <vector>

#include "core/frame_ring.h"
#include "collector/stack_cost.h"
#include "collector/stack_table.h"
#include "formats/stack_text.h"
#include "shim/torch_allocs.h"

using namespace nb;

namespace {
// Writes a stack of `native` entries valued base, base+1, ... into the ring.
bool put(FrameRing& r, uint32_t native, uint64_t base, uint32_t& tagged) {
  uint64_t pos = 0;
  uint64_t* p = r.reserve(1 + native, pos);
  if (p == nullptr) return false;
  p[0] = stack_header::make(native, 0);
  for (uint32_t i = 0; i < native; ++i) p[1 + i] = base + i;
  r.commit(pos + 1 + native);
  tagged = static_cast<uint32_t>(pos) + 1;
  return true;
}
// Reads the stack back the way the collector does; returns its first entry.
uint64_t take(FrameRing& r, uint32_t tagged, uint32_t& native) {
  uint64_t pos = 0, room = 0;
  const uint64_t* p = r.at(tagged - 1, pos, room);
  REQUIRE(p != nullptr);
  native = stack_header::native(p[0]);
  REQUIRE(1 + native <= room);
  const uint64_t first = p[1];
  for (uint32_t i = 0; i < native; ++i) REQUIRE(p[1 + i] == first + i);
  r.release(pos + 1 + native);
  return first;
}
}  // namespace

TEST_CASE("frame ring: stacks come back whole and in order, across the wrap", "[unit][stacks]") {
  std::vector<uint64_t> mem(64);
  FrameRing r;
  r.init(mem.data(), 64);
  std::vector<uint32_t> tags;
  uint64_t base = 1000;
  for (int round = 0; round < 50; ++round) {
    // Three stacks of 10 (+1 header) fit; the fourth would need the wrap.
    tags.clear();
    for (int k = 0; k < 3; ++k) {
      uint32_t t = 0;
      REQUIRE(put(r, 10, base + 100 * k, t));
      tags.push_back(t);
    }
    for (int k = 0; k < 3; ++k) {
      uint32_t n = 0;
      CHECK(take(r, tags[k], n) == base + 100 * k);
      CHECK(n == 10);
    }
    base += 1000;
  }
  CHECK(r.dropped() == 0);
}

TEST_CASE("frame ring: full means the stack is dropped and counted, never overwritten", "[unit][stacks]") {
  std::vector<uint64_t> mem(32);
  FrameRing r;
  r.init(mem.data(), 32);
  uint32_t a = 0, b = 0, c = 0;
  REQUIRE(put(r, 14, 1, a));
  REQUIRE(put(r, 14, 100, b));
  CHECK_FALSE(put(r, 14, 200, c));  // 30 of 32 used: no room for 15
  CHECK(r.dropped() == 1);
  uint32_t n = 0;
  CHECK(take(r, a, n) == 1);
  CHECK(put(r, 14, 300, c));        // room again once the first is read (wraps to the start)
  CHECK(take(r, b, n) == 100);
  CHECK(take(r, c, n) == 300);
}

TEST_CASE("frame ring: a stack asked for again after its release is refused, not misread", "[unit][stacks]") {
  // A collector pass that failed half-way delivers its records again; their
  // frames were already released.
  std::vector<uint64_t> mem(64);
  FrameRing r;
  r.init(mem.data(), 64);
  uint32_t a = 0, b = 0;
  REQUIRE(put(r, 10, 1, a));
  REQUIRE(put(r, 10, 100, b));
  uint32_t n = 0;
  take(r, a, n);
  take(r, b, n);
  uint64_t pos = 0, room = 0;
  CHECK(r.at(a - 1, pos, room) == nullptr);
  CHECK(r.at(b - 1, pos, room) == nullptr);
  uint32_t c = 0;
  CHECK(put(r, 10, 200, c));  // the ring still works
  CHECK(take(r, c, n) == 200);
}

TEST_CASE("stack table: identical stacks share an id; the recorder's frames are cut", "[unit][stacks]") {
  StackTable t(StackOrigins{0x1000, 0x2000, nullptr});
  const uint64_t a[] = {0x1010, 0x1020, 0x5000, 0x6000};
  const uint64_t b[] = {0x1030, 0x5000, 0x6000};  // other own frames, same program frames
  const uint64_t c[] = {0x1010, 0x5000, 0x7000};
  const uint32_t ia = t.intern(a, 4, nullptr, 0);
  const uint32_t ib = t.intern(b, 3, nullptr, 0);
  const uint32_t ic = t.intern(c, 3, nullptr, 0);
  CHECK(ia >= 1);
  CHECK(ia == ib);
  CHECK(ic != ia);
  CHECK(t.size() == 2);
  const uint64_t only_own[] = {0x1010};
  CHECK(t.intern(only_own, 1, nullptr, 0) == 0);
  // Inside the stack too (nb's wrapper of main): the same stack without it.
  const uint64_t wrapped[] = {0x1010, 0x5000, 0x6000, 0x1800};
  CHECK(t.intern(wrapped, 4, nullptr, 0) == ia);
}

TEST_CASE("stack table: overflowing the limit gives id 0 and is counted", "[unit][stacks]") {
  StackTable t({}, 2);
  const uint64_t a[] = {1}, b[] = {2}, c[] = {3};
  CHECK(t.intern(a, 1, nullptr, 0) == 1);
  CHECK(t.intern(b, 1, nullptr, 0) == 2);
  CHECK(t.intern(c, 1, nullptr, 0) == 0);
  CHECK(t.intern(a, 1, nullptr, 0) == 1);
  CHECK(t.overflowed() == 1);
}

namespace {
__attribute__((noinline)) uint64_t here() { return reinterpret_cast<uint64_t>(__builtin_return_address(0)); }
}  // namespace

TEST_CASE("stack table: Python frames replace the interpreter's frames, innermost first", "[unit][stacks]") {
  const uint64_t native_pc = here();  // a real address in this test binary
  constexpr uint64_t kEval = 0x9000;
  PythonCodes codes;
  for (uint32_t code = 1; code <= 8; ++code) codes.add("/srv/app" + std::to_string(code) + ".py", "f" + std::to_string(code));
  codes.set_eval_range(kEval, kEval + 1);
  StackTable t(StackOrigins{0, 0, &codes});
  const uint64_t native[] = {native_pc, kEval, kEval, native_pc + 0};
  const uint64_t python[] = {(1ull << 63) | (7ull << 32) | 42, (1ull << 63) | (8ull << 32) | 9};
  const uint32_t id = t.intern(native, 4, python, 2);
  const auto stacks = t.symbolize();
  REQUIRE(stacks.size() == 2);
  const auto& s = stacks[id];
  REQUIRE(s.size() == 4);  // native, 2 Python, native; the eval frames left out
  CHECK(s[0].name.find("here") == std::string::npos);  // the caller of here(): this test case
  CHECK(s[1].filename == "/srv/app7.py");
  CHECK(s[1].line == 42);
  CHECK(s[1].name == "f7");
  CHECK(s[2].filename == "/srv/app8.py");
  CHECK(s[2].line == 9);
  CHECK(s[3].filename == s[0].filename);
}

TEST_CASE("NB_TORCH_ALLOCS: backend:cudaMallocAsync merged into PyTorch's allocator settings", "[unit][stacks]") {
  using nb::shim::torch_alloc_conf;
  auto c = torch_alloc_conf(nullptr, nullptr);
  CHECK(c.variable == "PYTORCH_CUDA_ALLOC_CONF");
  CHECK(c.value == "backend:cudaMallocAsync");
  c = torch_alloc_conf(nullptr, "expandable_segments:True");
  CHECK(c.value == "expandable_segments:True,backend:cudaMallocAsync");
  c = torch_alloc_conf("max_split_size_mb:64", "ignored:1");
  CHECK(c.variable == "PYTORCH_ALLOC_CONF");
  CHECK(c.value == "max_split_size_mb:64,backend:cudaMallocAsync");
  c = torch_alloc_conf(nullptr, "backend:native");
  CHECK(c.variable.empty());
  CHECK_FALSE(c.note.empty());
  c = torch_alloc_conf(nullptr, "backend:cudaMallocAsync");
  CHECK(c.variable.empty());
  CHECK(c.note.empty());
}

TEST_CASE("trace stack text: Python frames only when present, at most 32, the rest counted", "[stacks][formats]") {
  formats::Stack s;
  s.push_back({"/lib/libc10_cuda.so", 0, "libc10_cuda.so+0x4bfb3"});
  for (int i = 0; i < 34; ++i) s.push_back({"/m/model.py", 100 + i, "forward"});
  s.push_back({"/usr/bin/python3", 0, "PyEval_EvalCode"});
  const std::string t = formats::trace_stack_text(s);
  CHECK(t.rfind("forward (/m/model.py:100)\nforward (/m/model.py:101)\n", 0) == 0);
  CHECK(t.find("libc10") == std::string::npos);
  CHECK(t.find("model.py:131)") != std::string::npos);
  CHECK(t.find("model.py:132)") == std::string::npos);
  CHECK(t.substr(t.rfind('\n') + 1) == "\u2026 2 more");

  formats::Stack native{{"/p/memory.cpp", 17, "leak_one"}, {"/p/memory.cpp", 36, "main"}, {"/lib/libc.so.6", 0, "libc.so.6+0x2a1c9"}};
  CHECK(formats::trace_stack_text(native) ==
        "leak_one (/p/memory.cpp:17)\nmain (/p/memory.cpp:36)\nlibc.so.6+0x2a1c9 (/lib/libc.so.6)");
  CHECK(formats::trace_stack_text({}).empty());
}

TEST_CASE("stack cost: the header carries each part's time; the footer line sums them", "[unit][stacks]") {
  const uint64_t h = stack_header::make_timed(40, 12, 1600, 320);
  CHECK(stack_header::native(h) == 40);
  CHECK(stack_header::python(h) == 12);
  CHECK(stack_header::timed(h));
  CHECK(stack_header::native_ticks(h) == 1600);
  CHECK(stack_header::python_ticks(h) == 320);
  CHECK_FALSE(stack_header::timed(stack_header::make(40, 256)));
  CHECK(stack_header::python(stack_header::make(40, 256)) == 256);
  // Saturates instead of wrapping into the other fields.
  const uint64_t big = stack_header::make_timed(3, 2, uint64_t(1) << 40, 0);
  CHECK(stack_header::native(big) == 3);
  CHECK(stack_header::python(big) == 2);
  CHECK(stack_header::native_ticks(big) == stack_header::kMaxCostTicks);
  CHECK(stack_header::python_ticks(big) == 0);

  StackCost c;
  CHECK(c.note(1.0).empty());
  c.add(stack_header::make(60, 20));  // not timed: counted, frames summed
  CHECK(c.note(1.0) ==
        "Stacks taken on the calling threads in the run so far: 1, per stack 60.0 native frames and 20.0 Python frames");
  c.add(h);
  c.add(stack_header::make_timed(20, 4, 400, 0));
  CHECK(c.stacks == 3);
  CHECK(c.timed == 2);
  // 2 timed stacks, ticks of 0.5 ns: native (1600 + 400) / 2 = 1000 ticks =
  // 0.50 us, Python 160 ticks = 0.08 us; 1.16 us for 2 of 3 stacks, so about
  // 0.00174 ms in all; the longest 1920 ticks = 0.96 us.
  CHECK(c.note(0.5) ==
        "Stacks taken on the calling threads in the run so far: 3, per stack 40.0 native frames and 12.0 Python frames;"
        " timed 2 of them, at random (measured): 0.50 us native and 0.08 us Python per stack, about 0.002 ms in all;"
        " half took under 0.22 us, 90% under 0.96 us, 99% under 0.96 us, the longest 1.0 us");
  StackCost slow;
  slow.add(big);
  CHECK(slow.saturated == 1);
  CHECK(slow.note(1.0).find("; 1 had a part over 1049 us (counted as 1049)") != std::string::npos);
  // A quantile never says more than the longest stack took.
  CHECK(slow.quantile_ticks(0.99) == slow.max_ticks);
}

TEST_CASE("stack cost: stacks libunwind read are flagged in the header and counted in the footer", "[unit][stacks]") {
  const uint64_t h = stack_header::make_timed(256, 256, 800, 80) | stack_header::kByLibunwind;
  CHECK(stack_header::by_libunwind(h));
  CHECK(stack_header::native(h) == 256);  // the flag is not a frame count
  CHECK(stack_header::python(h) == 256);
  CHECK(stack_header::native_ticks(h) == 800);
  CHECK_FALSE(stack_header::by_libunwind(stack_header::make(256, 256)));
  StackCost c;
  c.add(stack_header::make(10, 0));
  c.add(stack_header::make(10, 0) | stack_header::kByLibunwind);
  CHECK(c.by_libunwind == 1);
  CHECK(c.note(1.0) ==
        "Stacks taken on the calling threads in the run so far: 2, per stack 10.0 native frames and 0.0 Python frames;"
        " 1 of them read by libunwind (not nb's unwinder)");
}

TEST_CASE("stack cost: quantiles within a quarter of a power of two, never under the true value", "[unit][stacks]") {
  StackCost c;
  CHECK(c.quantile_ticks(0.5) == 0);
  for (int i = 0; i < 90; ++i) c.add(stack_header::make_timed(10, 0, 1000, 0));
  for (int i = 0; i < 10; ++i) c.add(stack_header::make_timed(10, 0, 100000, 0));
  for (int i = 0; i < 50; ++i) c.add(stack_header::make(10, 0));  // untimed: not in the quantiles
  // Bucket tops, but never above the longest.
  const auto near = [](uint64_t q, uint64_t v) { return q >= v && q <= v + v / 4; };
  CHECK(near(c.quantile_ticks(0.5), 1000));
  CHECK(near(c.quantile_ticks(0.9), 1000));
  CHECK(near(c.quantile_ticks(0.95), 100000));
  CHECK(near(c.quantile_ticks(0.99), 100000));
  for (uint64_t v : {0ull, 1ull, 3ull, 4ull, 5ull, 7ull, 8ull, 1023ull, 1024ull, 1500ull, 65535ull, 1048560ull}) {
    StackCost one;
    one.add(stack_header::make_timed(1, 0, v & ~uint64_t{15}, 0));
    INFO(v);
    CHECK(near(one.quantile_ticks(0.5), v & ~uint64_t{15}));
  }
}
