// The seed's loop, for the recording-window tests: STEPS iterations, each
// three "layer" kernels, one "lm_head" kernel (the step's last launch, for
// NB_STEP=kernel:lm_head) and a synchronous copy back to the host (for
// NB_STEP=sync). Every launch of step i has grid x = i + 1, so a window's
// device records say which steps they came from.
//
//   steps STEPS [raise=I,J,...] [profiler=A:B] [sleep_us=U] [nvtx]
//     raise=I      send SIGUSR2 to itself before step I (NB_TRIGGER tests)
//     raise_mid=I  send SIGUSR2 to itself in the middle of step I, after its
//                  second launch (a signal that comes while a step runs)
//     profiler=A:B cudaProfilerStart before step A, cudaProfilerStop after step B
//     sleep_us=U   pause between steps
//     wait_for=F   after the last step, wait (at most 20 s) until file F has
//                  content (nb claims each name with an empty file first)
//     gate=I:F     before step I (and its raise), wait the same way for file F
//                  (a window's files: nb has gone dormant by then)
//     end=HOW      then end with _exit(5), abort() or SIGKILL (HOW: _exit, abort,
//                  kill) instead of returning from main
//     comm         each step also launches an NCCL-named all-reduce kernel on
//                  a stream of its own, after the layers (a rank of a job)
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <cuda_profiler_api.h>

#include "fake_cuda.h"
#include "manifest.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const int steps = std::atoi(argv[1]);
  std::set<int> raise_at, raise_mid;
  int prof_a = -1, prof_b = -1;
  long sleep_us = 0;
  std::string wait_for, end, gate_file;
  int gate_step = -1;
  bool comm = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("raise=", 0) == 0) {
      for (char* p = std::strtok(&a[6], ","); p; p = std::strtok(nullptr, ",")) raise_at.insert(std::atoi(p));
    } else if (a.rfind("raise_mid=", 0) == 0) {
      for (char* p = std::strtok(&a[10], ","); p; p = std::strtok(nullptr, ",")) raise_mid.insert(std::atoi(p));
    } else if (a.rfind("profiler=", 0) == 0) {
      std::sscanf(a.c_str() + 9, "%d:%d", &prof_a, &prof_b);
    } else if (a.rfind("gate=", 0) == 0) {
      gate_step = std::atoi(a.c_str() + 5);
      gate_file = a.substr(a.find(':') + 1);
    } else if (a.rfind("wait_for=", 0) == 0) {
      wait_for = a.substr(9);
    } else if (a.rfind("end=", 0) == 0) {
      end = a.substr(4);
    } else if (a == "comm") {
      comm = true;
    } else if (a.rfind("sleep_us=", 0) == 0) {
      sleep_us = std::atol(a.c_str() + 9);
    }
  }
  CHECK_CU(fake_cuda::use_primary_context());
  CUmodule mod;
  const std::string image =
      fake_cuda::module_image({"layer_kernel", "lm_head", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"});
  CHECK_CU(cuModuleLoadData(&mod, image.c_str()));
  CUfunction layer, head, allreduce;
  CHECK_CU(cuModuleGetFunction(&layer, mod, "layer_kernel"));
  CHECK_CU(cuModuleGetFunction(&head, mod, "lm_head"));
  CHECK_CU(cuModuleGetFunction(&allreduce, mod, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  CUstream comm_stream = nullptr;
  if (comm) CHECK_CU(cuStreamCreate(&comm_stream, CU_STREAM_NON_BLOCKING));
  CUdeviceptr logits;
  CHECK_CU(cuMemAlloc_v2(&logits, 4096));
  std::vector<char> host(4096);

  // At most 20 s until `path` has content (nb claims each name with an empty file first).
  const auto wait_file = [](const std::string& path) {
    struct stat st {};
    for (int i = 0; !path.empty() && (stat(path.c_str(), &st) != 0 || st.st_size == 0) && i < 2000; ++i) usleep(10000);
  };
  for (int i = 0; i < steps; ++i) {
    if (i == gate_step) wait_file(gate_file);
    if (raise_at.count(i)) kill(getpid(), SIGUSR2);
    if (i == prof_a) CHECK_CU(cudaProfilerStart());
    const unsigned g = static_cast<unsigned>(i + 1);
    for (int l = 0; l < 3; ++l) {
      if (l == 2 && raise_mid.count(i)) kill(getpid(), SIGUSR2);
      CHECK_CU(cuLaunchKernel(layer, g, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
    }
    if (comm) CHECK_CU(cuLaunchKernel(allreduce, g, 1, 1, 32, 1, 1, 0, comm_stream, nullptr, nullptr));
    CHECK_CU(cuLaunchKernel(head, g, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
    CHECK_CU(cuMemcpyDtoH_v2(host.data(), logits, host.size()));
    if (i == prof_b) CHECK_CU(cudaProfilerStop());
    if (sleep_us) usleep(static_cast<useconds_t>(sleep_us));
  }
  wait_file(wait_for);
  if (end == "_exit") _exit(5);
  if (end == "abort") abort();
  if (end == "kill") kill(getpid(), SIGKILL);
  CHECK_CU(cuMemFree_v2(logits));
  return 0;
}
