// A library that uses CUDA from its own constructor, as libcublasLt does
// (it looks up driver functions with dlsym while the program is still being
// loaded). A library the program links runs its constructors before those
// of a preloaded one: nb's hooks are reached before nb's own constructors
// have run. test/programs/early.cpp links it.
#include <cuda.h>
#include <dlfcn.h>

namespace {
int g_status = -1;

int work() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return 1;
  // Plain dlsym on the handle first (what crashed nb), then the way a
  // static runtime goes on: cuGetProcAddress for the rest.
  if (dlsym(driver, "cuModuleUnload") == nullptr) return 2;
  auto gpa = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(driver, "cuGetProcAddress_v2"));
  if (gpa == nullptr) return 3;
  void *init = nullptr, *get = nullptr, *retain = nullptr, *set = nullptr, *alloc = nullptr, *memset_ = nullptr,
       *free_ = nullptr;
  CUdriverProcAddressQueryResult st;
  if (gpa("cuInit", &init, 12000, 0, &st) || gpa("cuDeviceGet", &get, 12000, 0, &st) ||
      gpa("cuDevicePrimaryCtxRetain", &retain, 12000, 0, &st) || gpa("cuCtxSetCurrent", &set, 12000, 0, &st) ||
      gpa("cuMemAlloc", &alloc, 12000, 0, &st) || gpa("cuMemsetD8", &memset_, 12000, 0, &st) ||
      gpa("cuMemFree", &free_, 12000, 0, &st))
    return 4;
  CUdevice dev;
  CUcontext ctx;
  if (reinterpret_cast<decltype(&cuInit)>(init)(0) != CUDA_SUCCESS ||
      reinterpret_cast<decltype(&cuDeviceGet)>(get)(&dev, 0) != CUDA_SUCCESS ||
      reinterpret_cast<decltype(&cuDevicePrimaryCtxRetain)>(retain)(&ctx, dev) != CUDA_SUCCESS ||
      reinterpret_cast<decltype(&cuCtxSetCurrent)>(set)(ctx) != CUDA_SUCCESS)
    return 5;
  CUdeviceptr p = 0;
  if (reinterpret_cast<decltype(&cuMemAlloc)>(alloc)(&p, 4096) != CUDA_SUCCESS) return 6;
  if (reinterpret_cast<decltype(&cuMemsetD8)>(memset_)(p, 1, 4096) != CUDA_SUCCESS) return 7;
  if (reinterpret_cast<decltype(&cuMemFree)>(free_)(p) != CUDA_SUCCESS) return 8;
  return 0;  // the driver stays loaded, as a runtime keeps it
}

__attribute__((constructor)) void at_load() { g_status = work(); }
}  // namespace

extern "C" __attribute__((visibility("default"))) int early_lib_status() { return g_status; }
