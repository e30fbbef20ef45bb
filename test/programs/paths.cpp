// Calls the (fake) CUDA driver through every path a real process uses —
// plain symbols, dlsym on a dlopen'd libcuda handle, cuGetProcAddress_v2 and
// cuGetProcAddress at several versions with and without the per-thread flag,
// and runtime calls that land in the driver — on two threads, and writes
// each call it makes to the manifest (argv[1]).
#include <dlfcn.h>

#include <cstring>
#include <thread>

#include "fake_cuda.h"
#include "manifest.h"

namespace {

const char* const kKernelA = "kernelA(float*, int)";
const char* const kKernelB = "_Z7kernelBPf";  // mangled, as CUPTI and cuFuncGetName give them
void stub_c() {}                             // host stubs for the runtime's kernels
void stub_d() {}

CUfunction load_functions(CUfunction* b) {
  CUmodule mod;
  const std::string image = fake_cuda::module_image({kKernelA, kKernelB});
  CHECK_CU(cuModuleLoadData(&mod, image.c_str()));
  CUfunction a;
  CHECK_CU(cuModuleGetFunction(&a, mod, kKernelA));
  CHECK_CU(cuModuleGetFunction(b, mod, kKernelB));
  return a;
}

void plain_symbols(CUfunction f) {
  CUdeviceptr p;
  CHECK_CU(cuMemAlloc_v2(&p, 4096));
  manifest::call("cuMemAlloc_v2");
  manifest::alloc(p, 4096);
  CHECK_CU(cuMemsetD8_v2(p, 0, 4096));
  manifest::call("cuMemsetD8_v2");
  char host[64] = {};
  CHECK_CU(cuMemcpyHtoD_v2(p, host, sizeof host));
  manifest::call("cuMemcpyHtoD_v2");
  CHECK_CU(cuLaunchKernel(f, 4, 2, 1, 128, 1, 1, 256, nullptr, nullptr, nullptr));
  manifest::call("cuLaunchKernel", kKernelA);
  CHECK_CU(cuLaunchKernel_ptsz(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  manifest::call("cuLaunchKernel_ptsz", kKernelA);
  CHECK_CU(cuStreamSynchronize(nullptr));
  manifest::call("cuStreamSynchronize");
  CHECK_CU(cuMemFree_v2(p));
  manifest::call("cuMemFree_v2");
  manifest::free(p);
}

void dlsym_handle(CUfunction f) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    std::exit(3);
  }
  auto alloc = reinterpret_cast<decltype(&cuMemAlloc_v2)>(dlsym(h, "cuMemAlloc_v2"));
  auto launch = reinterpret_cast<decltype(&cuLaunchKernel)>(dlsym(h, "cuLaunchKernel"));
  auto ctx_sync = reinterpret_cast<decltype(&cuCtxSynchronize)>(dlsym(h, "cuCtxSynchronize"));
  auto free_ = reinterpret_cast<decltype(&cuMemFree_v2)>(dlsym(h, "cuMemFree_v2"));
  CUdeviceptr p;
  CHECK_CU(alloc(&p, 8192));
  manifest::call("cuMemAlloc_v2");
  manifest::alloc(p, 8192);
  CHECK_CU(launch(f, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr));
  manifest::call("cuLaunchKernel", kKernelA);
  CHECK_CU(ctx_sync());
  manifest::call("cuCtxSynchronize");
  CHECK_CU(free_(p));
  manifest::call("cuMemFree_v2");
  manifest::free(p);
}

void proc_address(CUfunction f, CUfunction g) {
  // As the runtime does: cuGetProcAddress_v2 by dlsym, then ask it for itself.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto first = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(h, "cuGetProcAddress_v2"));
  void* fn = nullptr;
  CUdriverProcAddressQueryResult st;
  CHECK_CU(first("cuGetProcAddress", &fn, 12000, 0, &st));
  auto gpa = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(fn);
  using GpaV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
  CHECK_CU(first("cuGetProcAddress", &fn, 11030, 0, &st));
  auto gpa_v1 = reinterpret_cast<GpaV1>(fn);

  const auto get = [&](const char* name, int version, cuuint64_t flags) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult s;
    CHECK_CU(gpa(name, &p, version, flags, &s));
    return p;
  };

  CUdeviceptr d;
  auto alloc = reinterpret_cast<decltype(&cuMemAlloc_v2)>(get("cuMemAlloc", 12000, 0));
  CHECK_CU(alloc(&d, 1 << 16));
  manifest::call("cuMemAlloc_v2");
  manifest::alloc(d, 1 << 16);

  auto launch = reinterpret_cast<decltype(&cuLaunchKernel)>(get("cuLaunchKernel", 12000, 0));
  CHECK_CU(launch(g, 2, 2, 2, 8, 8, 1, 0, nullptr, nullptr, nullptr));
  manifest::call("cuLaunchKernel", kKernelB);

