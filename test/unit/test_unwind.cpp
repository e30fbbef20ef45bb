// nb's own unwinder (shim/native_unwind.cpp) against libunwind's
// unw_backtrace, taken from the same function: the return addresses past
// the first (the two calls' own sites) must be the same, through frames of
// every shape the compiler makes here (frameless, rbp-based after alloca, a
// large frame, recursion), through libc's code (qsort's comparator) and on
// a thread of its own, stacks alternating in shape; and where it cannot read the stack (an alternate
// signal stack) it says so (-1) instead of guessing.
#include <catch2/catch.hpp>

#include <alloca.h>
#include <dlfcn.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "shim/native_unwind.h"

extern "C" void nb_test_no_cfi_call(void (*f)(void*), void* arg);
extern "C" void nb_test_realigned_call(void (*f)(void*), void* arg);
extern "C" void nb_test_odd_rbp_call(void (*f)(void*), void* arg);
extern "C" void nb_test_rbp_data_call(void (*f)(void*), void* arg, uint64_t rbp);
extern "C" void nb_test_fp_alloca_call(void (*f)(void*), void* arg, uint64_t bytes);
extern "C" void nb_test_rbp_undefined_call(void (*f)(void*), void* arg, uint64_t unused);
using NbTestInnerCall = void (*)(void (*)(void*), void*, uint64_t);
extern "C" void nb_test_shallow_call(void (*f)(void*), void* arg, uint64_t data, NbTestInnerCall inner, uint64_t sp,
                                     uint64_t rbp);
extern "C" void nb_test_deep_call(void (*f)(void*), void* arg, uint64_t data, NbTestInnerCall inner, uint64_t sp,
                                  uint64_t rbp);

