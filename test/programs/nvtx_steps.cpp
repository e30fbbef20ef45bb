// NVTX ranges around steps, the way training loops mark them, through the
// header-only NVTX v3 API compiled into this program (no libnvToolsExt):
// the shim sees them only through NVTX's injection interface.
//
//   nvtx_steps N [cold]
//
// One process range "run" (nvtxRangeStartA / nvtxRangeEnd) around N steps;
// each step is a thread range "step" (nvtxRangePushA / nvtxRangePop) holding
// a nested "inner" range on its own domain, named by a registered string
// (nvtxDomainRangePushEx / nvtxDomainRangePop), and one kernel launch
// through the runtime. Like a training loop, it allocates on the device
// (cudaMalloc) before its first range; with "cold" it does not, so the first
// ranges come before any CUDA call the shim records (it starts at the first).
//
// Prints the levels NVTX returned, one line per step:
//   step I push L pop L inner push L pop L
// With the shim all are 0 ("inner" is level 0 of its own domain's stack);
// without a tool NVTX answers -2 (NVTX_NO_PUSH_POP_TRACKING).
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fake_cuda.h"
#include "manifest.h"

namespace {

void step_kernel() {}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int steps = std::atoi(argv[1]);
  const bool cold = argc > 2 && std::strcmp(argv[2], "cold") == 0;
  void* weights = nullptr;
  if (!cold) CHECK_CU(cudaMalloc(&weights, 1 << 20));
  CHECK_CU(fakeRegisterKernel(reinterpret_cast<const void*>(&step_kernel), "step_kernel"));

  nvtxDomainHandle_t domain = nvtxDomainCreateA("nb.test");
  nvtxStringHandle_t inner_name = nvtxDomainRegisterStringA(domain, "inner");
  nvtxEventAttributes_t inner = {};
  inner.version = NVTX_VERSION;
  inner.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  inner.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  inner.message.registered = inner_name;

  const nvtxRangeId_t run = nvtxRangeStartA("run");
  for (int i = 0; i < steps; ++i) {
    const int step_push = nvtxRangePushA("step");
    const int inner_push = nvtxDomainRangePushEx(domain, &inner);
    // grid x = step + 1: a window's kernels say which steps it holds
    CHECK_CU(cudaLaunchKernel(reinterpret_cast<const void*>(&step_kernel), dim3(i + 1), dim3(32), nullptr, 0, nullptr));
    const int inner_pop = nvtxDomainRangePop(domain);
    CHECK_CU(cudaDeviceSynchronize());
    const int step_pop = nvtxRangePop();
    std::printf("step %d push %d pop %d inner push %d pop %d\n", i, step_push, step_pop, inner_push, inner_pop);
  }
  nvtxRangeEnd(run);
  if (weights != nullptr) CHECK_CU(cudaFree(weights));
  return 0;
}
