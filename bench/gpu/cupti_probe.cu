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
//     ext       the external-correlation join (as nb's NB_CUPTI_JOIN=external):
//               EXTERNAL_CORRELATION activity, API activity for the launch
//               ids only (runtime and driver; extrt: runtime only; extdrv:
//               driver only), an id pushed (kind CUSTOM0; with k2: CUSTOM2)
//               around every launch; prints the return codes and what came
//               back. nb's external join joined nothing on the H200
//               (docs/gpu-validation.md): this tells which part fails.
//     api       API activity records for the launch ids only (runtime and
//               driver), no external ids: the cost of a join that matches
//               each API record (thread, start, end, correlationId) to the
//               hook around it
//     ab        in-process pairs: the activity kinds go off and on again
//               every 10 bursts, and the line also gives the median with
//               them on, with them off, and the added ns — the machine's
//               speed changes over seconds, so this pairs like with like
//               (with cb, the launch callbacks go off and on with them)
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
static std::atomic<long> g_records{0}, g_api_records{0}, g_ext_records{0}, g_ext_kind{-1};
static void CUPTIAPI complete(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  long n = 0;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
    ++n;
    if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) ++g_api_records;
    if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      ++g_ext_records;
      g_ext_kind = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(r)->externalKind;
    }
  }
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
  const bool ext = has("ext") || has("extrt") || has("extdrv");
  const bool api = has("api");
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
    if (ext) {
      const int k = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
      const int rt = has("extdrv") ? -1 : cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1);
      const int drv = has("extrt") ? -1 : cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
      std::printf("rc kind %d rt %d drv %d ", k, rt, drv);
    }
    if (api) {
      std::printf("rc rt %d drv %d ", cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1),
                  cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1));
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
  const bool ab = has("ab") && (has("act") || has("konly"));
  std::vector<double> on, off;
  auto kinds = [&](bool enable) {
    auto f = enable ? cuptiActivityEnable : cuptiActivityDisable;
    f(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (has("act")) {
      f(CUPTI_ACTIVITY_KIND_MEMCPY);
      f(CUPTI_ACTIVITY_KIND_MEMSET);
    }
    if (ext) f(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    if (api || ext) {
      if (!has("extdrv")) cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, enable);
      if (!has("extrt")) cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, enable);
    }
    if (sub) {
      cuptiEnableCallback(enable, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
      cuptiEnableCallback(enable, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    }
  };
  for (int b = 0; b < bursts; ++b) {
    const bool now_on = !ab || (b / 10) % 2 == 0;
    if (ab && b % 10 == 0) kinds(now_on);
    const auto t0 = std::chrono::steady_clock::now();
    if (ext) {
      const auto k = has("k2") ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
      uint64_t id = 0;
      for (int i = 0; i < per_burst; ++i) {
        const int pr = cuptiActivityPushExternalCorrelationId(k, b * per_burst + i + 1);
        empty<<<1, 32, 0, s>>>();
        const int po = cuptiActivityPopExternalCorrelationId(k, &id);
        if (b == 0 && i == 0) std::printf("push %d pop %d ", pr, po);
      }
    } else {
      for (int i = 0; i < per_burst; ++i) empty<<<1, 32, 0, s>>>();
    }
    const auto t1 = std::chrono::steady_clock::now();
    ns[b] = std::chrono::duration<double, std::nano>(t1 - t0).count() / per_burst;
    cudaStreamSynchronize(s);
    (now_on ? on : off).push_back(ns[b]);
  }
  threads_report();
  stop = true;
  if (flusher.joinable()) flusher.join();
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  std::vector<double> a(ns.begin(), ns.begin() + bursts / 2), b(ns.begin() + bursts / 2, ns.end());
  std::vector<double> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::printf("launch_ns median %.1f p90 %.1f halves %.1f %.1f records %ld corr %u", sorted[bursts / 2],
              sorted[bursts * 9 / 10], med(a), med(b), g_records.load(), t_corr);
  if (ext || api)
    std::printf(" api_records %ld ext_records %ld ext_kind %ld", g_api_records.load(), g_ext_records.load(),
                g_ext_kind.load());
  if (ab) std::printf(" on %.1f off %.1f added %.1f", med(on), med(off), med(on) - med(off));
  std::printf("\n");
  return 0;
}