namespace {

using Backtrace = int (*)(void**, int);

Backtrace libunwind() {
  static Backtrace fn = [] {
    void* h = dlopen(NB_LIBUNWIND_PATH, RTLD_NOW | RTLD_LOCAL);
    return h ? reinterpret_cast<Backtrace>(dlsym(h, "unw_backtrace")) : nullptr;
  }();
  return fn;
}

struct Both {
  std::vector<uint64_t> nb, lib;
  int nb_n = 0;
};

// Both unwinders from one frame; volatile keeps the two calls in this frame.
__attribute__((noinline)) void take_both(Both& b, int max) {
  b.nb.assign(static_cast<size_t>(max), 0);
  std::vector<void*> lib(static_cast<size_t>(max));
  b.nb_n = nb::shim::unwind_native(b.nb.data(), max);
  const int n = libunwind()(lib.data(), max);
  b.nb.resize(b.nb_n < 0 ? 0 : static_cast<size_t>(b.nb_n));
  for (int i = 0; i < n; ++i) b.lib.push_back(reinterpret_cast<uint64_t>(lib[static_cast<size_t>(i)]));
  asm volatile("" ::: "memory");
}

void require_same(const Both& b) {
  REQUIRE(b.nb_n > 3);
  REQUIRE(b.nb.size() == b.lib.size());
  for (size_t i = 1; i < b.nb.size(); ++i) {
    INFO("frame " << i);
    REQUIRE(b.nb[i] == b.lib[i]);
  }
}

volatile int g_sink = 0;

__attribute__((noinline)) void leaf(Both& b, int max) {
  take_both(b, max);
  g_sink = g_sink + 1;
}

// rbp-based: alloca makes the frame's size known only at run time.
__attribute__((noinline)) void with_alloca(Both& b, int max, int n) {
  char* p = static_cast<char*>(alloca(static_cast<size_t>(n)));
  std::memset(p, 1, static_cast<size_t>(n));
  leaf(b, max);
  g_sink = g_sink + p[n / 2];
}

// A frame of 64 KiB: an offset that fits no small encoding.
__attribute__((noinline)) void big_frame(Both& b, int max) {
  volatile char buf[65536];
  buf[0] = 1;
  with_alloca(b, max, 100 + g_sink % 7);
  g_sink = g_sink + buf[0];
}

__attribute__((noinline)) void recurse(Both& b, int max, int depth) {
  if (depth == 0) {
    big_frame(b, max);
  } else {
    recurse(b, max, depth - 1);
  }
  g_sink = g_sink + depth;
}

Both* g_sorting = nullptr;
int compare(const void* a, const void* b) {
  if (g_sorting != nullptr) {
    recurse(*g_sorting, 64, 3);
    g_sorting = nullptr;
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

// A function without unwind tables (as some of cuBLASLt's are): a
// frame-pointer prologue and no CFI, so no FDE covers it. Both unwinders
// step through it by the frame chain.
asm(R"(
  .text
  .p2align 4
  .globl nb_test_no_cfi_call
  .type nb_test_no_cfi_call, @function
nb_test_no_cfi_call:
  push %rbp
  mov %rsp, %rbp
  sub $32, %rsp
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  leave
  ret
  .size nb_test_no_cfi_call, .-nb_test_no_cfi_call

  .p2align 4
  .globl nb_test_odd_rbp_call
  .type nb_test_odd_rbp_call, @function
nb_test_odd_rbp_call:   /* nb_test_no_cfi_call(f, arg) with rbp holding no frame's address */
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  mov $0x1234, %rbp
  call nb_test_no_cfi_call
  pop %rbp
  .cfi_def_cfa_offset 8
  ret
  .cfi_endproc
  .size nb_test_odd_rbp_call, .-nb_test_odd_rbp_call
)");

// A function with unwind tables that keeps data in rbp while it calls
// (rbp as a general register, saved at CFA - 16): nb_test_rbp_data_call(f,
// arg, value) calls f(arg) with rbp = value.
asm(R"(
  .text
  .p2align 4
  .globl nb_test_rbp_data_call
  .type nb_test_rbp_data_call, @function
nb_test_rbp_data_call:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  mov %rdx, %rbp
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  pop %rbp
  .cfi_def_cfa_offset 8
  ret
  .cfi_endproc
  .size nb_test_rbp_data_call, .-nb_test_rbp_data_call
)");

// A frame-pointer function (its CFA from rbp) that takes `bytes` (a
// multiple of 16) below its frame pointer before it calls f(arg): its
// callee's stack pointer depends on the bytes, its own rbp does not.
asm(R"(
  .text
  .p2align 4
  .globl nb_test_fp_alloca_call
  .type nb_test_fp_alloca_call, @function
nb_test_fp_alloca_call:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  mov %rsp, %rbp
  .cfi_def_cfa_register %rbp
  sub %rdx, %rsp
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  leave
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
  .size nb_test_fp_alloca_call, .-nb_test_fp_alloca_call
)");

// nb_test_shallow_call / nb_test_deep_call(f, arg, data, inner, sp, rbp):
// set rbp to `rbp` (saving the caller's) and call nb_test_fp_at_call, from
// 16 or 272 bytes lower. nb_test_fp_at_call is a frame-pointer frame (CFA
// from rbp) that moves rsp to `sp` before it calls inner(f, arg, data): the
// frames inside it are at the same addresses under either caller, while its
// rbp (and CFA) is 256 bytes lower under the deep one, and its return
// address differs.
asm(R"(
  .text
  .p2align 4
  .type nb_test_fp_at_call, @function
nb_test_fp_at_call:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  mov %rsp, %rbp
  .cfi_def_cfa_register %rbp
  mov %r8, %rsp
  call *%rcx
  leave
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
  .size nb_test_fp_at_call, .-nb_test_fp_at_call

  .macro NB_TEST_PAD_CALL name, pad
  .p2align 4
  .globl \name
  .type \name, @function
\name:
  .cfi_startproc
  push %rbp
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  sub $\pad, %rsp
  .cfi_def_cfa_offset 16 + \pad
  mov %r9, %rbp
  call nb_test_fp_at_call
  add $\pad, %rsp
  .cfi_def_cfa_offset 16
  pop %rbp
  .cfi_def_cfa_offset 8
  ret
  .cfi_endproc
  .size \name, .-\name
  .endm
  NB_TEST_PAD_CALL nb_test_shallow_call, 16
  NB_TEST_PAD_CALL nb_test_deep_call, 272
  .purgem NB_TEST_PAD_CALL
)");

// nb_test_rbp_undefined_call(f, arg, unused): calls f(arg) with rbp overwritten,
// the caller's kept in rbx, which its tables do not say
// (.cfi_undefined %rbp): no unwinder can know rbp beyond this frame.
asm(R"(
  .text
  .p2align 4
  .globl nb_test_rbp_undefined_call
  .type nb_test_rbp_undefined_call, @function
nb_test_rbp_undefined_call:
  .cfi_startproc
  push %rbx
  .cfi_def_cfa_offset 16
  .cfi_offset %rbx, -16
  mov %rbp, %rbx
  .cfi_undefined %rbp
  mov $0x5a5a0, %ebp
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  mov %rbx, %rbp
  .cfi_same_value %rbp
  pop %rbx
  .cfi_restore %rbx
  .cfi_def_cfa_offset 8
  ret
  .cfi_endproc
  .size nb_test_rbp_undefined_call, .-nb_test_rbp_undefined_call
)");

// A frame realigned as GCC does it for 64-byte aligned locals (DRAP, as in
// cuBLASLt): in its body the CFA is read from the frame (*(rbp - 8), where
// r10 was pushed) and the caller's rbp is at rbp + 0, both DWARF
// expressions.
asm(R"(
  .text
  .p2align 4
  .globl nb_test_realigned_call
  .type nb_test_realigned_call, @function
nb_test_realigned_call:
  .cfi_startproc
  lea 0x8(%rsp), %r10
  .cfi_def_cfa %r10, 0
  and $-64, %rsp
  push -0x8(%r10)
  push %rbp
  .cfi_escape 0x10, 0x6, 0x2, 0x76, 0x0
  mov %rsp, %rbp
  push %r10
  .cfi_escape 0xf, 0x3, 0x76, 0x78, 0x6
  sub $8, %rsp
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  lea -0x8(%rbp), %rsp
  pop %r10
  .cfi_def_cfa %r10, 0
  pop %rbp
  .cfi_restore %rbp
  lea -0x8(%r10), %rsp
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc
  .size nb_test_realigned_call, .-nb_test_realigned_call
)");

Both g_on_altstack;
void on_signal(int) { g_on_altstack.nb_n = nb::shim::unwind_native(g_on_altstack.nb.data(), 16); }

}  // namespace

TEST_CASE("unwinder: the same return addresses as libunwind, through frames of every shape", "[unit][unwind]") {
  REQUIRE(libunwind() != nullptr);
  for (int depth : {0, 5, 40}) {
    Both b;
    recurse(b, 64, depth);
    INFO("depth " << depth);
    require_same(b);
  }
  // Twice: the second is answered from the rule cache.
  Both again;
  recurse(again, 64, 5);
  require_same(again);
}

TEST_CASE("unwinder: stacks that share outer frames and differ inside, alternating", "[unit][unwind]") {
  // Each stack's outer frames are read through the last stack's (same stack
  // address, same pc); the inner ones differ in depth, frame size and pc.
  for (int i = 0; i < 24; ++i) {
    Both b;
    switch (i % 4) {
      case 0: recurse(b, 64, 3); break;
      case 1: recurse(b, 64, 4); break;
      case 2: with_alloca(b, 64, 64 + 16 * i); break;
      default: leaf(b, 64); break;
    }
    INFO("stack " << i);
    require_same(b);
  }
}

namespace {
// Two callers with one frame layout (one template): stacks through either
// are at the same stack addresses, with the same pcs inside them, and
// differ in the return address into the caller, and beyond.
template <int N>
__attribute__((noinline)) void same_frame_caller(Both& b) {
  leaf(b, 64);
  g_sink = g_sink + N;
}

// A frame-pointer frame (its CFA from rbp) above nb_test_rbp_data_call:
// the stack's rbp holds `data` inside, and this frame's own rbp beyond.
__attribute__((noinline)) void rbp_frame_over_data(Both& b, uint64_t data) {
  volatile size_t size = 48;
  char* p = static_cast<char*>(alloca(size));
  p[1] = 0;
  nb_test_rbp_data_call([](void* arg) { leaf(*static_cast<Both*>(arg), 64); }, &b, data);
  g_sink = g_sink + p[1];
}
}  // namespace

TEST_CASE("unwinder: stacks the same up to a frame, then different (another caller at the same depth)",
          "[unit][unwind]") {
  // Each stack's inner frames are at the last one's stack addresses and
  // pcs; the frame past them returns elsewhere in turn.
  const nb::shim::UnwindFrameCounts before = nb::shim::unwind_frame_counts();
  for (int i = 0; i < 24; ++i) {
    Both b;
    if (i % 2 == 0) {
      same_frame_caller<1>(b);
    } else {
      same_frame_caller<2>(b);
    }
    INFO("stack " << i);
    require_same(b);
  }
  const nb::shim::UnwindFrameCounts after = nb::shim::unwind_frame_counts();
  CHECK((after.memo - before.memo) * 2 >= after.walked - before.walked);  // the memo was in use
}

TEST_CASE("unwinder: rbp holding data that changes between stacks, a frame-pointer frame beyond", "[unit][unwind]") {
  // Inside, rbp is data (another value each stack); the frame-pointer
  // frame's CFA comes from the rbp restored out of nb_test_rbp_data_call's
  // frame. Same stack addresses and pcs each time.
  for (int i = 0; i < 24; ++i) {
    Both b;
    rbp_frame_over_data(b, 0x1000 + 16 * static_cast<uint64_t>(i % 3));
    INFO("stack " << i);
    require_same(b);
  }
}

namespace {
struct Nested {
  Both* b;
  uint64_t inner;
};
// Two frame-pointer frames, the outer taking 512 - INNER bytes and the
// inner INNER: the frames inside them are at the same stack addresses and
// pcs whatever INNER is, while the inner frame-pointer frame's rbp, and so
// its CFA and every frame beyond, moves with it.
__attribute__((noinline)) void fp_frames_shifted(Both& b, uint64_t inner) {
  Nested n{&b, inner};
  nb_test_fp_alloca_call(
      [](void* arg) {
        auto* nested = static_cast<Nested*>(arg);
        nb_test_fp_alloca_call([](void* b2) { leaf(*static_cast<Both*>(b2), 64); }, nested->b, nested->inner);
      },
      &n, 512 - inner);
  g_sink = g_sink + 1;
}
}  // namespace

TEST_CASE("unwinder: frames at the last stack's addresses below a frame-pointer frame that moved", "[unit][unwind]") {
  // The inner frames match the last stack's, but rbp (the inner
  // frame-pointer frame's) does not: the walk must step that frame by this
  // stack's rbp, not take the last stack's frames beyond it.
  for (int i = 0; i < 24; ++i) {
    Both b;
    fp_frames_shifted(b, i % 2 == 0 ? 128 : 256);
    INFO("stack " << i);
    require_same(b);
  }
}

namespace {
// One stack through nb_test_shallow_call or nb_test_deep_call (above), whose
// nb_test_fp_at_call calls `inner` (nb_test_rbp_data_call with `data`, or
// nb_test_rbp_undefined_call), which calls leaf. kShallowFp for data or
// rbp: nb_test_fp_at_call's rbp under nb_test_shallow_call.
constexpr uint64_t kShallowFp = 1;
struct FpAt {
  bool deep;
  NbTestInnerCall inner;
  uint64_t data, rbp;
};

void to_leaf(void* b) { leaf(*static_cast<Both*>(b), 64); }

uint64_t g_fp_at_sp = 0;
// Called by nb_test_rbp_data_call inside nb_test_fp_at_call: its CFA is
// g_fp_at_sp, and it saved nb_test_fp_at_call's rbp 16 bytes below.
void read_fp_at_rbp(void* out) {
  *static_cast<uint64_t*>(out) = *reinterpret_cast<volatile uint64_t*>(g_fp_at_sp - 16);
}

// The stacks, one after another from this frame with nothing else called
// in between (the comparisons come after): what a stack leaves in the 4 KiB
// gap below nb_test_fp_at_call (where a deep one's frame was, under a
// shallow one) stays there for the next, as a stale copy that passes the
// run's slot checks if a guard lets the walk read it.
__attribute__((noinline)) void take_fp_at(const std::vector<FpAt>& shapes, std::vector<Both>& out,
                                          uint64_t fp[2]) {
  uint64_t here;
  asm volatile("mov %%rsp, %0" : "=r"(here));
  const uint64_t sp = (here - 4096) & ~uint64_t{15};
  g_fp_at_sp = sp;
  decltype(&nb_test_deep_call) calls[2] = {nb_test_shallow_call, nb_test_deep_call};
  for (int deep = 0; deep < 2; ++deep) calls[deep](read_fp_at_rbp, &fp[deep], 0, nb_test_rbp_data_call, sp, 0);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const FpAt& s = shapes[i];
    auto call = calls[s.deep];
    asm volatile("" : "+r"(call));  // one call site: the frame beyond is the same in every stack
    call(to_leaf, &out[i], s.data == kShallowFp ? fp[0] : s.data, s.inner, sp,
         s.rbp == kShallowFp ? fp[0] : s.rbp);
  }
}
}  // namespace

TEST_CASE("unwinder: a frame-pointer frame at the last stack's address and pc, its rbp moved, reached in a run "
          "past a frame that restored rbp",
          "[unit][unwind]") {
  // Each round: deep (rbp data 0x1000), deep again (data: the shallow
  // nb_test_fp_at_call's rbp), shallow; rbp in nb_test_*_call is that value
  // too. The frames up to nb_test_fp_at_call are at the same addresses and
  // pcs each time, and in the gap below a shallow one the deep stack's
  // slots remain (take_fp_at): a walk misled into the deep CFA finds its
  // return address into nb_test_deep_call there, and reports it.
  // - The second deep stack's run starts where rbp is the data and passes
  //   nb_test_rbp_data_call, which restores it: the frames beyond must be
  //   remembered with their own rbp, not the data, or the shallow stack's
  //   run finds rbp "the same" at nb_test_fp_at_call and steps it by the
  //   deep CFA.
  // - The shallow stack's walk reaches nb_test_fp_at_call with an rbp other
  //   than the last stack's, before any frame of its run restored rbp: the
  //   run must stop there, and the frame be stepped by this rbp.
  REQUIRE(libunwind() != nullptr);
  std::vector<FpAt> shapes;
  for (int round = 0; round < 8; ++round) {
    shapes.push_back({true, nb_test_rbp_data_call, 0x1000, kShallowFp});
    shapes.push_back({true, nb_test_rbp_data_call, kShallowFp, kShallowFp});
    shapes.push_back({false, nb_test_rbp_data_call, 0x2000, kShallowFp});
  }
  std::vector<Both> stacks(shapes.size());
  uint64_t fp[2] = {0, 0};
  take_fp_at(shapes, stacks, fp);
  REQUIRE(fp[0] - fp[1] == 256);  // the shapes are as the asm says
  for (size_t i = 0; i < stacks.size(); ++i) {
    INFO("stack " << i << (shapes[i].deep ? " (deep)" : " (shallow)"));
    require_same(stacks[i]);
  }
}

TEST_CASE("unwinder: a frame-pointer frame at the last stack's address and pc, reached with rbp unknown this time",
          "[unit][unwind]") {
  // The last stack (deep) had rbp known at nb_test_fp_at_call; this one
  // (shallow) reaches it through nb_test_rbp_undefined_call, rbp unknown:
  // its CFA cannot be had, so nb must leave the stack to libunwind (-1),
  // not take the last stack's frames from there (stale, the deep ones).
  REQUIRE(libunwind() != nullptr);
  std::vector<FpAt> shapes;
  for (int round = 0; round < 8; ++round) {
    shapes.push_back({true, nb_test_rbp_data_call, 0x1000, 0x1000});
    shapes.push_back({false, nb_test_rbp_undefined_call, 0, 0x1000});
  }
  std::vector<Both> stacks(shapes.size());
  uint64_t fp[2] = {0, 0};
  take_fp_at(shapes, stacks, fp);
  for (size_t i = 0; i < stacks.size(); ++i) {
    INFO("stack " << i);
    if (shapes[i].deep) {
      require_same(stacks[i]);
    } else {
      CHECK(stacks[i].nb_n == -1);
    }
  }
  CHECK(nb::shim::unwind_fallbacks_text().find("a frame-pointer rule with the frame pointer unknown") !=
        std::string::npos);
}

TEST_CASE("unwinder: counts the frames it took from its memo of recent stacks", "[unit][unwind]") {
  // The same stack 40 times from one place: after the first, every frame
  // is at the address and pc it had in the last one.
  const nb::shim::UnwindFrameCounts before = nb::shim::unwind_frame_counts();
  for (int i = 0; i < 40; ++i) {
    Both b;
    leaf(b, 64);
    require_same(b);
  }
  const nb::shim::UnwindFrameCounts after = nb::shim::unwind_frame_counts();
  const uint64_t walked = after.walked - before.walked, memo = after.memo - before.memo;
  INFO("walked " << walked << ", from the memo " << memo);
  CHECK(walked >= 40 * 4);
  CHECK(memo * 10 >= walked * 9);
  CHECK(memo < walked);  // the first of them had its own frames to read
  CHECK(nb::shim::unwind_memo_text().find("native frames walked by nb's unwinder") == 0);
}

namespace {
using CallThrough = void (*)(void (*)(void*), void*);

// A stack taken through one of the asm functions above, which calls back.
Both through(CallThrough call) {
  Both b;
  call([](void* arg) { recurse(*static_cast<Both*>(arg), 64, 2); }, &b);
  return b;
}

// Whether nb's stack holds a return address into `fn`'s first `bytes`: its
// frame was stepped through, not where the stack stopped.
bool returns_into(const Both& b, CallThrough fn, uint64_t bytes) {
  const auto at = reinterpret_cast<uint64_t>(fn);
  return std::any_of(b.nb.begin(), b.nb.end(), [&](uint64_t ra) { return ra > at && ra <= at + bytes; });
}
}  // namespace

TEST_CASE("unwinder: through a function that has no unwind tables, by its frame pointer", "[unit][unwind]") {
  const std::string before = nb::shim::unwind_fallbacks_text();  // another case leaves stacks to libunwind
  const Both b = through(nb_test_no_cfi_call);
  require_same(b);
  CHECK(returns_into(b, nb_test_no_cfi_call, 32));
  CHECK(nb::shim::unwind_fallbacks_text() == before);  // nb read it, not libunwind
}

TEST_CASE("unwinder: through a function without tables whose caller keeps no frame pointer in rbp", "[unit][unwind]") {
  // The frame chain's guess is checked against the frame being stepped, not
  // its caller's rbp (0x1234 here): the walk goes on past the caller.
  const Both b = through(nb_test_odd_rbp_call);
  require_same(b);
  CHECK(returns_into(b, nb_test_odd_rbp_call, 32));
}

TEST_CASE("unwinder: through a realigned frame whose CFA is read from the frame (GCC's DRAP)", "[unit][unwind]") {
  const std::string before = nb::shim::unwind_fallbacks_text();
  const Both b = through(nb_test_realigned_call);
  require_same(b);
  CHECK(returns_into(b, nb_test_realigned_call, 64));
  CHECK(nb::shim::unwind_fallbacks_text() == before);  // nb read it, not libunwind
}

TEST_CASE("unwinder: stops at the depth asked for", "[unit][unwind]") {
  Both b;
  recurse(b, 5, 10);
  REQUIRE(b.nb_n == 5);
  require_same(b);
}

TEST_CASE("unwinder: through libc's frames (qsort's comparator)", "[unit][unwind]") {
  Both b;
  std::vector<int> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>((i * 37) % 64);
  g_sorting = &b;
  std::qsort(v.data(), v.size(), sizeof(int), compare);
  require_same(b);
}

TEST_CASE("unwinder: on a thread, to the thread's first frame", "[unit][unwind]") {
  Both b;
  std::thread([&] { recurse(b, 64, 7); }).join();
  require_same(b);
}

TEST_CASE("unwinder: on an alternate signal stack it leaves the stack to libunwind", "[unit][unwind]") {
  std::vector<char> alt(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt.data();
  ss.ss_size = alt.size();
  stack_t old{};
  REQUIRE(sigaltstack(&ss, &old) == 0);
  struct sigaction sa {}, prev{};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_ONSTACK;
  REQUIRE(sigaction(SIGUSR1, &sa, &prev) == 0);
  // Taken once on the thread's own stack first, so its bounds are known.
  Both warm;
  recurse(warm, 8, 0);
  g_on_altstack.nb.assign(16, 0);
  g_on_altstack.nb_n = 0;
  raise(SIGUSR1);
  sigaction(SIGUSR1, &prev, nullptr);
  sigaltstack(&old, nullptr);
  REQUIRE(g_on_altstack.nb_n == -1);
  // NB_LOG=debug's line at the end says why.
  CHECK(nb::shim::unwind_fallbacks_text().find("a stack other than the thread's own") != std::string::npos);
}

namespace {
// nb's unwinder alone (libunwind must not see the reloaded library: below).
__attribute__((noinline)) void take_nb(Both& b) {
  b.nb.assign(64, 0);
  b.nb_n = nb::shim::unwind_native(b.nb.data(), 64);
  b.nb.resize(b.nb_n < 0 ? 0 : static_cast<size_t>(b.nb_n));
  asm volatile("" ::: "memory");
}
bool g_with_libunwind = false;
void through_lib(void* arg) {
  auto& b = *static_cast<Both*>(arg);
  if (g_with_libunwind) take_both(b, 64); else take_nb(b);
}
}  // namespace

TEST_CASE("unwinder: a library unloaded and another loaded in its place", "[unit][unwind]") {
  // The two builds call back from the same address under different rules
  // (unwind_lib.S), so the right stack is the same through either: the
  // first one's, taken by both unwinders (compared from through_lib's
  // caller on: the frames below are take_both's and take_nb's own). A thread looks for unloads every
  // 32nd stack (native_unwind.cpp), so from the 32nd stack after a reload
  // on, every stack must be that one again. libunwind is not asked after
  // the first load: its caches keep the first build's rule, and
  // unw_backtrace then crashes (the bundled 1.6) or stops in the library.
  using Call = void (*)(void (*)(void*), void*);
  uint64_t where[2] = {0, 0};
  std::vector<uint64_t> first;
  for (int round = 0; round < 4; ++round) {
    const std::string path = std::string(NB_UNWIND_LIB_DIR) + "/libnb_unwind_lib" + (round % 2 ? "2" : "1") + ".so";
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != nullptr);
    auto call = reinterpret_cast<Call>(dlsym(h, "nb_unwind_lib_call"));
    REQUIRE(call != nullptr);
    where[round % 2] = reinterpret_cast<uint64_t>(call);
    for (int i = 0; i < 40; ++i) {
      Both b;
      g_with_libunwind = round == 0 && i == 0;
      call(through_lib, &b);
      INFO("round " << round << " stack " << i << " " << path);
      if (g_with_libunwind) {
        require_same(b);
        first.assign(b.nb.begin() + 2, b.nb.end());  // from through_lib's caller on
      }
      if (i < 32) continue;
      REQUIRE(b.nb_n > 0);
      REQUIRE(b.nb_n > 2);
      CHECK(std::vector<uint64_t>(b.nb.begin() + 2, b.nb.end()) == first);
    }
    REQUIRE(dlclose(h) == 0);
  }
  INFO("the two builds were loaded at " << where[0] << " and " << where[1]);
  CHECK(where[0] == where[1]);  // else this case tests less than it says
}
