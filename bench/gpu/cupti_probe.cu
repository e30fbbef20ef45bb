// What makes CUPTI's per-launch cost on the launching thread bimodal from
// one process to the next (about 0.6 µs or about 2.7 µs added to a 4.3 µs
// empty-kernel launch on the H200 VM, see docs/performance.md)? CUPTI used
// directly, without nb, with one variation per process:
//
//   cupti_probe FLAGS [BURSTS]     FLAGS: comma list, or "bare"
//     act       CONCURRENT_KERNEL + MEMCPY + MEMSET activity (as nb)
//     konly     CONCURRENT_KERNEL only
//     ts        our timestamp callback (CLOCK_MONOTONIC), as nb
//     pinned    CUPTI's device-side buffers in pinned host memory
//     nothread  one global activity buffer instead of per-thread ones
//     cb        a callback subscription on the runtime launch (as nb's join)
//     flush     cuptiActivityFlushAll(0) every 250 ms from a helper thread
//
// Prints the median, p90 ns per launch (bursts of 500, synchronize between
// bursts), the first and second half's medians, and where each thread ran
// last (CPU number), to compare with the topology.
#include <cuda_runtime.h>
#include <cupti.h>
#include <dirent.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

__global__ void empty() {}

static void CUPTIAPI request(uint8_t** b, size_t* size, size_t* max) {
  *b = static_cast<uint8_t*>(std::aligned_alloc(8, 4 << 20));
  *size = 4 << 20;
  *max = 0;
}
static std::atomic<long> g_records{0};
static void CUPTIAPI complete(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  long n = 0;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) ++n;
  g_records += n;
  std::free(b);
}
static uint64_t CUPTIAPI host_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return uint64_t(t.tv_sec) * 1000000000u + t.tv_nsec;
}
static thread_local uint32_t t_corr;
static void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* d) {
  t_corr = static_cast<const CUpti_CallbackData*>(d)->correlationId;
}

static void threads_report() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return;
  std::printf("threads");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string base = std::string("/proc/self/task/") + e->d_name;
    char name[64] = {}, stat[1024] = {};
    if (FILE* f = std::fopen((base + "/comm").c_str(), "r")) { std::fgets(name, sizeof name, f); std::fclose(f); }
    if (FILE* f = std::fopen((base + "/stat").c_str(), "r")) { std::fgets(stat, sizeof stat, f); std::fclose(f); }
    name[strcspn(name, "\n")] = 0;
    // field 39 = processor; count fields after the ")" of comm
    const char* p = std::strrchr(stat, ')');
    int field = 2, cpu = -1;
    for (; p && *p; ++p) if (*p == ' ' && ++field == 39) { cpu = std::atoi(p + 1); break; }
    std::printf(" %s@%d", name, cpu);
  }
  closedir(d);
  std::printf("\n");
}

int main(int argc, char** argv) {
  const std::string flags = argc > 1 ? argv[1] : "bare";
  const int bursts = argc > 2 ? std::atoi(argv[2]) : 400;
  auto has = [&](const char* f) { return ("," + flags + ",").find(std::string(",") + f + ",") != std::string::npos; };
  cudaFree(nullptr);  // driver up
  std::atomic<bool> stop{false};
  std::thread flusher;
  CUpti_SubscriberHandle sub = nullptr;
  if (has("act") || has("konly")) {
    if (has("pinned")) {
      uint8_t v = 1; size_t s = sizeof v;
      cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, &s, &v);
    }
    if (has("nothread")) {
      uint8_t v = 0; size_t s = sizeof v;
      cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &s, &v);
    }
    if (has("ts")) cuptiActivityRegisterTimestampCallback(host_ns);
    cuptiActivityRegisterCallbacks(request, complete);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (has("act")) {
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    }
    if (has("cb")) {
      cuptiSubscribe(&sub, on_api, nullptr);
      cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
      cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    }
    if (has("flush")) {
      flusher = std::thread([&] {
        while (!stop) {
          std::this_thread::sleep_for(std::chrono::milliseconds(250));
          cuptiActivityFlushAll(0);
        }
      });
    }
  }
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) return 1;
  const int per_burst = 500;
  for (int i = 0; i < 2000; ++i) empty<<<1, 32, 0, s>>>();
  cudaStreamSynchronize(s);
  std::vector<double> ns(bursts);
  for (int b = 0; b < bursts; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < per_burst; ++i) empty<<<1, 32, 0, s>>>();
    const auto t1 = std::chrono::steady_clock::now();
    ns[b] = std::chrono::duration<double, std::nano>(t1 - t0).count() / per_burst;
    cudaStreamSynchronize(s);
  }
  threads_report();
  stop = true;
  if (flusher.joinable()) flusher.join();
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  std::vector<double> a(ns.begin(), ns.begin() + bursts / 2), b(ns.begin() + bursts / 2, ns.end());
  std::vector<double> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::printf("launch_ns median %.1f p90 %.1f halves %.1f %.1f records %ld corr %u\n", sorted[bursts / 2],
              sorted[bursts * 9 / 10], med(a), med(b), g_records.load(), t_corr);
  return 0;
}
