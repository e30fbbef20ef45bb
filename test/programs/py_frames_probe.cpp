// shim/python_frames*.cpp outside the shim (built into this library), for
// py_frames_check.py to drive through ctypes: ctypes.PyDLL calls these with
// the GIL held, ctypes.CDLL with it released (both ways of capturing). Each
// entry point stands for "a CUDA call made here".
#include <dlfcn.h>
#include <execinfo.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>
#include <algorithm>

#include "shim/python_frames.h"
#include "shim/python_frames_lines.h"  // nb_probe_line_at: the decoders on their own
#include "shim/native_unwind.h"        // nb_probe_unwind_compare: nb's unwinder through the interpreter

// The shim's real_dlsym skips its own dlsym hook; there is none here.
namespace nb::shim {
void* real_dlsym(void* handle, const char* name) { return dlsym(handle, name); }
}  // namespace nb::shim

namespace {

constexpr size_t kMaxFrames = 128;

// "file:line:function\n" per frame, innermost first, into buf.
void format(const uint64_t* frames, size_t n, char* buf, int cap) {
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t f = frames[i];
    std::string file = "?", function = "?";
    if ((f & nb::shim::kPythonFrameBit) == 0 ||
        !nb::shim::python_codes().names(static_cast<uint32_t>((f >> 32) & 0x7fffffff), file, function)) {
      file = "<unknown>";
    }
    text += file + ":" + std::to_string(static_cast<uint32_t>(f)) + ":" + function + "\n";
  }
  std::snprintf(buf, static_cast<size_t>(cap), "%s", text.c_str());
}

