#include "shim/device_tracing.h"

#include <cuda.h>
#include <cupti.h>

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "core/log.h"

#include "core/api.h"
#include "shim/real_functions.h"
#include "shim/thread_state.h"

namespace nb::shim {

namespace {

Recorder* g_recorder = nullptr;  // set once device time started
const CuptiApi* g_api = nullptr;
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

}  // namespace

bool start_device_tracing(Recorder& recorder, CuptiJoin join, std::string& why) {
  if (!recorder.start_device(why)) return false;
  const CuptiApi& api = *recorder.cupti();
  g_api = &api;
  g_recorder = &recorder;
  if (join != CuptiJoin::Callback) return true;
  // The callback join: CUPTI's callback on each launch, copy and set hands
  // the call its correlation id.
  const CUptiResult r = api.cuptiSubscribe(&g_subscriber, on_api, nullptr);
  if (r != CUPTI_SUCCESS) {
    g_subscriber = nullptr;
    log::warn("NB_CUPTI_JOIN=callback: cuptiSubscribe: " + api.error(r) + "; device work comes without arrows");
    return true;
  }
  g_join_ids = new std::vector<CuptiCallback>(match_callbacks(api, device_work_apis()));
  g_join_live.store(true);
  enable_join(1);
  return true;
}

void hand_cupti_over(const char* call) {
  std::lock_guard<std::mutex> lock(g_handover_mu);
  if (g_handed_over || g_recorder == nullptr || g_api == nullptr) return;
  g_handed_over = true;
  // Our callbacks and our activity kinds go, and what CUPTI holds of ours
  // is handed to us before the program's callbacks replace ours.
  g_recorder->hand_over_device();
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
