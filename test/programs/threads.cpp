// N threads launch kernels and allocate at once (argv: MANIFEST THREADS ITERS
// [FAIL_EVERY]). Every call is counted in the manifest as "count NAME N"
// lines at the end. With FAIL_EVERY, every FAIL_EVERY-th iteration also
// makes a launch the driver rejects (a null function), counted in
// "count cuLaunchKernel" and as "errors cuLaunchKernel N".
// Launch i of thread t has grid (i + 1, t + 1): a joined kernel says which
// call it came from.
#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "fake_cuda.h"
#include "manifest.h"

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  manifest::open(argv[1]);
  const int threads = std::atoi(argv[2]);
  const int iters = std::atoi(argv[3]);
  const int fail_every = argc > 4 ? std::atoi(argv[4]) : 0;
  CHECK_CU(cuInit(0));
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CUmodule mod;
  const std::string image = fake_cuda::module_image({"spin"});
  CHECK_CU(cuModuleLoadData(&mod, image.c_str()));
  CUfunction f;
  CHECK_CU(cuModuleGetFunction(&f, mod, "spin"));

  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      CHECK_CU(cuCtxSetCurrent(ctx));
      for (int i = 0; i < iters; ++i) {
        CUdeviceptr p;
        CHECK_CU(cuMemAlloc_v2(&p, 64));
        CHECK_CU(cuLaunchKernel(f, static_cast<unsigned>(i + 1), static_cast<unsigned>(t + 1), 1, 1, 1, 1, 0, nullptr,
                                nullptr, nullptr));
        CHECK_CU(cuMemFree_v2(p));
        if (fail_every != 0 && i % fail_every == 0 &&
            cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) == CUDA_SUCCESS) {
          std::abort();  // the fake driver rejects a null function
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  const long calls = static_cast<long>(threads) * iters;
  const long failed = fail_every != 0 ? static_cast<long>(threads) * ((iters + fail_every - 1) / fail_every) : 0;
  std::fprintf(manifest::file(), "count\tcuMemAlloc_v2\t%ld\ncount\tcuLaunchKernel\t%ld\ncount\tcuMemFree_v2\t%ld\n",
               calls, calls + failed, calls);
  if (failed != 0) std::fprintf(manifest::file(), "errors\tcuLaunchKernel\t%ld\n", failed);
  manifest::close();
  return 0;
}
