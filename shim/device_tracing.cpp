#include "shim/device_tracing.h"

#include <cuda.h>
#include <cupti.h>

#include <dlfcn.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "collector/log.h"

#include "shim/api.h"
#include "shim/real_functions.h"
#include "shim/thread_state.h"

namespace nb::shim {

namespace {

const CuptiApi* g_api = nullptr;
DeviceTracer* g_tracer = nullptr;
CUpti_SubscriberHandle g_subscriber = nullptr;
std::mutex g_handover_mu;
bool g_handed_over = false;  // guarded by g_handover_mu
// The calls the callback join traces (their callback ids in both domains),
// through g_subscriber. Null with no callback join; never freed (a late
// pause must not find it gone). g_join_live goes false at the hand-over:
// from then on pause/resume leave CUPTI alone.
std::vector<CuptiCallback>* g_join_ids = nullptr;
std::atomic<bool> g_join_live{false};

void enable_join(uint8_t on) {
  if (g_api == nullptr || g_join_ids == nullptr || g_subscriber == nullptr || !g_join_live.load()) return;
  for (const CuptiCallback& c : *g_join_ids) g_api->cuptiEnableCallback(on, g_subscriber, c.domain, c.cbid);
}

// Runs inside the traced call, on the calling thread: keep the first and the
// last correlation id CUPTI hands out while the hook's call runs (a runtime
// call and the driver call inside it may each get one).
void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (d == nullptr || d->callbackSite != CUPTI_API_ENTER) return;
  ThreadState& t = t_state;
  if (t.corr_first == 0) t.corr_first = d->correlationId;
  t.corr_last = d->correlationId;
}

// Names of the hooked calls that can cause device work.
std::vector<std::string> device_work_apis() {
  std::vector<std::string> names;
  for (uint16_t id = 0; id < kApiCount; ++id) {
    const ApiInfo& a = api_info(id);
    if (is_device_work_kind(a.kind)) names.emplace_back(a.symbol);
  }
  return names;
}

template <typename Fn>
Fn driver_fn(const char* name) {
  return reinterpret_cast<Fn>(driver_symbol(name));
}

}  // namespace

bool start_device_tracing(const Options& o, DeviceTracer& tracer, std::string& why) {
  const bool callback_join = o.cupti_join == "callback";

  if (!tracer.load(o.cupti_lib, why)) return false;
  const CuptiApi& api = tracer.api();
  g_api = &api;

  // CUPTI (before 13.2) allows one subscriber per process, and its activity
  // callbacks are process-wide: if a profiler (nsys, another tool) already
  // holds it, stay out of its way before touching anything. In callback mode
  // the subscription is also the join.
  CUptiResult r = api.cuptiSubscribe(&g_subscriber, on_api, nullptr);
  if (r != CUPTI_SUCCESS) {
    why = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
              ? "CUPTI is already used by another tool in this process (a profiler?)"
              : "cuptiSubscribe: " + api.error(r);
    return false;
  }
  if (!callback_join) {
    api.cuptiUnsubscribe(g_subscriber);
    g_subscriber = nullptr;
  }
  DeviceTracerConfig config{o.cupti_buffers_mb << 20};
  if (!tracer.enable(config, why)) {
    if (g_subscriber) api.cuptiUnsubscribe(g_subscriber);
    g_subscriber = nullptr;
    return false;
  }

  if (callback_join) {
    g_join_ids = new std::vector<CuptiCallback>(match_callbacks(api, device_work_apis()));
    g_join_live.store(true);
    enable_join(1);
  }
  g_tracer = &tracer;
  return true;
}

void hand_cupti_over(const char* call) {
  std::lock_guard<std::mutex> lock(g_handover_mu);
  if (g_handed_over || g_tracer == nullptr || g_api == nullptr) return;
  g_handed_over = true;
  // Our callbacks and our activity kinds go, and what CUPTI holds of ours
  // is handed to us before the program's callbacks replace ours.
  g_tracer->hand_over();
  enable_join(0);
  g_join_live.store(false);
  if (g_subscriber != nullptr) {
    g_api->cuptiUnsubscribe(g_subscriber);
    g_subscriber = nullptr;
  }
  log::warn(std::string("the program started its own CUPTI client (") + call +
            ", as torch.profiler does): nb leaves CUPTI to it and records no more device time; host calls and "
            "memory go on");
}

void pause_device_callbacks() { enable_join(0); }
void resume_device_callbacks() { enable_join(1); }