  auto launch_pt = reinterpret_cast<decltype(&cuLaunchKernel)>(
      get("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
  CHECK_CU(launch_pt(g, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr));
  manifest::call("cuLaunchKernel_ptsz", kKernelB);

  CUlaunchConfig cfg = {};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 256;
  cfg.blockDimY = cfg.blockDimZ = 1;
  auto launch_ex = reinterpret_cast<decltype(&cuLaunchKernelEx)>(get("cuLaunchKernelEx", 13000, 0));
  CHECK_CU(launch_ex(&cfg, f, nullptr, nullptr));
  manifest::call("cuLaunchKernelEx", kKernelA);

  char host[256] = {};
  auto htod_pt = reinterpret_cast<decltype(&cuMemcpyHtoD_v2)>(
      get("cuMemcpyHtoD", 11030, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
  CHECK_CU(htod_pt(d, host, sizeof host));
  manifest::call("cuMemcpyHtoD_v2_ptds");

  auto sync = reinterpret_cast<decltype(&cuStreamSynchronize)>(get("cuStreamSynchronize", 13000, 1));
  CHECK_CU(sync(nullptr));
  manifest::call("cuStreamSynchronize");

  // The v1 cuGetProcAddress (no status argument) answers too.
  void* p = nullptr;
  CHECK_CU(gpa_v1("cuMemsetD32Async", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
  CHECK_CU(reinterpret_cast<decltype(&cuMemsetD32Async)>(p)(d, 7, 16, nullptr));
  manifest::call("cuMemsetD32Async_ptsz");

  // An older version than our hook's ABI gets the real, older function
  // (cuMemAlloc with a 32-bit size): it is not the hooked cuMemAlloc_v2, so
  // it passes through unrecorded rather than through a wrapper of the wrong
  // ABI.
  void* old = nullptr;
  CUdriverProcAddressQueryResult s2;
  if (gpa("cuMemAlloc", &old, 3000, 0, &s2) == CUDA_SUCCESS && old != nullptr) {
    using OldAlloc = CUresult (*)(unsigned int*, unsigned int);
    unsigned int small = 0;
    CHECK_CU(reinterpret_cast<OldAlloc>(old)(&small, 64));
  }

  auto free_ = reinterpret_cast<decltype(&cuMemFree_v2)>(get("cuMemFree", 12000, 0));
  CHECK_CU(free_(d));
  manifest::call("cuMemFree_v2");
  manifest::free(d);
}

void runtime_calls() {
  CHECK_CU(fakeRegisterKernel(reinterpret_cast<const void*>(&stub_c), "_Z7kernelCv"));
  CHECK_CU(fakeRegisterKernel(reinterpret_cast<const void*>(&stub_d), "kernelD"));
  void* p = nullptr;
  CHECK_CU(cudaMalloc(&p, 1 << 20));
  manifest::call("cudaMalloc");
  manifest::alloc(reinterpret_cast<unsigned long long>(p), 1 << 20);
  char host[128] = {};
  CHECK_CU(cudaMemcpy(p, host, sizeof host, cudaMemcpyHostToDevice));
  manifest::call("cudaMemcpy");
  CHECK_CU(cudaLaunchKernel(reinterpret_cast<const void*>(&stub_c), dim3(3, 1, 1), dim3(32, 1, 1), nullptr, 0,
                            nullptr));
  manifest::call("cudaLaunchKernel", "_Z7kernelCv");
  cudaKernel_t k;
  CHECK_CU(__cudaGetKernel(&k, reinterpret_cast<const void*>(&stub_d)));
  CHECK_CU(__cudaLaunchKernel(k, dim3(1, 1, 1), dim3(1, 1, 1), nullptr, 0, nullptr));
  manifest::call("cudaLaunchKernel", "kernelD");
  CHECK_CU(cudaMemsetAsync_ptsz(p, 0, 64, nullptr));
  manifest::call("cudaMemsetAsync_ptsz");
  CHECK_CU(cudaDeviceSynchronize());
  manifest::call("cudaDeviceSynchronize");
  CHECK_CU(cudaFree(p));
  manifest::call("cudaFree");
  manifest::free(reinterpret_cast<unsigned long long>(p));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: paths MANIFEST\n");
    return 2;
  }
  manifest::open(argv[1]);
  CHECK_CU(fake_cuda::use_primary_context());
  CUcontext ctx;
  CHECK_CU(cuCtxGetCurrent(&ctx));
  CUfunction b;
  CUfunction a = load_functions(&b);

  plain_symbols(a);
  dlsym_handle(a);
  proc_address(a, b);
  runtime_calls();

  // A second thread: the same calls must carry its own thread id.
  std::thread t([&] {
    CHECK_CU(cuCtxSetCurrent(ctx));
    plain_symbols(a);
    runtime_calls();
  });
  t.join();
  manifest::close();
  return 0;
}
