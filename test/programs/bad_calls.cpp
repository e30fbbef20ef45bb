// Calls that the driver or runtime rejects — null configs, null functions,
// bad pointers — must fail exactly as they do without the shim, never crash
// it. Exits 0 when every call returned an error, as the fakes make them.
#include <cstdio>

#include "fake_cuda.h"
#include "manifest.h"

int main() {
  CHECK_CU(fake_cuda::use_primary_context());
  int failures = 0;
  failures += cuLaunchKernelEx(nullptr, nullptr, nullptr, nullptr) != CUDA_SUCCESS;
  failures += cudaLaunchKernelExC(nullptr, nullptr, nullptr) != cudaSuccess;
  failures += cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) != CUDA_SUCCESS;
  failures += cudaLaunchKernel(reinterpret_cast<const void*>(&main), dim3(1), dim3(1), nullptr, 0, nullptr) != cudaSuccess;
  failures += cuMemcpy2D_v2(nullptr) != CUDA_SUCCESS;
  failures += cuMemFree_v2(0xdead0000) != CUDA_SUCCESS;
  failures += cuMemAllocPitch_v2(nullptr, nullptr, 16, 16, 4) != CUDA_SUCCESS;
  std::printf("failures %d\n", failures);
  return failures == 7 ? 0 : 1;
}