bool synchronize_devices(std::chrono::milliseconds limit) {
  using GetCurrent = CUresult (*)(CUcontext*);
  using SetCurrent = CUresult (*)(CUcontext);
  using Sync = CUresult (*)();
  using Count = CUresult (*)(int*);
  using Get = CUresult (*)(CUdevice*, int);
  using State = CUresult (*)(CUdevice, unsigned int*, int*);
  using Retain = CUresult (*)(CUcontext*, CUdevice);
  using Release = CUresult (*)(CUdevice);
  auto get_current = driver_fn<GetCurrent>("cuCtxGetCurrent");
  auto set_current = driver_fn<SetCurrent>("cuCtxSetCurrent");
  auto sync = driver_fn<Sync>("cuCtxSynchronize");
  auto count = driver_fn<Count>("cuDeviceGetCount");
  auto get = driver_fn<Get>("cuDeviceGet");
  auto state = driver_fn<State>("cuDevicePrimaryCtxGetState");
  auto retain = driver_fn<Retain>("cuDevicePrimaryCtxRetain");
  auto release = driver_fn<Release>("cuDevicePrimaryCtxRelease_v2");
  if (!get_current || !set_current || !sync) return true;
  CUcontext mine = nullptr;
  get_current(&mine);
  // Work may run in any thread's context on any device: wait for the
  // calling thread's context and for every active primary context. On a
  // helper thread, with a limit, because a device that never finishes (a
  // collective waiting for a dead peer) must not keep the process from
  // exiting.
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread helper([=] {
    t_state.internal = true;
    if (mine) {
      set_current(mine);
      sync();
    }
    int n = 0;
    if (count && get && state && retain && release && count(&n) == CUDA_SUCCESS) {
      for (int i = 0; i < n; ++i) {
        CUdevice dev;
        unsigned int flags = 0;
        int active = 0;
        CUcontext ctx = nullptr;
        if (get(&dev, i) != CUDA_SUCCESS || state(dev, &flags, &active) != CUDA_SUCCESS || !active) continue;
        if (retain(&ctx, dev) != CUDA_SUCCESS) continue;
        set_current(ctx);
        sync();
        release(dev);
      }
    }
    done->set_value();
  });
  if (finished.wait_for(limit) == std::future_status::ready) {
    helper.join();
    return true;
  }
  helper.detach();  // still waiting for the device; the process exits anyway
  return false;
}

std::vector<formats::DeviceProperties> query_devices() {
  using Count = CUresult (*)(int*);
  using Get = CUresult (*)(CUdevice*, int);
  using Name = CUresult (*)(char*, int, CUdevice);
  using Mem = CUresult (*)(size_t*, CUdevice);
  using Attr = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  auto count = driver_fn<Count>("cuDeviceGetCount");
  auto get = driver_fn<Get>("cuDeviceGet");
  auto name = driver_fn<Name>("cuDeviceGetName");
  auto mem = driver_fn<Mem>("cuDeviceTotalMem_v2");
  auto attr = driver_fn<Attr>("cuDeviceGetAttribute");
  std::vector<formats::DeviceProperties> out;
  int n = 0;
  if (!count || !get || !name || !mem || !attr || count(&n) != CUDA_SUCCESS) return out;
  for (int i = 0; i < n; ++i) {
    CUdevice dev;
    if (get(&dev, i) != CUDA_SUCCESS) continue;
    formats::DeviceProperties p;
    p.id = i;
    char buf[256] = {};
    if (name(buf, sizeof buf - 1, dev) == CUDA_SUCCESS) p.name = buf;
    size_t total = 0;
    if (mem(&total, dev) == CUDA_SUCCESS) p.total_global_mem = total;
    const auto a = [&](CUdevice_attribute which) {
      int v = 0;
      return attr(&v, which, dev) == CUDA_SUCCESS ? v : 0;
    };
    p.compute_major = a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    p.compute_minor = a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    p.max_threads_per_block = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p.max_threads_per_multiprocessor = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    p.regs_per_block = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    p.warp_size = a(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    p.shared_mem_per_block = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    p.num_sms = a(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p.regs_per_multiprocessor = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    p.shared_mem_per_block_optin = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    p.shared_mem_per_multiprocessor = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    out.push_back(p);
  }
  return out;
}

}  // namespace nb::shim

// CUPTI's entry points that a profiler inside the program calls when it
// starts (Kineto, for torch.profiler, subscribes and registers its buffer
// callbacks). CUPTI takes one subscriber and one set of buffer callbacks per
// process: nb hands CUPTI over first, then the call goes to CUPTI as if nb
// were not there. nb's own CUPTI calls go through its function table, not
// through these.
namespace {
template <typename Fn>
Fn real_cupti(const char* name) {
  void* p = dlvsym(RTLD_NEXT, name, "libcupti.so.13");
  if (p == nullptr) p = nb::shim::real_dlsym(RTLD_NEXT, name);
  if (p == nullptr) {
    // Loaded RTLD_LOCAL (a Python extension's dependency): by its soname.
    if (void* h = dlopen("libcupti.so.13", RTLD_NOLOAD | RTLD_LAZY)) {
      p = nb::shim::real_dlsym(h, name);
      dlclose(h);
    }
  }
  return reinterpret_cast<Fn>(p);
}
}  // namespace

extern "C" __attribute__((visibility("default"))) CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber,
                                                                            CUpti_CallbackFunc callback,
                                                                            void* userdata) {
  try {
    nb::shim::hand_cupti_over("cuptiSubscribe");
  } catch (...) {
  }
  auto real = real_cupti<CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*)>("cuptiSubscribe");
  return real ? real(subscriber, callback, userdata) : CUPTI_ERROR_NOT_INITIALIZED;
}

extern "C" __attribute__((visibility("default"))) CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc requested, CUpti_BuffersCallbackCompleteFunc completed) {
  try {
    nb::shim::hand_cupti_over("cuptiActivityRegisterCallbacks");
  } catch (...) {
  }
  auto real = real_cupti<CUptiResult (*)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc)>(
      "cuptiActivityRegisterCallbacks");
  return real ? real(requested, completed) : CUPTI_ERROR_NOT_INITIALIZED;
}
