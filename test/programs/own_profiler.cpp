// A program that runs its own CUPTI activity tracing partway through, as a
// program running torch.profiler does (Kineto registers its buffer
// callbacks and enables the kernel kind when the profiler starts):
//
//   own_profiler BEFORE AFTER
//
// launches BEFORE kernels, then takes CUPTI's activity buffers, launches
// AFTER kernels, flushes, and prints "own profiler saw N kernels" (it must
// see all AFTER of them with nb preloaded too). With OWN_PROFILER_DLSYM=1 it
// calls cuptiActivityRegisterCallbacks through dlsym on libcupti's handle,
// past any interposer.
#include <cupti.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fake_cuda.h"

namespace {
int g_kernels = 0;

void CUPTIAPI request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 16;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) ++g_kernels;
  }
  std::free(buffer);
}

#define CHECK_CU(x)                                       \
  do {                                                    \
    if ((x) != CUDA_SUCCESS) {                            \
      std::fprintf(stderr, "%s failed\n", #x);            \
      std::exit(3);                                       \
    }                                                     \
  } while (0)
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const int before = std::atoi(argv[1]), after = std::atoi(argv[2]);
  CHECK_CU(fake_cuda::use_primary_context());
  CUmodule mod;
  const std::string image = fake_cuda::module_image({"work_kernel"});
  CHECK_CU(cuModuleLoadData(&mod, image.c_str()));
  CUfunction fn;
  CHECK_CU(cuModuleGetFunction(&fn, mod, "work_kernel"));
  for (int i = 0; i < before; ++i) CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  CHECK_CU(cuCtxSynchronize());
  // The program's own profiler starts.
  auto register_callbacks = &cuptiActivityRegisterCallbacks;
  if (const char* d = std::getenv("OWN_PROFILER_DLSYM"); d && *d == '1') {
    void* h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    register_callbacks = reinterpret_cast<decltype(register_callbacks)>(dlvsym(h, "cuptiActivityRegisterCallbacks", "libcupti.so.13"));
  }
  if (register_callbacks == nullptr || register_callbacks(request, complete) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "own profiler: CUPTI refused\n");
    return 4;
  }
  for (int i = 0; i < after; ++i) CHECK_CU(cuLaunchKernel(fn, 2, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  CHECK_CU(cuCtxSynchronize());
  cuptiActivityFlushAll(1);
  std::printf("own profiler saw %d kernels\n", g_kernels);
  return 0;
}
