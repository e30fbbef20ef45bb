// NVTX ranges as the program's regions (the table's total and self rows):
//
//   regions STEPS           each step one range "decode_step" around 21
//                           launches of "layer"
//   regions STEPS nested    each step a range "outer": 3 launches of "a",
//                           a range "inner" with 5 launches of "b", then 2
//                           more of "a"
//
// Every kernel of the fake driver takes the same device time, so a region's
// device time is its launches' count times that.
#include <nvtx3/nvToolsExt.h>

#include <cstdlib>
#include <cstring>

#include "fake_cuda.h"
#include "manifest.h"

namespace {

void layer() {}
void a() {}
void b() {}

void launch(void (*k)(), int n) {
  for (int i = 0; i < n; ++i) {
    CHECK_CU(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(1), dim3(32), nullptr, 0, nullptr));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int steps = std::atoi(argv[1]);
  const bool nested = argc > 2 && std::strcmp(argv[2], "nested") == 0;
  CHECK_CU(fakeRegisterKernel(reinterpret_cast<const void*>(&layer), "layer"));
  CHECK_CU(fakeRegisterKernel(reinterpret_cast<const void*>(&a), "a"));
  CHECK_CU(fakeRegisterKernel(reinterpret_cast<const void*>(&b), "b"));
  for (int i = 0; i < steps; ++i) {
    if (!nested) {
      nvtxRangePushA("decode_step");
      launch(layer, 21);
      nvtxRangePop();
    } else {
      nvtxRangePushA("outer");
      launch(a, 3);
      nvtxRangePushA("inner");
      launch(b, 5);
      nvtxRangePop();
      launch(a, 2);
      nvtxRangePop();
    }
    CHECK_CU(cudaDeviceSynchronize());
  }
  return 0;
}
