// Per-launch host cost of an empty kernel on a real GPU, to see what CUPTI
// (and each nb join mode) adds to one launch, apart from Python's noise.
// Launches in bursts of 500 with a synchronize between bursts (untimed), so
// the launch queue never fills; prints the median, p90 and max ns per launch
// over the bursts, and the slowest single burst's total.
//
//   nvcc -O2 -arch=sm_90 -o launch_cupti bench/gpu/launch_cupti.cu
//   ./launch_cupti [BURSTS] [ab]
//
// With "ab" (under the shim with NB_TRIGGER=signal) the program sends itself
// SIGUSR2 every 10 bursts, so nb records and sleeps by turns inside one
// process; it then also prints the median with nb recording ("on"), with
// nb dormant ("off"), and the difference. The machine's speed changes over
// seconds; pairs inside one process compare like with like.
#include <cuda_runtime.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void empty() {}

int main(int argc, char** argv) {
  const int bursts = argc > 1 ? std::atoi(argv[1]) : 400;
  const int per_burst = 500;
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) return 1;
  for (int i = 0; i < 2000; ++i) empty<<<1, 32, 0, s>>>();
  cudaStreamSynchronize(s);
  const bool ab = argc > 2 && std::string(argv[2]) == "ab";
  std::vector<double> ns(bursts), on, off;
  bool recording = false;
  for (int b = 0; b < bursts; ++b) {
    const bool want = !ab || (b / 10) % 2 == 0;
    if (ab && b % 10 == 0 && want != recording) {
      raise(SIGUSR2);           // opens or closes nb's window
      cudaStreamSynchronize(s);  // nb arms at the next CUDA call
      usleep(300000);            // a closed window is written meanwhile, off the clock
      recording = want;
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < per_burst; ++i) empty<<<1, 32, 0, s>>>();
    const auto t1 = std::chrono::steady_clock::now();
    ns[b] = std::chrono::duration<double, std::nano>(t1 - t0).count() / per_burst;
    cudaStreamSynchronize(s);
    (want ? on : off).push_back(ns[b]);
  }
  if (cudaGetLastError() != cudaSuccess) return 2;
  std::vector<double> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  std::printf("launch_ns median %.1f p90 %.1f max %.1f\n", sorted[bursts / 2], sorted[bursts * 9 / 10],
              sorted.back());
  if (ab) {
    auto med = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("on %.1f off %.1f added %.1f\n", med(on), med(off), med(on) - med(off));
  }
  return 0;
}
