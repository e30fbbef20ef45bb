// Smoke test of the fake CUPTI (libcupti.so.13) over the fake driver and
// runtime, driven the way nb drives CUPTI: dlopen + dlsym, the timestamp
// callback before any kind is enabled, buffer callbacks, callback ids picked
// by name, one subscriber, an external correlation id pushed around each call.
//
// Runs twice (see meson.build): with FAKE_CUPTI_CORRELATION unset, device
// work must carry the id of the outermost call (the runtime's, for a runtime
// call), with FAKE_CUPTI_CORRELATION=inner the id of the driver call that
// enqueued it. Expects FAKE_CUDA_DEVICES=2 and LD_LIBRARY_PATH at the fakes.
// Prints every failed check and exits 0 only if there is none.
#include "fake_cuda.h"

#include <cupti.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace {

int g_checks = 0;
int g_failures = 0;

void check(bool ok, const char* what, int line) {
    ++g_checks;
    if (!ok) {
        ++g_failures;
        std::fprintf(stderr, "cupti_smoke.cpp:%d: FAILED: %s\n", line, what);
    }
}
#define CHECK(cond) check((cond), #cond, __LINE__)
#define CHECK_CU(call) check((call) == CUDA_SUCCESS, #call, __LINE__)
#define CHECK_CUPTI(call, expected) check((call) == (expected), #call " == " #expected, __LINE__)
// Like CHECK, with context for a check made in a loop.
#define CHECK_AT(cond, what) check((cond), (std::string(#cond) + " [" + (what) + "]").c_str(), __LINE__)

bool outer_mode() {
    const char* v = std::getenv("FAKE_CUPTI_CORRELATION");
    return v == nullptr || std::strcmp(v, "inner") != 0;
}

uint64_t monotonic_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

uint64_t CUPTIAPI timestamp() { return monotonic_ns(); }

// ---------------------------------------------------------------------------
// CUPTI, loaded as nb loads it.
// ---------------------------------------------------------------------------
#define CUPTI_FUNCTIONS(X)                  \
    X(cuptiGetVersion)                      \
    X(cuptiGetResultString)                 \
    X(cuptiActivityEnable)                  \
    X(cuptiActivityDisable)                 \
    X(cuptiActivityRegisterCallbacks)       \
    X(cuptiActivityRegisterTimestampCallback) \
    X(cuptiActivityFlushAll)                \
    X(cuptiActivityGetNextRecord)           \
    X(cuptiActivityGetNumDroppedRecords)    \
    X(cuptiActivityEnableDriverApi)         \
    X(cuptiActivityEnableRuntimeApi)        \
    X(cuptiActivityPushExternalCorrelationId) \
    X(cuptiActivityPopExternalCorrelationId) \
    X(cuptiSubscribe)                       \
    X(cuptiUnsubscribe)                     \
    X(cuptiEnableCallback)                  \
    X(cuptiGetCallbackName)

struct Cupti {
#define CUPTI_MEMBER(name) decltype(&::name) name = nullptr;
    CUPTI_FUNCTIONS(CUPTI_MEMBER)
#undef CUPTI_MEMBER
};
Cupti api;

bool load_cupti() {
    void* h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        std::fprintf(stderr, "cupti_smoke: %s\n", dlerror());
        return false;
    }
    bool ok = true;
#define CUPTI_RESOLVE(name)                                                    \
    api.name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));           \
    if (api.name == nullptr) {                                                 \
        std::fprintf(stderr, "cupti_smoke: libcupti.so.13 has no " #name "\n"); \
        ok = false;                                                            \
    }
    CUPTI_FUNCTIONS(CUPTI_RESOLVE)
#undef CUPTI_RESOLVE
    // A handle's lookup covers the library and what it links: the driver's
    // tool entry point must be in neither (CUPTI exports cupti* only and
    // reaches libcuda.so.1 by dlopen).
    CHECK(dlsym(h, "fakeCudaToolRegister") == nullptr);
    CHECK(dlsym(h, "cuInit") == nullptr);
    return ok;
}

// nb's rule: "cudaMemcpy_v3020" -> "cudaMemcpy"; "cuMemcpyHtoD_v2" stays.
std::string strip_version(const std::string& name) {
    const size_t v = name.rfind("_v");
    if (v == std::string::npos || name.size() - v - 2 < 4) return name;
    for (size_t i = v + 2; i < name.size(); ++i)
        if (name[i] < '0' || name[i] > '9') return name;
    return name.substr(0, v);
}

// ---------------------------------------------------------------------------
// What the subscriber saw. The test mirrors which cbids have API activity on,
// so each entry knows whether CUPTI had to write API / external records.
// ---------------------------------------------------------------------------
std::mutex g_mu;  // everything below; CUPTI calls us from several threads

struct Enter {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    std::string name;
    uint32_t correlation;
    std::thread::id thread;
    bool api_activity;  // API activity was on for the cbid at the time
};
std::vector<Enter> g_enters;
std::set<std::pair<int, uint32_t>> g_api_activity;  // (domain, cbid), the mirror
CUpti_SubscriberHandle g_subscriber = nullptr;
size_t g_exits = 0;
size_t g_bad_exits = 0;       // correlation id or data differing from the entry's
size_t g_bad_names = 0;       // functionName differing from cuptiGetCallbackName's
constexpr uint64_t kMagic = 0x5eed5eed5eed5eedull;

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* cbdata) {
    const auto* d = static_cast<const CUpti_CallbackData*>(cbdata);
    const char* expected_name = nullptr;
    api.cuptiGetCallbackName(domain, cbid, &expected_name);
    std::lock_guard<std::mutex> g(g_mu);
    if (d->functionName == nullptr || expected_name == nullptr || std::strcmp(d->functionName, expected_name) != 0)
        ++g_bad_names;
    if (d->callbackSite == CUPTI_API_ENTER) {
        *d->correlationData = kMagic ^ d->correlationId;  // must come back at the exit
        g_enters.push_back({domain, cbid, d->functionName ? d->functionName : "", d->correlationId,
                            std::this_thread::get_id(), g_api_activity.count({domain, cbid}) != 0});
    } else {
        ++g_exits;
        if (*d->correlationData != (kMagic ^ d->correlationId)) ++g_bad_exits;
    }
}

