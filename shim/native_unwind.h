// nb's own unwinder of the calling thread's native stack, for the hot path:
// what libunwind's unw_backtrace returns (the return addresses, innermost
// first, from the caller of unwind_native), read with a per-thread cache of
// frame rules (eh_frame_rules.h) that is small and dense, where libunwind's
// is 256 KiB spread over 64 pages. On the H200 a stack is taken with the
// caches cold, and each line and page a capture reads costs (docs/
// performance.md); this cache keeps a decode loop's rules in
// a few pages.
//
// A frame of code without unwind tables is stepped through by the frame
// pointer, with libunwind's own limits (native_unwind.cpp). Any frame it
// cannot step through (a rule of Kind::Other, a pc outside every module, a
// CFA outside the thread's stack) makes it give up, and the caller takes
// the stack with libunwind instead. Both follow the same rules, frame by
// frame (test_unwind.cpp compares them on every shape of frame it makes;
// docs/gpu-validation.md on the H200's decode loop), and differ in cost. (One exception, bounded: a
// library unloaded and another mapped at its addresses at once may be
// stepped through by the first one's rules for up to 32 stacks of a thread;
// native_unwind.cpp, kCheckEvery.) Reads of the stack are kept between the
// current stack pointer and the top of the thread's stack.
#pragma once
#include <cstdint>
#include <string>

namespace nb::shim {

// Up to `max` return addresses into `out`; -1 when this stack is for
// libunwind (see above). No lock on a cache hit; a miss may take nb's own
// lock (tried, never waited for: busy means -1) and the loader's
// (dl_iterate_phdr).
__attribute__((noinline)) int unwind_native(uint64_t* out, int max);

// Why stacks were left to libunwind, so far (by reason, and the first pcs
// that stopped a walk, with their module and symbol): "" when none were.
// For NB_LOG=debug at the end.
std::string unwind_fallbacks_text();

// How many native frames nb's unwinder walked so far (all threads: the
// calling one's up to now, others' up to their last 32nd stack), and how
// many of them it took from its memos of recent stacks.
struct UnwindFrameCounts {
  uint64_t walked, memo;
};
UnwindFrameCounts unwind_frame_counts();
// The same as a line for NB_LOG=debug at the end ("" when none).
std::string unwind_memo_text();

// At the end of a thread that took stacks: frees its rule cache.
void release_unwind_thread();

// [begin, end) of the code of the module holding nb's unwinder (the
// shim): the collector cuts its frames off the top of each stack, and the
// unwinder keys recent stacks by the first frame outside it.
bool own_code_range(uint64_t& begin, uint64_t& end);

}  // namespace nb::shim
