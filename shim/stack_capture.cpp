#include "shim/stack_capture.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/private_libs.h"

#include <dlfcn.h>
#include <execinfo.h>

#include "shim/native_unwind.h"
#include "shim/python_frames.h"
#include "shim/real_functions.h"

namespace nb::shim {

uint32_t g_stack_kinds = 0;

namespace {

uint32_t g_depth = 64;
bool g_own_unwinder = true;  // NB_UNWIND=nb
using Backtrace = int (*)(void**, int);
Backtrace g_backtrace = nullptr;

uint32_t kinds_for(StackKinds which) {
  auto bit = [](Kind k) { return 1u << static_cast<unsigned>(k); };
  const uint32_t memory = bit(Kind::Alloc) | bit(Kind::Free) | bit(Kind::VmmCreate) | bit(Kind::VmmRelease) |
                          bit(Kind::VmmMap) | bit(Kind::VmmUnmap) | bit(Kind::HostAlloc) | bit(Kind::HostFree);
  const uint32_t launch = bit(Kind::Launch) | bit(Kind::Graph);
  switch (which) {
    case StackKinds::Memory: return memory;
    case StackKinds::Launch: return launch;
    case StackKinds::All: return ~0u;
    case StackKinds::None: break;
  }
  return 0;
}

}  // namespace

uint32_t init_stacks(StackKinds which, uint32_t depth, Unwinder unwinder, std::string& note) {
  g_stack_kinds = kinds_for(which);
  if (g_stack_kinds == 0) return 0;
  g_depth = depth;
  g_own_unwinder = unwinder == Unwinder::Nb;
  // libunwind, loaded privately: linked normally (or preloaded) it would put
  // its own _Unwind_RaiseException and backtrace in front of libgcc's and
  // glibc's, and the program's C++ exceptions would go through it. Debian
  // ships no PIC static archive to link in instead, so the build bundles
  // the shared one (core/private_libs.h).
  void* h = open_private_lib("libunwind.so.8");
  if (h != nullptr) g_backtrace = reinterpret_cast<Backtrace>(real_dlsym(h, "unw_backtrace"));
  if (g_backtrace != nullptr) log::debug(std::string("native stacks through ") + lib_path(h));
  if (g_backtrace == nullptr) {
    // glibc's backtrace (libgcc's unwinder) works too, more slowly; its first
    // call loads libgcc_s, so make it now rather than inside a hook.
    void* warm[4];
    ::backtrace(warm, 4);
    g_backtrace = &::backtrace;
    note = "libunwind.so.8 not found: native stacks through glibc's backtrace (slower)";
  }
  // 4 MiB of frames per thread (pages touched as used): some 4,000 stacks
  // as deep as a PyTorch launch's (64 native + 64 Python frames) between two
  // drains, 1,000 of the deepest (NB_STACK_DEPTH is at most 256). 2 MiB lost
  // 3-4% of the stacks of a flood of a million deep-stack calls a second on
  // the 2-core CI kind (bench/nbbench alloc-stack --pause-ms 0); 4 MiB
  // none (docs/performance.md).
  return 1u << 19;
}

void capture_stack(ThreadState& t, Record* r) {
  FrameRing& ring = t.slot->frames;
  if (!ring.valid()) return;
  uint64_t pos = 0;
  uint64_t* p = ring.reserve(1 + 2 * g_depth, pos);
  if (p == nullptr) return;  // counted by the ring
  // About one stack in nine is timed, so that the footer can say what
  // stacks cost rather than guess: three reads of the clock (some 40 ns on a
  // VM) on every stack would add 5% to a deep one and 30% to a shallow one.
  // The gaps are 1 to 15 stacks, drawn from the record counter, so that
  // sampling does not line up with a program's period; each thread starts at
  // a random phase (register_thread), so its first, cold, stack is timed no
  // more often than any other.
  const bool timed = t.stack_clock == 0;
  t.stack_clock = timed ? static_cast<uint8_t>(((t.seq * 0x9E3779B1u) >> 28) % 15) : t.stack_clock - 1;
  const uint64_t t0 = timed ? now_ticks() : 0;
  // nb's unwinder first; libunwind for a stack it cannot read (the same
  // frames either way: native_unwind.h), flagged for the footer.
  int native = g_own_unwinder ? unwind_native(p + 1, static_cast<int>(g_depth)) : -1;
  const bool by_libunwind = native < 0;
  if (by_libunwind) native = g_backtrace(reinterpret_cast<void**>(p + 1), static_cast<int>(g_depth));
  if (native < 0) native = 0;
  const uint64_t t1 = timed ? now_ticks() : 0;
  const size_t python = capture_python_frames(p + 1 + native, g_depth);
  const uint32_t n = static_cast<uint32_t>(native), py = static_cast<uint32_t>(python);
  p[0] = (timed ? stack_header::make_timed(n, py, t1 - t0, now_ticks() - t1) : stack_header::make(n, py)) |
         (by_libunwind ? stack_header::kByLibunwind : 0);
  ring.commit(pos + 1 + native + python);
  r->stack = static_cast<uint32_t>(pos) + 1;
}

}  // namespace nb::shim
