// Launches from many call sites in turn, as a model's forward pass makes
// them: each site is its own chain of 10 to 14 functions (a kernel's
// launcher and the dispatch above it, different code for each kernel, so
// at several stack depths) on top of one shared chain of OUTER frames (the
// interpreter and the module calls), and the sites take turns, each
// recurring once a round (once a layer). Between launches the program
// touches EVICT KiB, as the work between two launches does.
//
// Under the shim with NB_STACKS=all: nb's footer gives what a stack cost,
// the program its launching thread's page faults. With PROBE (the build's
// test/programs/libpy_frames_probe.so), no launches: each site calls nb's
// unwinder itself (64 frames), and the program times every capture.
//
//   nb-bench-stack-sites [ROUNDS] [SITES] [EVICT_KIB] [OUTER] [PROBE]
//     defaults 400 rounds, 24 sites, 0 KiB, 40 outer frames
#include <cuda.h>
#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "fake_cuda.h"

namespace {

constexpr int kMaxSites = 48;

struct Launch {
  CUfunction f = nullptr;
  int calls = 0;
  int (*unwind)(uint64_t*, int) = nullptr;  // PROBE's nb_probe_unwind_native
  std::vector<double> ns;                   // each capture's, with PROBE
  int frames = 0;
  void operator()(int site) {
    ++calls;
    if (unwind == nullptr) {
      cuLaunchKernel(f, static_cast<unsigned>(site + 1), 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
      return;
    }
    uint64_t pcs[64];
    const auto t0 = std::chrono::steady_clock::now();
    frames = unwind(pcs, 64);
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
};

// Site S's chain of D frames, each its own function (its own unwind rule);
// the work after each call keeps it from being a tail call.
template <int S, int D>
struct Chain {
  [[gnu::noinline]] static int go(Launch& l) {
    const int r = Chain<S, D - 1>::go(l);
    asm volatile("" ::: "memory");
    return r + 1;
  }
};
template <int S>
struct Chain<S, 0> {
  [[gnu::noinline]] static int go(Launch& l) {
    l(S);
    asm volatile("" ::: "memory");
    return 0;
  }
};

using Site = int (*)(Launch&);
template <size_t... S>
constexpr std::array<Site, sizeof...(S)> make_sites(std::index_sequence<S...>) {
  return {&Chain<static_cast<int>(S), 10 + static_cast<int>(S) % 5>::go...};
}
constexpr auto kSites = make_sites(std::make_index_sequence<kMaxSites>{});

// The shared outer frames: one function, recursing.
[[gnu::noinline]] int outer(int depth, int site, Launch& l) {
  const int r = depth == 0 ? kSites[static_cast<size_t>(site)](l) : outer(depth - 1, site, l);
  asm volatile("" ::: "memory");
  return r + 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 400;
  int sites = argc > 2 ? std::atoi(argv[2]) : 24;
  const int evict_kib = argc > 3 ? std::atoi(argv[3]) : 0;
  const int outer_frames = argc > 4 ? std::atoi(argv[4]) : 40;
  if (sites < 1 || sites > kMaxSites) sites = 24;
  Launch launch;
  if (argc > 5) {
    void* h = dlopen(argv[5], RTLD_NOW | RTLD_LOCAL);
    launch.unwind = h ? reinterpret_cast<int (*)(uint64_t*, int)>(dlsym(h, "nb_probe_unwind_native")) : nullptr;
    if (launch.unwind == nullptr) {
      std::fprintf(stderr, "nb-bench-stack-sites: no nb_probe_unwind_native in %s\n", argv[5]);
      return 2;
    }
  }

  if (fake_cuda::use_primary_context() != CUDA_SUCCESS) return 2;
  CUmodule mod;
  const std::string image = fake_cuda::module_image({"site_kernel"});
  cuModuleLoadData(&mod, image.c_str());
  cuModuleGetFunction(&launch.f, mod, "site_kernel");

  const size_t lines = static_cast<size_t>(evict_kib > 0 ? evict_kib : 0) * 1024 / 64;
  std::vector<unsigned char> evict(lines * 64, 1);
  size_t at = 0;
  rusage before{};
  getrusage(RUSAGE_THREAD, &before);
  for (int r = 0; r < rounds; ++r) {
    for (int s = 0; s < sites; ++s) {
      for (size_t k = 0; k < lines; ++k, at = (at + 4099) % lines) evict[at * 64] += 1;
      outer(outer_frames, s, launch);
    }
  }
  rusage after{};
  getrusage(RUSAGE_THREAD, &after);
  // The page faults of the launching thread: the shim's rings' pages, if
  // they were not made resident ahead of it, among them.
  std::printf("launches %d from %d sites; page faults on the launching thread %ld\n", launch.calls, sites,
              after.ru_minflt - before.ru_minflt);
  if (!launch.ns.empty()) {
    // The first round's captures (each site's first, reading its rules
    // from the modules' tables) left out.
    std::vector<double> v(launch.ns.begin() + std::min<size_t>(launch.ns.size() - 1, sites), launch.ns.end());
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    std::printf("unwind_ns median %.0f mean %.0f p90 %.0f frames %d\n", v[v.size() / 2], sum / v.size(),
                v[v.size() * 9 / 10], launch.frames);
  }
  return 0;
}
