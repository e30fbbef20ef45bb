// A library that carries its own CUDA runtime, the way cuBLAS or NCCL link
// cudart statically: nothing links it to libcuda; it dlopens libcuda.so.1,
// asks cuGetProcAddress_v2 for what it needs, and lets go of the driver when
// it is unloaded (test/programs/reload.cpp dlopens and dlcloses it).
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

namespace {
void* g_driver = nullptr;
__attribute__((destructor)) void let_go() {
  if (g_driver != nullptr) dlclose(g_driver);
}
}  // namespace

// Stores libcuda's base address in *driver_base.
extern "C" __attribute__((visibility("default"))) int reload_lib_work(void** driver_base) {
  g_driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_driver == nullptr) return 1;
  auto gpa = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(g_driver, "cuGetProcAddress_v2"));
  if (gpa == nullptr) return 2;
  // From the handle: with nb preloaded, the pointers are nb's.
  link_map* lm = nullptr;
  if (dlinfo(g_driver, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr) *driver_base = reinterpret_cast<void*>(lm->l_addr);
  void *init = nullptr, *alloc = nullptr, *free_ = nullptr, *memset_ = nullptr, *get = nullptr, *retain = nullptr,
       *set = nullptr;
  CUdriverProcAddressQueryResult st;
  if (gpa("cuInit", &init, 12000, 0, &st) || gpa("cuMemAlloc", &alloc, 12000, 0, &st) ||
      gpa("cuMemFree", &free_, 12000, 0, &st) || gpa("cuMemsetD8", &memset_, 12000, 0, &st) ||
      gpa("cuDeviceGet", &get, 12000, 0, &st) || gpa("cuDevicePrimaryCtxRetain", &retain, 12000, 0, &st) ||
      gpa("cuCtxSetCurrent", &set, 12000, 0, &st))
    return 3;
  if (reinterpret_cast<decltype(&cuInit)>(init)(0) != CUDA_SUCCESS) return 4;
  CUdevice dev;
  CUcontext ctx;
  if (reinterpret_cast<decltype(&cuDeviceGet)>(get)(&dev, 0) != CUDA_SUCCESS ||
      reinterpret_cast<decltype(&cuDevicePrimaryCtxRetain)>(retain)(&ctx, dev) != CUDA_SUCCESS ||
      reinterpret_cast<decltype(&cuCtxSetCurrent)>(set)(ctx) != CUDA_SUCCESS)
    return 8;
  CUdeviceptr p = 0;
  if (reinterpret_cast<decltype(&cuMemAlloc_v2)>(alloc)(&p, 1 << 16) != CUDA_SUCCESS) return 5;
  if (reinterpret_cast<decltype(&cuMemsetD8_v2)>(memset_)(p, 0, 1 << 16) != CUDA_SUCCESS) return 6;
  if (reinterpret_cast<decltype(&cuMemFree_v2)>(free_)(p) != CUDA_SUCCESS) return 7;
  return 0;
}
