// A launch-bound loop on a real GPU: an empty kernel launched back to back in
// bursts of 500 (a synchronize between bursts, off the clock, so the launch
// queue never fills). What a tracer adds to one launch shows here apart from
// Python's noise.
//
//   launch_loop [BURSTS] [nb | cupti:FLAGS]
//
// Prints "launch_ns median M p90 P max X" over the bursts. With a second
// argument, a tracer goes off and on every 10 bursts inside the process, so
// both sides run at the machine's speed of the moment, and the program also
// prints "on A off B added A-B" (medians of the bursts with it on and off):
//   nb            under the shim with NB_TRIGGER=signal: the program sends
//                 itself SIGUSR2, which opens or closes nb's window
//   cupti:FLAGS   CUPTI used directly, without nb (cupti_floor.c; FLAGS as
//                 there, e.g. cupti:act or cupti:act,ts,cb,flush), from
//                 libnbb_cupti_floor.so beside this program, loaded only then
//
//   nvcc -O2 -arch=sm_90 -o launch_loop launch_loop.cu    (bench/nbbench carry)
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

__global__ void empty() {}

struct Floor {
  int (*on)(const char*) = nullptr;
  int (*off)() = nullptr;
};

// libnbb_cupti_floor.so from this program's folder.
static Floor load_floor() {
  char self[PATH_MAX] = {};
  Floor f;
  if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0) return f;
  std::string path(self);
  path = path.substr(0, path.rfind('/') + 1) + "libnbb_cupti_floor.so";
  if (void* h = dlopen(path.c_str(), RTLD_NOW)) {
    f.on = reinterpret_cast<int (*)(const char*)>(dlsym(h, "nbb_cupti_on"));
    f.off = reinterpret_cast<int (*)()>(dlsym(h, "nbb_cupti_off"));
  } else {
    std::fprintf(stderr, "launch_loop: %s\n", dlerror());
  }
  return f;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int main(int argc, char** argv) {
  const int bursts = argc > 1 ? std::atoi(argv[1]) : 400;
  const std::string tracer = argc > 2 ? argv[2] : "";
  const bool nb = tracer == "nb";
  const bool cupti = tracer.rfind("cupti:", 0) == 0;
  const Floor floor = cupti ? load_floor() : Floor();
  if (cupti && !floor.on) return 4;
  const int per_burst = 500;
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) return 1;
  for (int i = 0; i < 2000; ++i) empty<<<1, 32, 0, s>>>();
  cudaStreamSynchronize(s);
  std::vector<double> ns(bursts), on, off;
  bool tracing = false;
  for (int b = 0; b < bursts; ++b) {
    const bool want = (nb || cupti) && (b / 10) % 2 == 0;
    if ((nb || cupti) && b % 10 == 0 && want != tracing) {
      if (nb) {
        raise(SIGUSR2);            // opens or closes nb's window
        cudaStreamSynchronize(s);  // nb arms at the next CUDA call
        usleep(300000);            // a closed window is written meanwhile, off the clock
      } else if (const int rc = want ? floor.on(tracer.c_str() + 6) : floor.off()) {
        std::fprintf(stderr, "launch_loop: CUPTI error %d\n", rc);
        return 3;
      }
      tracing = want;
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
  std::printf("launch_ns median %.1f p90 %.1f max %.1f\n", sorted[bursts / 2], sorted[bursts * 9 / 10], sorted.back());
  if (nb || cupti) std::printf("on %.1f off %.1f added %.1f\n", median(on), median(off), median(on) - median(off));
  return 0;
}
