// Host cost of an intercepted call, on the fake driver: times calls of
// cuLaunchKernel (reached as the CUDA runtime reaches it, through a
// cuGetProcAddress answer), of cuMemAlloc_v2 + cuMemFree_v2 pairs, and of
// cuLaunchKernel by plain symbol. Run it bare and with the shim preloaded
// (`bench/nbbench launch-cost` does both, alternately) and subtract.
//
// Calls are timed in bursts of 4096 with a 20 ms pause between bursts, so
// the collector has drained the thread's ring (16384 records) before the
// next burst and every timed call is really recorded: a full ring would drop
// records, which is cheaper than recording them and would flatter the
// figure. (A burst of allocations and frees is 8192 memory records, which
// the collector applies at well under a microsecond each: 5 ms was not
// always enough.) A real program launches at most a few hundred thousand
// kernels a second, and allocates far less often.
//
//   nb-bench-launch [BURSTS]    prints "launch_ns X", "alloc_free_ns Y", "symbol_launch_ns Z"
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "fake_cuda.h"

namespace {

double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

constexpr int kBurst = 4096;

template <typename F>
double median_ns_per_call(int bursts, F&& body) {
  std::vector<double> samples;
  for (int round = 0; round < bursts; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const double t0 = now_ns();
    for (int i = 0; i < kBurst; ++i) body();
    samples.push_back((now_ns() - t0) / kBurst);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int bursts = argc > 1 ? std::atoi(argv[1]) : 60;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto gpa = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(h, "cuGetProcAddress_v2"));
  CUdriverProcAddressQueryResult st;
  void* p = nullptr;
  gpa("cuLaunchKernel", &p, 12000, 0, &st);
  auto launch = reinterpret_cast<decltype(&cuLaunchKernel)>(p);
  gpa("cuMemAlloc", &p, 12000, 0, &st);
  auto alloc = reinterpret_cast<decltype(&cuMemAlloc_v2)>(p);
  gpa("cuMemFree", &p, 12000, 0, &st);
  auto free_ = reinterpret_cast<decltype(&cuMemFree_v2)>(p);

  cuInit(0);
  CUdevice dev;
  cuDeviceGet(&dev, 0);
  CUcontext ctx;
  cuDevicePrimaryCtxRetain(&ctx, dev);
  cuCtxSetCurrent(ctx);
  CUmodule mod;
  const std::string image = fake_cuda::module_image({"bench_kernel(float*)"});
  cuModuleLoadData(&mod, image.c_str());
  CUfunction f;
  cuModuleGetFunction(&f, mod, "bench_kernel(float*)");

  // Warm-up: first calls start the shim and resolve names.
  for (int i = 0; i < 1000; ++i) launch(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);

  const double launch_ns =
      median_ns_per_call(bursts, [&] { launch(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr); });
  const double alloc_ns = median_ns_per_call(bursts, [&] {
    CUdeviceptr d;
    alloc(&d, 256);
    free_(d);
  });
  const double symbol_ns =
      median_ns_per_call(bursts, [&] { cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr); });
  std::printf("launch_ns %.1f\nalloc_free_ns %.1f\nsymbol_launch_ns %.1f\n", launch_ns, alloc_ns, symbol_ns);
  return 0;
}