// The median nanoseconds of `iters` calls of `capture` (which answers false
// when a capture came out short: the median is then -1), with the caches and
// TLBs cleared before each, the way a program's own work between two CUDA
// calls would: `kib` KiB touched, one byte a line, in a scattered order (a
// stride prime to the number of lines visits each once, pages far apart);
// nothing for 0 KiB. The cost of reading the clock is taken off.
template <typename Capture>
double median_cold_ns(int iters, int kib, Capture capture) {
  if (iters < 1) return -1.0;
  using clock = std::chrono::steady_clock;
  double empty = 1e9;  // two back-to-back reads of the clock, the least of 64
  for (int i = 0; i < 64; ++i) {
    const auto t0 = clock::now();
    const auto t1 = clock::now();
    empty = std::min(empty, std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  const size_t lines = kib > 0 ? static_cast<size_t>(kib) * 1024 / 64 : 0;
  std::vector<unsigned char> evict(lines * 64, 1);
  std::vector<double> ns;
  for (int i = 0; i < iters; ++i) {
    size_t at = 0;
    for (size_t k = 0; k < lines; ++k, at = (at + 4099) % lines) evict[at * 64] += 1;
    const auto t0 = clock::now();
    const bool whole = capture();
    const auto t1 = clock::now();
    if (!whole) return -1.0;
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() - empty);
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace

extern "C" {

// Captures on the calling thread and names the frames on another (as the
// collector does). Returns the number of frames.
__attribute__((visibility("default"))) int nb_probe_capture(char* buf, int cap) {
  uint64_t frames[kMaxFrames];
  const size_t n = nb::shim::capture_python_frames(frames, kMaxFrames);
  std::thread collector([&] { format(frames, n, buf, cap); });
  collector.join();
  return static_cast<int>(n);
}

std::atomic<int> g_last_count{-1};
bool g_in_capture = false;

__attribute__((visibility("default"))) int nb_probe_capture_count() {
  uint64_t frames[kMaxFrames];
  g_in_capture = true;
  const int n = static_cast<int>(nb::shim::capture_python_frames(frames, kMaxFrames));
  g_in_capture = false;
  g_last_count.store(n);
  return n;
}

// 1 while nb_probe_capture_count is capturing (asked from a gc callback).
__attribute__((visibility("default"))) int nb_probe_in_capture() { return g_in_capture ? 1 : 0; }

// What the last nb_probe_capture_count saw (-1: none since the reset); for
// calls made where the return value cannot be had (a sub-interpreter).
__attribute__((visibility("default"))) int nb_probe_last_count(int reset) {
  return reset ? g_last_count.exchange(-1) : g_last_count.load();
}

__attribute__((visibility("default"))) int nb_probe_capture_max(int max) {
  uint64_t frames[kMaxFrames];
  const size_t m = max < 0 ? 0 : static_cast<size_t>(max);
  return static_cast<int>(nb::shim::capture_python_frames(frames, m < kMaxFrames ? m : kMaxFrames));
}

__attribute__((visibility("default"))) int nb_probe_noop() { return 0; }

// A native thread that never touched Python captures while the caller waits
// (holding the GIL when called through PyDLL).
__attribute__((visibility("default"))) int nb_probe_native_thread() {
  int n = -1;
  std::thread t([&] {
    uint64_t frames[kMaxFrames];
    n = static_cast<int>(nb::shim::capture_python_frames(frames, kMaxFrames));
  });
  t.join();
  return n;
}

// Nanoseconds per capture of `depth` frames, `iters` times; -1 unless every
// capture got all `depth`.
__attribute__((visibility("default"))) double nb_probe_bench(int iters, int depth) {
  uint64_t frames[kMaxFrames];
  const size_t max = depth > 0 && static_cast<size_t>(depth) < kMaxFrames ? static_cast<size_t>(depth) : kMaxFrames;
  size_t total = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) total += nb::shim::capture_python_frames(frames, max);
  const auto t1 = std::chrono::steady_clock::now();
  if (total != static_cast<size_t>(iters) * max) return -1.0;
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / iters;
}

// The median nanoseconds of `iters` captures of `depth` frames, each after
// `evict_kib` KiB touched (median_cold_ns); -1 unless every capture got all
// `depth`.
__attribute__((visibility("default"))) double nb_probe_bench_cold(int iters, int depth, int evict_kib) {
  uint64_t frames[kMaxFrames];
  const size_t max = depth > 0 && static_cast<size_t>(depth) < kMaxFrames ? static_cast<size_t>(depth) : kMaxFrames;
  return median_cold_ns(iters, evict_kib, [&] { return nb::shim::capture_python_frames(frames, max) == max; });
}

// The same for a native stack of up to `depth` frames through libunwind's
// unw_backtrace (loaded from `libunwind`, a path), as the shim takes it;
// -1 if it cannot be loaded. Frames taken go to *frames_out.
__attribute__((visibility("default"))) double nb_probe_bench_unwind(int iters, int depth, int evict_kib,
                                                                     const char* libunwind, int* frames_out) {
  void* h = dlopen(libunwind, RTLD_NOW | RTLD_LOCAL);
  auto backtrace_fn = h ? reinterpret_cast<int (*)(void**, int)>(dlsym(h, "unw_backtrace")) : nullptr;
  if (backtrace_fn == nullptr) return -1.0;
  void* pcs[256];
  const int max = depth > 0 && depth < 256 ? depth : 256;
  return median_cold_ns(iters, evict_kib, [&] {
    *frames_out = backtrace_fn(pcs, max);
    return true;
  });
}

// libunwind's unw_backtrace: the build's bundled copy (shim/nb-libs, beside
// this library's test/programs in the build tree and in `bench/nbbench carry`'s
// .carry), else the system's.
using Backtrace = int (*)(void**, int);
static Backtrace bundled_libunwind() {
  static Backtrace fn = [] {
    Dl_info info;
    void* h = nullptr;
    if (dladdr(reinterpret_cast<void*>(&nb_probe_noop), &info) != 0 && info.dli_fname != nullptr) {
      std::string dir = info.dli_fname;
      dir = dir.substr(0, dir.rfind('/'));                            // .../test/programs
      dir = dir.substr(0, dir.rfind('/'));                            // .../test
      dir = dir.substr(0, dir.rfind('/'));                            // the build
      h = dlopen((dir + "/shim/nb-libs/libunwind.so.8").c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (h == nullptr) h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    return h ? reinterpret_cast<Backtrace>(dlsym(h, "unw_backtrace")) : nullptr;
  }();
  return fn;
}

// nb's unwinder (shim/native_unwind.cpp) and libunwind, from here: 0 when
// they agree on every return address past the first (their own call sites),
// i + 1 for the first frame i where they differ (a different count: the
// shorter one's length + 1), -1 when nb's gave the stack up, -2 without
// libunwind. *frames_out: libunwind's count.
__attribute__((visibility("default"), noinline)) int nb_probe_unwind_compare(int max, int* frames_out) {
  Backtrace lib = bundled_libunwind();
  if (lib == nullptr) return -2;
  uint64_t mine[256];
  void* theirs[256];
  const int m = max > 0 && max < 256 ? max : 256;
  const int n = nb::shim::unwind_native(mine, m);
  const int k = lib(theirs, m);
  *frames_out = k;
  asm volatile("" ::: "memory");  // both calls from this frame
  if (n < 0) return -1;
  for (int i = 1; i < std::min(n, k); ++i) {
    if (mine[i] != reinterpret_cast<uint64_t>(theirs[i])) return i + 1;
  }
  return n == k ? 0 : std::min(n, k) + 1;
}

// nb's unwinder from the caller's frame (this one is the probe's own code,
// as a hook is the shim's): bench/workloads/stack_sites.cpp times it from
// call sites of its own.
__attribute__((visibility("default"), noinline)) int nb_probe_unwind_native(uint64_t* out, int max) {
  return nb::shim::unwind_native(out, max);
}

// nb_probe_bench_unwind for nb's own unwinder; -1 if it gave any stack up.
__attribute__((visibility("default"))) double nb_probe_bench_nbunwind(int iters, int depth, int evict_kib,
                                                                       int* frames_out) {
  uint64_t pcs[256];
  const int max = depth > 0 && depth < 256 ? depth : 256;
  return median_cold_ns(iters, evict_kib, [&] {
    *frames_out = nb::shim::unwind_native(pcs, max);
    return *frames_out >= 0;
  });
}

// Nanoseconds per capture on a native thread that never touched Python (the
// cost of saying no); -1 if anything was captured.
__attribute__((visibility("default"))) double nb_probe_bench_native(int iters) {
  double ns = -1.0;
  std::thread t([&] {
    uint64_t frames[kMaxFrames];
    size_t total = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) total += nb::shim::capture_python_frames(frames, kMaxFrames);
    const auto t1 = std::chrono::steady_clock::now();
    if (total == 0) ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / iters;
  });
  t.join();
  return ns;
}

// How many return addresses of the native stack lie in the interpreter's
// frame-evaluation function.
__attribute__((visibility("default"))) int nb_probe_eval_pcs() {
  void* pcs[256];
  const int n = backtrace(pcs, 256);
  int in_eval = 0;
  for (int i = 0; i < n; ++i) in_eval += nb::shim::python_codes().is_eval_pc(reinterpret_cast<uintptr_t>(pcs[i])) ? 1 : 0;
  return in_eval;
}

__attribute__((visibility("default"))) int nb_probe_main_pc_is_eval() {
  return nb::shim::python_codes().is_eval_pc(reinterpret_cast<uintptr_t>(&nb_probe_noop)) ? 1 : 0;
}

// The line of the instruction at byte offset `addr` by the decoder for
// 3.`minor`'s line tables (co_lnotab for 3.9, co_linetable after), for
// comparison with PyCode_Addr2Line.
__attribute__((visibility("default"))) int nb_probe_line_at(int minor, const unsigned char* table, long size,
                                                            int firstlineno, int addr) {
  const size_t n = size > 0 ? static_cast<size_t>(size) : 0;
  if (minor == 9) return nb::shim::python::lnotab_line(table, n, firstlineno, addr);
  if (minor == 10) return nb::shim::python::pep626_line(table, n, firstlineno, addr);
  return nb::shim::python::location_line(table, n, firstlineno, addr);
}

__attribute__((visibility("default"))) unsigned long long nb_probe_unknown_frames() {
  return nb::shim::python_unknown_frames();
}

__attribute__((visibility("default"))) int nb_probe_flags_in_place() {
  return nb::shim::python_flags_in_place() ? 1 : 0;
}
}