// ---------------------------------------------------------------------------
// Buffers and the records they held, in delivery order.
// ---------------------------------------------------------------------------
constexpr size_t kBufferBytes = 1024;  // small, so that buffers fill up (a kernel record is 216 bytes)

struct Record {
    CUpti_ActivityKind kind;
    size_t seq;  // position in delivery order
    std::vector<uint8_t> bytes;
    template <typename T>
    T as() const {
        T r;
        std::memcpy(&r, bytes.data(), sizeof r);
        return r;
    }
};
std::vector<Record> g_records;
std::atomic<bool> g_refuse{false};
size_t g_requests = 0, g_refused = 0, g_deliveries = 0, g_dropped = 0;
size_t g_bad_buffers = 0;  // misaligned records, bad sizes, iteration not ending in MAX_LIMIT_REACHED

size_t record_size(CUpti_ActivityKind kind) {
    switch (kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
        case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
        case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
        case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
        case CUPTI_ACTIVITY_KIND_DRIVER:
        case CUPTI_ACTIVITY_KIND_RUNTIME: return sizeof(CUpti_ActivityAPI);
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
        default: return 0;
    }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *max_records = 0;
    std::lock_guard<std::mutex> g(g_mu);
    if (g_refuse) {
        ++g_refused;
        *buffer = nullptr;
        *size = 0;
        return;
    }
    ++g_requests;
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = kBufferBytes;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t size, size_t valid) {
    std::lock_guard<std::mutex> g(g_mu);
    ++g_deliveries;
    if (size != kBufferBytes || valid > size) ++g_bad_buffers;
    CUpti_Activity* rec = nullptr;
    CUptiResult r;
    while ((r = api.cuptiActivityGetNextRecord(buffer, valid, &rec)) == CUPTI_SUCCESS) {
        const size_t offset = static_cast<size_t>(reinterpret_cast<uint8_t*>(rec) - buffer);
        const size_t bytes = record_size(rec->kind);
        if (offset % 8 != 0 || bytes == 0 || offset + bytes > valid) {
            ++g_bad_buffers;
            break;
        }
        Record copy{rec->kind, g_records.size(), std::vector<uint8_t>(buffer + offset, buffer + offset + bytes)};
        g_records.push_back(std::move(copy));
    }
    if (r != CUPTI_ERROR_MAX_LIMIT_REACHED) ++g_bad_buffers;
    size_t dropped = 0;
    if (api.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
    std::free(buffer);
}

// ---------------------------------------------------------------------------
// Operations: one host call each (plus what it calls), bracketed by an
// external correlation id. Afterwards the callback tells which correlation
// id its device work must carry and which external records CUPTI owes.
// ---------------------------------------------------------------------------
struct Op {
    std::string what;
    std::string carrier;      // CUPTI name of the call whose id the device work carries
    CUpti_ActivityKind kind;  // of its device records
    size_t records = 0;       // how many
    uint64_t external_id = 0;
    uint64_t start_ns = 0;
    uint32_t correlation = 0;  // the carrier's, as the callback saw it
};
std::vector<Op> g_ops;
std::multiset<std::pair<uint64_t, uint32_t>> g_expected_external;  // (external id, correlation id)
uint64_t g_next_external = 1000;

// outer / inner: CUPTI names of the calls carrying the id in either mode
// (the same for a driver call). Returns the op's index.
size_t op(const std::string& what, const char* outer, const char* inner, CUpti_ActivityKind kind, size_t records,
          const std::function<void()>& fn) {
    Op o;
    o.what = what;
    o.carrier = outer_mode() ? outer : inner;
    o.kind = kind;
    o.records = records;
    o.external_id = g_next_external++;
    size_t first = 0;
    {
        std::lock_guard<std::mutex> g(g_mu);
        first = g_enters.size();
    }
    o.start_ns = monotonic_ns();
    CHECK_CUPTI(api.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, o.external_id),
                CUPTI_SUCCESS);
    fn();
    uint64_t popped = 0;
    CHECK_CUPTI(api.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &popped),
                CUPTI_SUCCESS);
    CHECK(popped == o.external_id);
    std::lock_guard<std::mutex> g(g_mu);
    for (size_t i = first; i < g_enters.size(); ++i) {
        const Enter& e = g_enters[i];
        if (o.correlation == 0 && e.name == o.carrier) o.correlation = e.correlation;
        // The pushed id covers the calls of this thread that have API activity.
        if (e.api_activity && e.thread == std::this_thread::get_id())
            g_expected_external.insert({o.external_id, e.correlation});
    }
    CHECK_AT(o.correlation != 0, what + ": no callback for " + o.carrier);
    g_ops.push_back(o);
    return g_ops.size() - 1;
}

// The device records that carry an op's correlation id, in delivery order.
std::vector<const Record*> device_records_of(const Op& o) {
    std::vector<const Record*> out;
    for (const Record& r : g_records) {
        uint32_t corr = 0;
        switch (r.kind) {
            case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: corr = r.as<CUpti_ActivityKernel10>().correlationId; break;
            case CUPTI_ACTIVITY_KIND_MEMCPY: corr = r.as<CUpti_ActivityMemcpy6>().correlationId; break;
            case CUPTI_ACTIVITY_KIND_MEMCPY2: corr = r.as<CUpti_ActivityMemcpyPtoP4>().correlationId; break;
            case CUPTI_ACTIVITY_KIND_MEMSET: corr = r.as<CUpti_ActivityMemset4>().correlationId; break;
            default: continue;
        }
        if (corr == o.correlation) out.push_back(&r);
    }
    return out;
}

