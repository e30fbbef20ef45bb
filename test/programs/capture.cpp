// Stream capture (argv: MODE = driver | runtime [raise | tograph]; raise:
// SIGUSR2 to itself just after the capture began, for NB_TRIGGER; tograph:
// capture into a graph made first, cu/cudaStreamBeginCaptureToGraph):
// kernels launched eagerly,
// the same kernels (same name, same grids) captured into a graph with a set,
// the graph launched with an eager kernel between launches, then the first
// eager kernels once more. Captured calls make no device work when they are
// made; a profiler that waits for their records would give the eager
// kernels after the capture to the captured calls. Launch i of a phase
// has grid (i + 1) and PHASE bytes of dynamic shared memory, which the
// order join does not compare (so the phases look alike to it) and the
// trace shows on both sides: eager before = 1, captured = 2 (their graph
// nodes keep it), the captured ones again eagerly right after the capture
// = 5, between graph launches = 3, eager after = 4.
#include <signal.h>

#include <cstring>
#include <string>

#include "fake_cuda.h"
#include "manifest.h"

namespace {
void stub_step() {}
constexpr int kEager = 4, kCaptured = 3, kLaunches = 5;
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const bool rt = std::strcmp(argv[1], "runtime") == 0;
  CHECK_CU(fake_cuda::use_primary_context());
  CUmodule mod;
  const std::string image = fake_cuda::module_image({"_Z4stepv"});
  CHECK_CU(cuModuleLoadData(&mod, image.c_str()));
  CUfunction f;
  CHECK_CU(cuModuleGetFunction(&f, mod, "_Z4stepv"));
  CHECK_CU(fakeRegisterKernel(reinterpret_cast<const void*>(&stub_step), "_Z4stepv"));
  CUstream s;
  CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr d;
  CHECK_CU(cuMemAlloc_v2(&d, 4096));
  const auto launch = [&](int i, int phase) {
    if (rt) {
      CHECK_CU(cudaLaunchKernel(reinterpret_cast<const void*>(&stub_step), dim3(i + 1), dim3(32), nullptr, phase,
                                reinterpret_cast<cudaStream_t>(s)));
    } else {
      CHECK_CU(cuLaunchKernel(f, i + 1, 1, 1, 32, 1, 1, phase, s, nullptr, nullptr));
    }
  };

  for (int i = 0; i < kEager; ++i) launch(i, 1);
  const std::string option = argc > 2 ? argv[2] : "";
  CUgraph g;
  if (option == "tograph") {
    CUgraph into;
    CHECK_CU(cuGraphCreate(&into, 0));
    if (rt) {
      CHECK_CU(cudaStreamBeginCaptureToGraph(reinterpret_cast<cudaStream_t>(s), reinterpret_cast<cudaGraph_t>(into),
                                             nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
    } else {
      CHECK_CU(cuStreamBeginCaptureToGraph(s, into, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    }
  } else if (rt) {
    CHECK_CU(cudaStreamBeginCapture(reinterpret_cast<cudaStream_t>(s), cudaStreamCaptureModeGlobal));
  } else {
    CHECK_CU(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  }
  if (option == "raise") raise(SIGUSR2);
  for (int i = 0; i < kCaptured; ++i) launch(i, 2);
  if (rt) {
    CHECK_CU(cudaMemsetAsync(reinterpret_cast<void*>(d), 0, 4096, reinterpret_cast<cudaStream_t>(s)));
    CHECK_CU(cudaStreamEndCapture(reinterpret_cast<cudaStream_t>(s), reinterpret_cast<cudaGraph_t*>(&g)));
  } else {
    CHECK_CU(cuMemsetD8Async(d, 0, 4096, s));
    CHECK_CU(cuStreamEndCapture(s, &g));
  }
  for (int i = 0; i < kCaptured; ++i) launch(i, 5);
  CUgraphExec exec;
  CHECK_CU(cuGraphInstantiateWithFlags(&exec, g, 0));
  for (int j = 0; j < kLaunches; ++j) {
    CHECK_CU(cuGraphLaunch(exec, s));
    launch(j, 3);
  }
  for (int i = 0; i < kEager; ++i) launch(i, 4);
  CHECK_CU(cuStreamSynchronize(s));
  CHECK_CU(cuMemFree_v2(d));
  return 0;
}
