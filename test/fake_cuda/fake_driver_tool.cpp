// Fake CUDA driver, part 5: the tool interface (fake_cuda_tool.h), through
// which the fake CUPTI sees API calls and device work.
//
// Each thread keeps a chain of the API calls it is inside, innermost first:
// driver calls (FAKE_ENTRY) and runtime calls (fakeCudaToolApiEnter, from
// the fake runtime) alike. Calls are chained whether or not a tool is
// registered, so a tool that arrives in the middle of a call still sees the
// right parent for the calls made after it arrived. Each call remembers the
// tool that saw its entry, so entry and exit always reach the same tool and
// a call entered before any tool existed is never reported half.
#include "fake_driver_internal.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fake {
namespace {

std::atomic<const FakeCudaToolHooks*> g_tool{nullptr};

thread_local const FakeCudaApiCall* t_innermost = nullptr;

void enter(FakeCudaApiCall* call) {
    call->context = current_context_handle();
    call->parent = t_innermost;
    call->tool = g_tool.load(std::memory_order_acquire);
    t_innermost = call;
    if (call->tool != nullptr) call->tool->api_enter(call);
}

void leave(FakeCudaApiCall* call) {
    if (call->tool != nullptr) call->tool->api_exit(call);
    // Calls nest (RAII in the driver, LIFO by contract for the runtime), so
    // the parent is what was innermost before this call.
    t_innermost = call->parent;
}

}  // namespace

const fake_cupti_ids::ApiId& driver_api_id(const char* exported_name) {
    const fake_cupti_ids::ApiId* id = fake_cupti_ids::find_exported(CUPTI_CB_DOMAIN_DRIVER_API, exported_name);
    if (id == nullptr) {
        // A new export without a row in fake_cupti_ids.h: fail loudly rather
        // than let the fake CUPTI miss the function.
        std::fprintf(stderr, "fake_cuda: %s has no row in fake_cupti_ids.h\n", exported_name);
        std::abort();
    }
    return *id;
}

ApiScope::ApiScope(const fake_cupti_ids::ApiId& id) {
    call_.domain = id.domain;
    call_.cbid = id.cbid;
    call_.name = id.cupti_name;
    enter(&call_);
}

ApiScope::~ApiScope() { leave(&call_); }

bool tool_watching() { return t_innermost != nullptr && t_innermost->tool != nullptr; }

void report_work(FakeCudaWork& work) {
    const FakeCudaApiCall* call = t_innermost;
    if (call == nullptr || call->tool == nullptr) return;
    // Every stream-ordered copy and set entry point, and only those, has
    // "Async" in its name (cuMemcpyHtoDAsync_v2, cuMemsetD8Async_ptsz).
    work.async = std::strstr(call->name, "Async") != nullptr;
    call->tool->device_work(call, &work);
}

}  // namespace fake

// ----------------------------------------------------------------------------
// Exported entry points (fake_cuda_tool.h). Not driver API functions: no
// FAKE_ENTRY, and they are never reported themselves.
// ----------------------------------------------------------------------------

int fakeCudaToolRegister(const FakeCudaToolHooks* hooks) {
    if (hooks != nullptr && hooks->version != FAKE_CUDA_TOOL_VERSION) return -1;
    fake::g_tool.store(hooks, std::memory_order_release);
    return 0;
}

void fakeCudaToolApiEnter(FakeCudaApiCall* call) {
    if (call != nullptr) fake::enter(call);
}

void fakeCudaToolApiExit(FakeCudaApiCall* call) {
    if (call != nullptr) fake::leave(call);
}