// Timing and placement of any device record.
struct Placed {
    uint32_t device, context, stream, correlation;
    uint64_t start, end;
};

bool placed(const Record& r, Placed* p) {
    switch (r.kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
            const auto k = r.as<CUpti_ActivityKernel10>();
            *p = {k.deviceId, k.contextId, k.streamId, k.correlationId, k.start, k.end};
            return true;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const auto m = r.as<CUpti_ActivityMemcpy6>();
            *p = {m.deviceId, m.contextId, m.streamId, m.correlationId, m.start, m.end};
            return true;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY2: {
            const auto m = r.as<CUpti_ActivityMemcpyPtoP4>();
            *p = {m.deviceId, m.contextId, m.streamId, m.correlationId, m.start, m.end};
            return true;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET: {
            const auto m = r.as<CUpti_ActivityMemset4>();
            *p = {m.deviceId, m.contextId, m.streamId, m.correlationId, m.start, m.end};
            return true;
        }
        default: return false;
    }
}

// ---------------------------------------------------------------------------
// The program under test
// ---------------------------------------------------------------------------
void stub_r() {}

struct Setup {
    CUcontext c0 = nullptr, c1 = nullptr;
    CUfunction a = nullptr, b = nullptr, node = nullptr;
    CUstream s1 = nullptr, s2 = nullptr;
    unsigned long long s1_id = 0, s2_id = 0;
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
};

void test_basics() {
    uint32_t version = 0;
    CHECK_CUPTI(api.cuptiGetVersion(&version), CUPTI_SUCCESS);
    CHECK(version == 130001);
    const char* text = nullptr;
    CHECK_CUPTI(api.cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &text), CUPTI_SUCCESS);
    CHECK(text != nullptr && std::strcmp(text, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") == 0);

    // Names: the real ones, for exactly the functions the fakes export.
    const char* name = nullptr;
    CHECK_CUPTI(api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &name),
                CUPTI_SUCCESS);
    CHECK(name != nullptr && std::strcmp(name, "cuLaunchKernel") == 0);
    CHECK_CUPTI(
        api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz, &name),
        CUPTI_SUCCESS);
    CHECK(name != nullptr && std::strcmp(name, "cuMemcpyHtoDAsync_v2_ptsz") == 0);
    CHECK_CUPTI(api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                         &name),
                CUPTI_SUCCESS);
    CHECK(name != nullptr && std::strcmp(name, "cudaLaunchKernel_v7000") == 0);
    CHECK_CUPTI(api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API,
                                         CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &name),
                CUPTI_SUCCESS);
    CHECK(name != nullptr && std::strcmp(name, "__cudaLaunchKernel_v13000") == 0);
    CHECK_CUPTI(api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunch, &name),
                CUPTI_ERROR_INVALID_PARAMETER);  // not a function of the fake
    CHECK_CUPTI(api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, 0, &name), CUPTI_ERROR_INVALID_PARAMETER);
    CHECK_CUPTI(api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_RESOURCE, 1, &name), CUPTI_ERROR_INVALID_PARAMETER);

    // External correlation stacks.
    uint64_t id = 0;
    CHECK_CUPTI(api.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id),
                CUPTI_ERROR_QUEUE_EMPTY);
    CHECK_CUPTI(api.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, 1),
                CUPTI_ERROR_INVALID_PARAMETER);
    CHECK_CUPTI(api.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 7), CUPTI_SUCCESS);
    CHECK_CUPTI(api.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 8), CUPTI_SUCCESS);
    CHECK_CUPTI(api.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, &id), CUPTI_SUCCESS);
    CHECK(id == 8);
    CHECK_CUPTI(api.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, nullptr),
                CUPTI_SUCCESS);

    // Record iteration on its own.
    alignas(8) uint8_t empty[64] = {};
    CUpti_Activity* rec = nullptr;
    CHECK_CUPTI(api.cuptiActivityGetNextRecord(nullptr, 0, &rec), CUPTI_ERROR_INVALID_PARAMETER);
    CHECK_CUPTI(api.cuptiActivityGetNextRecord(empty, 0, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
    CHECK_CUPTI(api.cuptiActivityGetNextRecord(empty, sizeof empty, &rec), CUPTI_ERROR_INVALID_KIND);  // kind 0
}

// Registration and enabling, in nb's order, with the failure modes on the way.
void start_tracing() {
    CHECK_CUPTI(api.cuptiActivityFlushAll(0), CUPTI_ERROR_INVALID_OPERATION);  // no buffer callbacks yet
    CHECK_CUPTI(api.cuptiActivityRegisterTimestampCallback(timestamp), CUPTI_SUCCESS);
    setenv("FAKE_CUPTI_FAIL", "1", 1);
    CHECK_CUPTI(api.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), CUPTI_ERROR_NOT_INITIALIZED);
    unsetenv("FAKE_CUPTI_FAIL");
    CHECK_CUPTI(api.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), CUPTI_SUCCESS);
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                 CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
                                 CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION})
        CHECK_CUPTI(api.cuptiActivityEnable(k), CUPTI_SUCCESS);
    CHECK_CUPTI(api.cuptiActivityEnable(static_cast<CUpti_ActivityKind>(100000)), CUPTI_ERROR_INVALID_KIND);

    // One subscriber per process; FAKE_CUPTI_BUSY: someone else has it.
    CUpti_SubscriberHandle& sub = g_subscriber;
    CUpti_SubscriberHandle second = nullptr;
    setenv("FAKE_CUPTI_BUSY", "1", 1);
    CHECK_CUPTI(api.cuptiSubscribe(&sub, on_api, nullptr), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    unsetenv("FAKE_CUPTI_BUSY");
    CHECK_CUPTI(api.cuptiSubscribe(&sub, on_api, nullptr), CUPTI_SUCCESS);
    CHECK_CUPTI(api.cuptiSubscribe(&second, on_api, nullptr), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);

    // Callback ids by name, as nb picks them: every id CUPTI can name, and
    // among them the launches, copies and sets nb hooks.
    const std::set<std::string> hooked = {"cuLaunchKernel",   "cuLaunchKernel_ptsz", "cuGraphLaunch",
                                          "cuMemcpyHtoD_v2",  "cuMemsetD32Async",    "cudaLaunchKernel",
                                          "__cudaLaunchKernel", "cudaMemcpyAsync",   "cudaLaunchKernel_ptsz"};
    std::set<std::string> picked;
    size_t named = 0;
    const struct {
        CUpti_CallbackDomain domain;
        uint32_t count;
    } domains[] = {{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE},
                   {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE}};
    for (const auto& d : domains) {
        for (uint32_t cbid = 1; cbid < d.count; ++cbid) {
            const char* name = nullptr;
            if (api.cuptiGetCallbackName(d.domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
            ++named;
            if (hooked.count(strip_version(name))) picked.insert(strip_version(name));
            // Every callback but one, to see that a disabled cbid stays silent.
            if (d.domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent) continue;
            CHECK_CUPTI(api.cuptiEnableCallback(1, sub, d.domain, cbid), CUPTI_SUCCESS);
        }
    }
    CHECK(picked == hooked);
    CHECK(named > 200);  // one per exported function of the fakes
    CHECK_CUPTI(api.cuptiEnableCallback(1, second, CUPTI_CB_DOMAIN_DRIVER_API, 1), CUPTI_ERROR_INVALID_PARAMETER);

    // API activity for two launch functions only.
    CHECK_CUPTI(api.cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1), CUPTI_SUCCESS);
    CHECK_CUPTI(api.cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1), CUPTI_SUCCESS);
    CHECK_CUPTI(api.cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_SIZE, 1), CUPTI_ERROR_INVALID_PARAMETER);
    std::lock_guard<std::mutex> g(g_mu);
    g_api_activity.insert({CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel});
    g_api_activity.insert({CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000});
}

