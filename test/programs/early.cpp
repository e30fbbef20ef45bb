// Links test/programs/early_lib.cpp, whose constructor uses CUDA before a
// preloaded nb has run its own constructors; then allocates once itself.
// Prints "early STATUS" (0: the constructor's calls all succeeded).
#include <cuda.h>

#include <cstdio>

extern "C" int early_lib_status();

int main() {
  const int status = early_lib_status();
  std::printf("early %d\n", status);
  CUdeviceptr p = 0;
  if (cuMemAlloc(&p, 8192) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) return 3;
  return status == 0 ? 0 : 2;
}