void set_runtime_activity(bool on) {
    CHECK_CUPTI(on ? api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME)
                   : api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME),
                CUPTI_SUCCESS);
    // The kind overrides the per-cbid choices of the whole domain.
    std::lock_guard<std::mutex> g(g_mu);
    for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
        if (on)
            g_api_activity.insert({CUPTI_CB_DOMAIN_RUNTIME_API, cbid});
        else
            g_api_activity.erase({CUPTI_CB_DOMAIN_RUNTIME_API, cbid});
    }
}

Setup setup_program() {
    Setup s;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&s.c0, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&s.c1, 1));
    CHECK_CU(cuCtxSetCurrent(s.c0));
    CUmodule mod = nullptr;
    const std::string image = fake_cuda::module_image({"_Z7kernelAPf", "_Z7kernelBPfi", "node_kernel"});
    CHECK_CU(cuModuleLoadData(&mod, image.c_str()));
    CHECK_CU(cuModuleGetFunction(&s.a, mod, "_Z7kernelAPf"));
    CHECK_CU(cuModuleGetFunction(&s.b, mod, "_Z7kernelBPfi"));
    CHECK_CU(cuModuleGetFunction(&s.node, mod, "node_kernel"));
    CHECK_CU(cuStreamCreate(&s.s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s.s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamGetId(s.s1, &s.s1_id));
    CHECK_CU(cuStreamGetId(s.s2, &s.s2_id));
    // A chain of three kernel nodes.
    CHECK_CU(cuGraphCreate(&s.graph, 0));
    CUgraphNode prev = nullptr;
    for (unsigned i = 0; i < 3; ++i) {
        CUDA_KERNEL_NODE_PARAMS p = {};
        p.func = s.node;
        p.gridDimX = 1 + i;
        p.gridDimY = p.gridDimZ = 1;
        p.blockDimX = 32;
        p.blockDimY = p.blockDimZ = 1;
        p.sharedMemBytes = 64;
        CUgraphNode n = nullptr;
        CHECK_CU(cuGraphAddKernelNode_v2(&n, s.graph, prev ? &prev : nullptr, prev ? 1 : 0, &p));
        prev = n;
    }
    CHECK_CU(cuGraphInstantiateWithFlags(&s.exec, s.graph, 0));
    CHECK(fakeRegisterKernel(reinterpret_cast<const void*>(&stub_r), "_Z7kernelRv") == 0);
    return s;
}

constexpr size_t kBytes = 1 << 16;

struct Memory {
    CUdeviceptr d0 = 0, d0b = 0, d1 = 0;
    void* pinned = nullptr;
    std::vector<char> host = std::vector<char>(kBytes, 1);
};

// Everything the device does in the main phase. Indices of a few ops are
// kept for the detailed checks.
struct Indices {
    size_t a_s1, b_s2, ptsz, ptsz_worker, ex, coop, graph, htod, htod_pinned, dtoh, dtod, peer, copy2d, set32, set16,
        set2d, rt_launch, rt_launch_internal, rt_memcpy, rt_memset_all_runtime, rt_launch_runtime_off, rt_graph,
        probe_first, probe_second;
};

Indices run_program(const Setup& s, Memory& m) {
    Indices ix{};
    CHECK_CU(cuMemAlloc_v2(&m.d0, kBytes));
    CHECK_CU(cuMemAlloc_v2(&m.d0b, kBytes));
    CHECK_CU(cuMemAllocHost_v2(&m.pinned, kBytes));
    CHECK_CU(cuCtxSetCurrent(s.c1));
    CHECK_CU(cuMemAlloc_v2(&m.d1, kBytes));
    CHECK_CU(cuCtxSetCurrent(s.c0));

    const auto K = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    const auto C = CUPTI_ACTIVITY_KIND_MEMCPY;
    const auto S = CUPTI_ACTIVITY_KIND_MEMSET;

    // Kernels on two streams, the per-thread stream (of two threads), Ex, cooperative.
    ix.a_s1 = op("cuLaunchKernel A on s1", "cuLaunchKernel", "cuLaunchKernel", K, 1,
                 [&] { CHECK_CU(cuLaunchKernel(s.a, 8, 1, 1, 128, 1, 1, 0, s.s1, nullptr, nullptr)); });
    for (int i = 0; i < 2; ++i)
        op("cuLaunchKernel A on s1 again", "cuLaunchKernel", "cuLaunchKernel", K, 1,
           [&] { CHECK_CU(cuLaunchKernel(s.a, 8, 1, 1, 128, 1, 1, 0, s.s1, nullptr, nullptr)); });
    ix.b_s2 = op("cuLaunchKernel B on s2", "cuLaunchKernel", "cuLaunchKernel", K, 1,
                 [&] { CHECK_CU(cuLaunchKernel(s.b, 4, 4, 1, 32, 4, 1, 1024, s.s2, nullptr, nullptr)); });
    op("cuLaunchKernel B on s2 again", "cuLaunchKernel", "cuLaunchKernel", K, 1,
       [&] { CHECK_CU(cuLaunchKernel(s.b, 4, 4, 1, 32, 4, 1, 1024, s.s2, nullptr, nullptr)); });
    ix.ptsz = op("cuLaunchKernel_ptsz", "cuLaunchKernel_ptsz", "cuLaunchKernel_ptsz", K, 1,
                 [&] { CHECK_CU(cuLaunchKernel_ptsz(s.a, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr)); });
    ix.ptsz_worker = op("cuLaunchKernel_ptsz on another thread", "cuLaunchKernel_ptsz", "cuLaunchKernel_ptsz", K, 1, [&] {
        std::thread t([&] {
            CHECK_CU(cuCtxSetCurrent(s.c0));
            CHECK_CU(cuLaunchKernel_ptsz(s.a, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr));
        });
        t.join();
    });
    ix.ex = op("cuLaunchKernelEx", "cuLaunchKernelEx", "cuLaunchKernelEx", K, 1, [&] {
        CUlaunchConfig cfg = {};
        cfg.gridDimX = 2;
        cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = 256;
        cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.sharedMemBytes = 512;
        cfg.hStream = s.s1;
        CHECK_CU(cuLaunchKernelEx(&cfg, s.b, nullptr, nullptr));
    });
    ix.coop = op("cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", K, 1, [&] {
        CHECK_CU(cuLaunchCooperativeKernel(s.a, 2, 1, 1, 32, 1, 1, 0, s.s2, nullptr));
    });
    ix.graph = op("cuGraphLaunch", "cuGraphLaunch", "cuGraphLaunch", K, 3,
                  [&] { CHECK_CU(cuGraphLaunch(s.exec, s.s1)); });

    // Copies and sets through the driver.
    ix.htod = op("cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2", C, 1,
                 [&] { CHECK_CU(cuMemcpyHtoD_v2(m.d0, m.host.data(), kBytes)); });
    ix.htod_pinned = op("cuMemcpyHtoDAsync_v2 from pinned", "cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync_v2", C, 1,
                        [&] { CHECK_CU(cuMemcpyHtoDAsync_v2(m.d0, m.pinned, kBytes, s.s2)); });
    ix.dtoh = op("cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2", C, 1,
                 [&] { CHECK_CU(cuMemcpyDtoH_v2(m.host.data(), m.d0, kBytes)); });
    ix.dtod = op("cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2", C, 1,
                 [&] { CHECK_CU(cuMemcpyDtoDAsync_v2(m.d0b, m.d0, kBytes, s.s2)); });
    ix.peer = op("cuMemcpyPeer", "cuMemcpyPeer", "cuMemcpyPeer", CUPTI_ACTIVITY_KIND_MEMCPY2, 1,
                 [&] { CHECK_CU(cuMemcpyPeer(m.d1, s.c1, m.d0, s.c0, kBytes)); });
    ix.copy2d = op("cuMemcpy2D_v2", "cuMemcpy2D_v2", "cuMemcpy2D_v2", C, 1, [&] {
        CUDA_MEMCPY2D p = {};
        p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        p.srcDevice = m.d0;
        p.srcPitch = 256;
        p.dstMemoryType = CU_MEMORYTYPE_HOST;
        p.dstHost = m.host.data();
        p.dstPitch = 512;
        p.WidthInBytes = 200;
        p.Height = 16;
        CHECK_CU(cuMemcpy2D_v2(&p));
    });
    ix.set32 = op("cuMemsetD32Async", "cuMemsetD32Async", "cuMemsetD32Async", S, 1,
                  [&] { CHECK_CU(cuMemsetD32Async(m.d0, 0xabcd, 256, s.s1)); });
    ix.set16 = op("cuMemsetD16_v2", "cuMemsetD16_v2", "cuMemsetD16_v2", S, 1,
                  [&] { CHECK_CU(cuMemsetD16_v2(m.d0, 7, 100)); });
    ix.set2d = op("cuMemsetD2D8_v2", "cuMemsetD2D8_v2", "cuMemsetD2D8_v2", S, 1,
                  [&] { CHECK_CU(cuMemsetD2D8_v2(m.d0b, 512, 1, 300, 10)); });

    // Through the runtime: outer mode carries the runtime call's id.
    const void* stub = reinterpret_cast<const void*>(&stub_r);
    ix.rt_launch = op("cudaLaunchKernel", "cudaLaunchKernel_v7000", "cuLaunchKernel", K, 1, [&] {
        CHECK(cudaLaunchKernel(stub, dim3(1), dim3(32), nullptr, 0, nullptr) == cudaSuccess);
    });
    ix.rt_launch_internal = op("__cudaLaunchKernel", "__cudaLaunchKernel_v13000", "cuLaunchKernel", K, 1, [&] {
        cudaKernel_t k = nullptr;
        CHECK(__cudaGetKernel(&k, stub) == cudaSuccess);
        CHECK(__cudaLaunchKernel(k, dim3(2), dim3(32), nullptr, 0, nullptr) == cudaSuccess);
    });
    ix.rt_memcpy = op("cudaMemcpyAsync", "cudaMemcpyAsync_v3020", "cuMemcpyAsync", C, 1, [&] {
        CHECK(cudaMemcpyAsync(m.host.data(), reinterpret_cast<void*>(m.d0), 4096, cudaMemcpyDeviceToHost, nullptr) ==
              cudaSuccess);
    });
    ix.rt_graph = op("cudaGraphLaunch", "cudaGraphLaunch_v10000", "cuGraphLaunch", K, 3,
                     [&] { CHECK(cudaGraphLaunch(s.exec, s.s2) == cudaSuccess); });

    // The RUNTIME kind turns API activity on for every runtime function...
    set_runtime_activity(true);
    ix.rt_memset_all_runtime = op("cudaMemsetAsync, RUNTIME on", "cudaMemsetAsync_v3020", "cuMemsetD8Async", S, 1, [&] {
        CHECK(cudaMemsetAsync(reinterpret_cast<void*>(m.d0), 0, 4096, nullptr) == cudaSuccess);
    });
    // ...and off, cudaLaunchKernel's own setting included.
    set_runtime_activity(false);
    ix.rt_launch_runtime_off = op("cudaLaunchKernel, RUNTIME off", "cudaLaunchKernel_v7000", "cuLaunchKernel", K, 1,
                                  [&] {
                                      CHECK(cudaLaunchKernel(stub, dim3(1), dim3(32), nullptr, 0, nullptr) ==
                                            cudaSuccess);
                                  });

    // Correlation ids are taken by traced calls and calls that make work
    // (FAKE_CUPTI_IDS=every: by every call).
    ix.probe_first = op("probe 1", "cuLaunchKernel", "cuLaunchKernel", K, 1,
                        [&] { CHECK_CU(cuLaunchKernel(s.a, 1, 1, 1, 1, 1, 1, 0, s.s1, nullptr, nullptr)); });
    CUcontext cur = nullptr;
    CHECK_CU(cuCtxGetCurrent(&cur));  // its callback is off
    ix.probe_second = op("probe 2", "cuLaunchKernel", "cuLaunchKernel", K, 1,
                         [&] { CHECK_CU(cuLaunchKernel(s.a, 1, 1, 1, 1, 1, 1, 0, s.s1, nullptr, nullptr)); });

    CHECK_CUPTI(api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    return ix;
}

void check_callbacks(const Indices& ix) {
    std::lock_guard<std::mutex> g(g_mu);
    CHECK(g_bad_names == 0);
    CHECK(g_bad_exits == 0);
    CHECK(g_exits == g_enters.size());
    uint32_t last = 0;
    bool increasing = true, probe_silent = true;
    for (const Enter& e : g_enters) {
        if (e.thread == std::this_thread::get_id()) {
            increasing = increasing && e.correlation > last;
            last = e.correlation;
        }
        if (e.name == "cuCtxGetCurrent") probe_silent = false;
    }
    CHECK(increasing);
    CHECK(probe_silent);
    // Between the probes: one untraced call without work (cuCtxGetCurrent),
    // two pops and a push, which are no API calls: no id skipped, or one
    // with FAKE_CUPTI_IDS=every.
    const char* ids = std::getenv("FAKE_CUPTI_IDS");
    const uint32_t step = ids != nullptr && std::string(ids) == "every" ? 2 : 1;
    CHECK(g_ops[ix.probe_second].correlation == g_ops[ix.probe_first].correlation + step);
}

void check_records(const Setup& s, const Indices& ix) {
    std::lock_guard<std::mutex> g(g_mu);
    CHECK(g_bad_buffers == 0);
    CHECK(g_deliveries >= 3);  // several buffers filled up
    CHECK(g_requests >= g_deliveries);
    CHECK(g_dropped == 0);

    // Every device record belongs to an op, and each op has its records.
    std::map<uint32_t, size_t> op_of;  // correlation -> op
    for (size_t i = 0; i < g_ops.size(); ++i) op_of[g_ops[i].correlation] = i;
    std::map<size_t, size_t> count;
    std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<uint64_t, uint64_t>>> lanes;
    std::set<uint32_t> device0_contexts;
    for (const Record& r : g_records) {
        Placed p{};
        if (!placed(r, &p)) continue;
        const auto it = op_of.find(p.correlation);
        CHECK_AT(it != op_of.end(), "device record kind " + std::to_string(r.kind) + " correlation " +
                                        std::to_string(p.correlation));
        if (it == op_of.end()) continue;
        const Op& o = g_ops[it->second];
        ++count[it->second];
        CHECK_AT(r.kind == o.kind, o.what);
        CHECK_AT(p.start >= o.start_ns && p.end > p.start, o.what);
        if (p.device == 0) device0_contexts.insert(p.context);
        lanes[{p.device, p.stream}].push_back({p.start, p.end});
    }
    for (size_t i = 0; i < g_ops.size(); ++i)
        CHECK_AT(count[i] == g_ops[i].records, g_ops[i].what + ": " + std::to_string(count[i]) + " device records");
    CHECK(device0_contexts.size() == 1 && *device0_contexts.begin() != 0);
    // Work on one stream never overlaps.
    for (auto& lane : lanes) {
        std::sort(lane.second.begin(), lane.second.end());
        for (size_t i = 1; i < lane.second.size(); ++i)
            CHECK_AT(lane.second[i].first >= lane.second[i - 1].second, "stream " + std::to_string(lane.first.second));
    }

    // External correlation: exactly for the calls with API activity, each
    // before the device records of its correlation id.
    std::multiset<std::pair<uint64_t, uint32_t>> external;
    std::map<uint32_t, size_t> first_external_seq;
    std::multiset<std::tuple<int, uint32_t, uint32_t>> api_records, api_expected;
    for (const Record& r : g_records) {
        if (r.kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            const auto e = r.as<CUpti_ActivityExternalCorrelation>();
            CHECK(e.externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
            external.insert({e.externalId, e.correlationId});
            first_external_seq.emplace(e.correlationId, r.seq);
        }
        if (r.kind == CUPTI_ACTIVITY_KIND_DRIVER || r.kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
            const auto a = r.as<CUpti_ActivityAPI>();
            api_records.insert({r.kind, a.cbid, a.correlationId});
            CHECK(a.start <= a.end && a.end != 0);
        }
    }
    CHECK(external == g_expected_external);
    for (const Enter& e : g_enters) {
        if (!e.api_activity) continue;
        const int kind = e.domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
        api_expected.insert({kind, e.cbid, e.correlation});
    }
    CHECK(api_records == api_expected);
    for (const Record& r : g_records) {
        Placed p{};
        if (!placed(r, &p)) continue;
        const auto e = first_external_seq.find(p.correlation);
        if (e != first_external_seq.end()) CHECK(e->second < r.seq);
    }
    // Which ops had some: the launch functions with activity on, and
    // cudaMemsetAsync while the whole RUNTIME kind was; not the copies.
    auto has_external = [&](size_t i) {
        for (const auto& e : g_expected_external)
            if (e.first == g_ops[i].external_id) return true;
        return false;
    };
    CHECK(has_external(ix.a_s1));
    CHECK(has_external(ix.rt_launch));
    CHECK(has_external(ix.rt_memset_all_runtime));
    CHECK(!has_external(ix.htod));
    CHECK(!has_external(ix.ptsz));
    CHECK(!has_external(ix.graph));
    // cudaLaunchKernel with RUNTIME off: only its inner cuLaunchKernel's.
    size_t n = 0;
    for (const auto& e : g_expected_external) n += e.first == g_ops[ix.rt_launch_runtime_off].external_id;
    CHECK(n == 1);

    // Details of the records.
    const uint64_t kernel_ns = 2000;
    for (const Record* r : device_records_of(g_ops[ix.a_s1])) {
        const auto k = r->as<CUpti_ActivityKernel10>();
        CHECK(k.name != nullptr && std::strcmp(k.name, "_Z7kernelAPf") == 0);
        CHECK(k.gridX == 8 && k.gridY == 1 && k.gridZ == 1 && k.blockX == 128 && k.blockY == 1 && k.blockZ == 1);
        CHECK(k.dynamicSharedMemory == 0 && k.registersPerThread > 0);
        CHECK(k.deviceId == 0 && k.streamId == s.s1_id);
        CHECK(k.end - k.start == kernel_ns && k.completed == k.end);
        CHECK(k.graphId == 0 && k.graphNodeId == 0);
        CHECK(k.launchType == CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR);
    }
    for (const Record* r : device_records_of(g_ops[ix.b_s2])) {
        const auto k = r->as<CUpti_ActivityKernel10>();
        CHECK(k.name != nullptr && std::strcmp(k.name, "_Z7kernelBPfi") == 0);
        CHECK(k.gridX == 4 && k.gridY == 4 && k.blockX == 32 && k.blockY == 4 && k.dynamicSharedMemory == 1024);
        CHECK(k.streamId == s.s2_id);
    }
    // Per-thread default streams: 32-bit ids from 2^31, in order of first use.
    for (const Record* r : device_records_of(g_ops[ix.ptsz])) CHECK(r->as<CUpti_ActivityKernel10>().streamId == 1u << 31);
    for (const Record* r : device_records_of(g_ops[ix.ptsz_worker]))
        CHECK(r->as<CUpti_ActivityKernel10>().streamId == (1u << 31) + 1);
    for (const Record* r : device_records_of(g_ops[ix.ex])) {
        const auto k = r->as<CUpti_ActivityKernel10>();
        CHECK(k.gridX == 2 && k.blockX == 256 && k.dynamicSharedMemory == 512 && k.streamId == s.s1_id);
    }
    for (const Record* r : device_records_of(g_ops[ix.coop]))
        CHECK(r->as<CUpti_ActivityKernel10>().launchType == CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE);
    for (size_t which : {ix.graph, ix.rt_graph}) {
        std::set<uint64_t> nodes;
        std::set<uint32_t> graphs;
        std::set<int32_t> grids;
        for (const Record* r : device_records_of(g_ops[which])) {
            const auto k = r->as<CUpti_ActivityKernel10>();
            CHECK(k.name != nullptr && std::strcmp(k.name, "node_kernel") == 0);
            CHECK(k.dynamicSharedMemory == 64 && k.blockX == 32);
            CHECK(k.streamId == (which == ix.graph ? s.s1_id : s.s2_id));
            nodes.insert(k.graphNodeId);
            graphs.insert(k.graphId);
            grids.insert(k.gridX);
        }
        CHECK(nodes.size() == 3 && nodes.count(0) == 0);
        CHECK(graphs.size() == 1 && graphs.count(0) == 0);
        CHECK(grids == std::set<int32_t>({1, 2, 3}));
    }
    auto copy_of = [&](size_t i) { return device_records_of(g_ops[i]).at(0)->as<CUpti_ActivityMemcpy6>(); };
    auto set_of = [&](size_t i) { return device_records_of(g_ops[i]).at(0)->as<CUpti_ActivityMemset4>(); };
    if (device_records_of(g_ops[ix.htod]).size() == 1) {
        const auto c = copy_of(ix.htod);
        CHECK(c.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD && c.srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE &&
              c.dstKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
        CHECK(c.bytes == kBytes && c.end - c.start == kBytes / 10 + 500);
        CHECK(c.streamId == 7 && c.flags == 0 && c.copyCount == 1);
    }
    if (device_records_of(g_ops[ix.htod_pinned]).size() == 1) {
        const auto c = copy_of(ix.htod_pinned);
        CHECK(c.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD && c.srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
        CHECK(c.streamId == s.s2_id && c.flags == CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
    }
    if (device_records_of(g_ops[ix.dtoh]).size() == 1) {
        const auto c = copy_of(ix.dtoh);
        CHECK(c.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH && c.srcKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
              c.dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
    }
    if (device_records_of(g_ops[ix.dtod]).size() == 1)
        CHECK(copy_of(ix.dtod).copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
    if (device_records_of(g_ops[ix.copy2d]).size() == 1) {
        const auto c = copy_of(ix.copy2d);
        CHECK(c.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH && c.bytes == 200 * 16);
    }
    if (device_records_of(g_ops[ix.rt_memcpy]).size() == 1) {
        const auto c = copy_of(ix.rt_memcpy);
        CHECK(c.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH && c.bytes == 4096 && c.streamId == 7);
    }
    if (device_records_of(g_ops[ix.peer]).size() == 1) {
        const auto c = device_records_of(g_ops[ix.peer]).at(0)->as<CUpti_ActivityMemcpyPtoP4>();
        CHECK(c.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP && c.bytes == kBytes);
        CHECK(c.srcDeviceId == 0 && c.dstDeviceId == 1 && c.deviceId == 0);
        CHECK(c.srcContextId != 0 && c.dstContextId != 0 && c.srcContextId != c.dstContextId);
    }
    if (device_records_of(g_ops[ix.set32]).size() == 1) {
        const auto m = set_of(ix.set32);
        CHECK(m.bytes == 4 * 256 && m.value == 0xabcd && m.memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
        CHECK(m.flags == CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC && m.streamId == s.s1_id);
        CHECK(m.end - m.start == 4 * 256 / 10 + 500);
    }
    if (device_records_of(g_ops[ix.set16]).size() == 1) CHECK(set_of(ix.set16).bytes == 2 * 100);
    if (device_records_of(g_ops[ix.set2d]).size() == 1) CHECK(set_of(ix.set2d).bytes == 300 * 10);
    for (size_t which : {ix.rt_launch, ix.rt_launch_internal}) {
        for (const Record* r : device_records_of(g_ops[which])) {
            const auto k = r->as<CUpti_ActivityKernel10>();
            CHECK(k.name != nullptr && std::strcmp(k.name, "_Z7kernelRv") == 0 && k.streamId == 7);
        }
    }
}

// A request refused: the records it was for are dropped and counted.
void check_dropped(const Setup& s) {
    {
        std::lock_guard<std::mutex> g(g_mu);
        g_records.clear();
        g_dropped = 0;
        g_refused = 0;
    }
    g_refuse = true;
    const size_t launches = 40;  // more than any buffer CUPTI may still hold can take
    for (size_t i = 0; i < launches; ++i)
        CHECK_CU(cuLaunchKernel(s.a, 1, 1, 1, 1, 1, 1, 0, s.s2, nullptr, nullptr));
    CHECK_CUPTI(api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    g_refuse = false;
    size_t later = 0;  // dropped since the last delivery
    CHECK_CUPTI(api.cuptiActivityGetNumDroppedRecords(nullptr, 0, &later), CUPTI_SUCCESS);
    std::lock_guard<std::mutex> g(g_mu);
    size_t kernels = 0, apis = 0;
    for (const Record& r : g_records) {
        kernels += r.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        apis += r.kind == CUPTI_ACTIVITY_KIND_DRIVER;
    }
    const size_t dropped = g_dropped + later;
    CHECK(g_refused > 0);
    CHECK(dropped > 0);
    // Each launch: one kernel record and one API record (cuLaunchKernel has API activity).
    CHECK(kernels + apis + dropped == 2 * launches);
}

// After cuptiUnsubscribe the callback is silent and the slot is free again.
void check_unsubscribe(const Setup& s) {
    CHECK_CUPTI(api.cuptiUnsubscribe(nullptr), CUPTI_ERROR_INVALID_PARAMETER);
    CHECK_CUPTI(api.cuptiUnsubscribe(g_subscriber), CUPTI_SUCCESS);
    size_t before = 0;
    {
        std::lock_guard<std::mutex> g(g_mu);
        before = g_enters.size();
    }
    CHECK_CU(cuLaunchKernel(s.a, 1, 1, 1, 1, 1, 1, 0, s.s1, nullptr, nullptr));
    {
        std::lock_guard<std::mutex> g(g_mu);
        CHECK(g_enters.size() == before);
    }
    CHECK_CUPTI(api.cuptiSubscribe(&g_subscriber, on_api, nullptr), CUPTI_SUCCESS);
    CHECK_CUPTI(api.cuptiUnsubscribe(g_subscriber), CUPTI_SUCCESS);
    CHECK_CUPTI(api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
}

}  // namespace

int main() {
    if (!load_cupti()) return 1;
    test_basics();
    const Setup s = setup_program();
    start_tracing();
    Memory m;
    const Indices ix = run_program(s, m);
    check_callbacks(ix);
    check_records(s, ix);
    check_dropped(s);
    check_unsubscribe(s);
    for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                 CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
                                 CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION})
        CHECK_CUPTI(api.cuptiActivityDisable(k), CUPTI_SUCCESS);
    std::printf("fake_cupti_smoke (%s correlation): %d checks, %d failed\n", outer_mode() ? "outer" : "inner", g_checks,
                g_failures);
    return g_failures == 0 ? 0 : 1;
}
