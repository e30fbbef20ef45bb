// Fake CUPTI, built as libcupti.so.13 for tests only: the activity and
// callback API that a profiler uses to see device work, on top of the fake
// driver in this folder. Records are the real structs of cupti_activity.h,
// written into the client's buffers with the real layout, so a client reads
// them exactly as it would read real CUPTI's.
//
// How it sees anything: at the first cuptiActivityEnable* / cuptiSubscribe /
// cuptiEnableCallback it finds libcuda.so.1 (the copy already loaded, else
// it loads it, as real CUPTI must be usable before the program initialises
// CUDA) and installs its hooks with fakeCudaToolRegister (fake_cuda_tool.h).
// From then on the driver reports every driver call, every runtime call (the
// fake runtime reports through the driver) and every piece of device work. It
// links neither fake.
//
// What it models:
//  - Correlation ids: a process-wide counter from 1. A call takes one at
//    entry if a callback or API activity is enabled for it, else when it
//    first makes device work (while it runs): so with only activity kinds
//    enabled the ids count the calls that made work, 1, 2, 3 ..., in the
//    order they ran, as real CUPTI 13.0 does (measured on the H200,
//    2026-12-01). FAKE_CUPTI_IDS=every: every reported call takes one at
//    entry, whatever is enabled (ids with gaps). Device work carries the id
//    of the call that enqueued it; when that driver call was made by a
//    runtime call, the runtime call's id (FAKE_CUPTI_CORRELATION=inner: the
//    driver call's own id).
//  - Times: from the client's timestamp callback (else CLOCK_REALTIME ns). On
//    each (device, stream) work never overlaps: it starts 500 ns after the
//    later of "now" and the end of the stream's previous work, and lasts
//    FAKE_CUPTI_KERNEL_NS (kernels) or bytes / 10 + 500 ns (copies, sets:
//    10 GB/s).
//  - Ids: contextId 1, 2, ... per context in order of first sight; streamId
//    the fake driver's stream id (cuStreamGetId), except per-thread default
//    streams, whose 64-bit ids become 2^31, 2^31 + 1, ... in order of first
//    sight (CUPTI's streamId has 32 bits).
//  - Buffers: requested from the client when a record needs one; a full
//    buffer is delivered at once and the next one requested; a refused
//    request (NULL or too small) drops the record and counts it
//    (cuptiActivityGetNumDroppedRecords). cuptiActivityFlushAll, with any
//    flag, delivers every buffer holding records (but see
//    FAKE_CUPTI_BUSY_DEVICE). Delivery happens on the thread that filled
//    the buffer or flushed, never with a lock held.
//  - External correlation: for an API call whose cbid has API activity
//    enabled (cuptiActivityEnableDriverApi / EnableRuntimeApi, or the whole
//    DRIVER / RUNTIME kind) while EXTERNAL_CORRELATION is enabled, one
//    EXTERNAL_CORRELATION record per non-empty external-id stack of the
//    thread, at the call's entry, before any record of its device work.
//    Without API activity for the call, none: what real CUPTI 13.0 does.
//    An API record (CUpti_ActivityAPI) follows at the call's exit.
//  - One subscriber per process (FAKE_CUPTI_BUSY=1: not even one).
//
// Environment (FAKE_CUPTI_CORRELATION and FAKE_CUPTI_KERNEL_NS are read once,
// at first use; the others at each call they affect):
//   FAKE_CUPTI_CORRELATION  outer (default) | inner, see above
//   FAKE_CUPTI_IDS          work (default) | every, see above
//   FAKE_CUPTI_KERNEL_NS    duration of every kernel, default 2000
//   FAKE_CUPTI_BUSY=1       cuptiSubscribe fails with
//                           CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
//   FAKE_CUPTI_FAIL=1       cuptiActivityRegisterCallbacks fails with
//                           CUPTI_ERROR_NOT_INITIALIZED
//   FAKE_CUPTI_BUSY_DEVICE=1  a device never idle: real CUPTI's plain flush
//                           hands over only buffers whose every record is
//                           complete, so here a flush without
//                           CUPTI_ACTIVITY_FLAG_FLUSH_FORCED delivers only
//                           full buffers
//
// Not modelled: API records' returnValue and the callback's
// functionReturnValue / functionParams / symbolName (the driver does not
// pass them: 0 / NULL); kernels' registers (32) and static shared memory (0)
// are constants; activity kinds other than KERNEL, CONCURRENT_KERNEL, MEMCPY,
// MEMCPY2, MEMSET, DRIVER, RUNTIME and EXTERNAL_CORRELATION are accepted and
// produce nothing; callbacks of domains other than the driver and runtime
// APIs never fire.
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fake_cuda_tool.h"
#include "fake_cupti_ids.h"

// The type behind CUpti_SubscriberHandle, which cupti_callbacks.h leaves
// incomplete. The one subscriber's handle points at the one instance.
struct CUpti_Subscriber_st {
    int unused;
};

namespace {

constexpr uint32_t kVersion = 130001;  // CUPTI_API_VERSION of the CUDA 13.0 headers
constexpr size_t kRecordAlign = 8;     // records start at 8-byte boundaries
constexpr uint64_t kGapNs = 500;       // between a stream's pieces of work, and before the first
constexpr uint16_t kRegistersPerThread = 32;
constexpr uint32_t kFirstWideStreamId = 1u << 31;

// ---------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------

bool env_flag(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

struct Settings {
    bool outer_correlation = true;
    bool ids_every_call = false;
    uint64_t kernel_ns = 2000;
};

const Settings& settings() {
    static const Settings s = [] {
        Settings r;
        const char* corr = std::getenv("FAKE_CUPTI_CORRELATION");
        r.outer_correlation = corr == nullptr || std::strcmp(corr, "inner") != 0;
        const char* ids = std::getenv("FAKE_CUPTI_IDS");
        r.ids_every_call = ids != nullptr && std::strcmp(ids, "every") == 0;
        if (const char* ns = std::getenv("FAKE_CUPTI_KERNEL_NS")) {
            char* end = nullptr;
            const unsigned long long v = std::strtoull(ns, &end, 0);
            if (end != ns && *end == '\0') r.kernel_ns = v;
        }
        return r;
    }();
    return s;
}

// ---------------------------------------------------------------------------
// State. One mutex guards it all; it is never held while calling the client
// (buffer, timestamp and subscriber callbacks), which may call back in.
// ---------------------------------------------------------------------------

// Which of the two traced API domains: 0 driver, 1 runtime, -1 neither.
int api_index(uint32_t domain) {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return 0;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return 1;
    return -1;
}
constexpr uint32_t kCbidCount[2] = {CUPTI_DRIVER_TRACE_CBID_SIZE, CUPTI_RUNTIME_TRACE_CBID_SIZE};

struct Buffer {
    uint8_t* data = nullptr;
    size_t size = 0;
    size_t used = 0;  // offset of the next record
    size_t records = 0;
    size_t max_records = 0;  // 0: as many as fit
};

struct Subscriber {
    CUpti_CallbackFunc callback = nullptr;
    void* userdata = nullptr;
    std::vector<bool> enabled[2];  // by cbid, driver and runtime
};

struct State {
    std::mutex mu;
    CUpti_BuffersCallbackRequestFunc request = nullptr;
    CUpti_BuffersCallbackCompleteFunc complete = nullptr;
    bool kinds[CUPTI_ACTIVITY_KIND_COUNT] = {};
    std::vector<bool> api_activity[2] = {std::vector<bool>(kCbidCount[0]), std::vector<bool>(kCbidCount[1])};
    bool subscribed = false;
    Subscriber subscriber;

    Buffer current;             // being filled; data == nullptr: none
    std::deque<Buffer> spare;   // requested, not yet used
    std::deque<Buffer> full;    // to deliver (full, flushed or unusable), oldest first
    size_t dropped = 0;         // since the last cuptiActivityGetNumDroppedRecords

    std::map<std::pair<int, unsigned long long>, uint64_t> busy_until;  // (device, stream id) -> ns
    std::map<CUcontext, uint32_t> context_ids;
    std::map<unsigned long long, uint32_t> wide_stream_ids;
    std::set<std::string> names;  // kernel names: the records point into it, so it never shrinks
    int64_t next_grid_id = 1;
};

State& state() {
    static State* s = new State;  // never destroyed: the driver may report during exit
    return *s;
}

CUpti_Subscriber_st g_subscriber_handle{0};
std::atomic<CUpti_TimestampCallbackFunc> g_timestamp{nullptr};
std::atomic<uint32_t> g_next_correlation{1};

// External correlation ids pushed by this thread, by kind.
thread_local std::vector<uint64_t> t_external[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];

uint64_t now_ns() {
    if (CUpti_TimestampCallbackFunc ts = g_timestamp.load(std::memory_order_acquire)) return ts();
    timespec t{};
    clock_gettime(CLOCK_REALTIME, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1000000000u + static_cast<uint64_t>(t.tv_nsec);
}

// Caller holds the mutex (for all helpers taking State&).
uint32_t context_id(State& s, CUcontext ctx) {
    if (ctx == nullptr) return 0;
    auto it = s.context_ids.find(ctx);
    if (it != s.context_ids.end()) return it->second;
    const auto id = static_cast<uint32_t>(s.context_ids.size() + 1);
    s.context_ids.emplace(ctx, id);
    return id;
}

uint32_t stream_id(State& s, unsigned long long driver_id) {
    if (driver_id < kFirstWideStreamId) return static_cast<uint32_t>(driver_id);
    auto it = s.wide_stream_ids.find(driver_id);
    if (it != s.wide_stream_ids.end()) return it->second;
    const auto id = static_cast<uint32_t>(kFirstWideStreamId + s.wide_stream_ids.size());
    s.wide_stream_ids.emplace(driver_id, id);
    return id;
}

bool api_activity(const State& s, uint32_t domain, uint32_t cbid) {
    const int d = api_index(domain);
    return d >= 0 && cbid < kCbidCount[d] && s.api_activity[d][cbid];
}

// ---------------------------------------------------------------------------
// Records and buffers
// ---------------------------------------------------------------------------

size_t align_up(size_t n) { return (n + kRecordAlign - 1) / kRecordAlign * kRecordAlign; }

// Where the first record of a buffer goes: the buffer's first 8-byte
// boundary (clients are asked for aligned buffers; this copes with others).
size_t first_offset(const uint8_t* buffer) {
    return (kRecordAlign - reinterpret_cast<uintptr_t>(buffer) % kRecordAlign) % kRecordAlign;
}

// Bytes of a record of this kind, 0 for kinds this CUPTI never writes.
size_t record_size(CUpti_ActivityKind kind) {
    switch (kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
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

// Queues the current buffer for delivery (an empty one too: it was too
// small for the record at hand, so it goes back to the client unused).
void retire_current(State& s) {
    s.full.push_back(s.current);
    s.current = Buffer{};
}

// Hands every full buffer to the client, oldest first, from this thread.
void deliver_full() {
    State& s = state();
    for (;;) {
        Buffer b;
        CUpti_BuffersCallbackCompleteFunc complete = nullptr;
        {
            std::lock_guard<std::mutex> g(s.mu);
            if (s.full.empty()) return;
            b = s.full.front();
            s.full.pop_front();
            complete = s.complete;
        }
        if (complete != nullptr) complete(nullptr, 0, b.data, b.size, b.records != 0 ? b.used : 0);
    }
}

// Appends one record (size bytes, a multiple of 8) to the current buffer,
// asking the client for buffers as needed.
void emit(const void* record, size_t size) {
    State& s = state();
    std::unique_lock<std::mutex> lock(s.mu);
    for (;;) {
        Buffer& cur = s.current;
        if (cur.data != nullptr) {
            if (cur.used + size <= cur.size) {
                std::memcpy(cur.data + cur.used, record, size);
                cur.used += align_up(size);
                ++cur.records;
                if (cur.records == cur.max_records) retire_current(s);
                break;
            }
            retire_current(s);  // full
            continue;
        }
        if (!s.spare.empty()) {
            cur = s.spare.front();
            s.spare.pop_front();
            continue;
        }
        const CUpti_BuffersCallbackRequestFunc request = s.request;
        if (request == nullptr) {
            ++s.dropped;
            break;
        }
        lock.unlock();
        uint8_t* data = nullptr;
        size_t bytes = 0, max_records = 0;
        request(&data, &bytes, &max_records);
        lock.lock();
        Buffer b;
        b.data = data;
        b.size = bytes;
        b.used = data != nullptr ? first_offset(data) : 0;
        b.max_records = max_records;
        if (data == nullptr || b.used + size > bytes) {
            ++s.dropped;
            if (data != nullptr) s.full.push_back(b);  // unusable: back to the client, empty
            break;
        }
        // Another thread may have installed a buffer meanwhile: queue this one.
        s.spare.push_back(b);
    }
    lock.unlock();
    deliver_full();
}

template <typename Record>
void emit(const Record& r) {
    static_assert(sizeof(Record) % kRecordAlign == 0, "records keep 8-byte alignment");
    emit(&r, sizeof r);
}

// ---------------------------------------------------------------------------
// The hooks the driver calls (fake_cuda_tool.h)
// ---------------------------------------------------------------------------

// The subscriber's callback for one API call, if the call's cbid is enabled.
struct Subscription {
    CUpti_CallbackFunc callback = nullptr;
    void* userdata = nullptr;
    uint32_t context_uid = 0;
};

Subscription subscription(State& s, const FakeCudaApiCall* call) {
    Subscription sub;
    const int d = api_index(call->domain);
    if (!s.subscribed || d < 0 || call->cbid >= kCbidCount[d] || !s.subscriber.enabled[d][call->cbid]) return sub;
    sub.callback = s.subscriber.callback;
    sub.userdata = s.subscriber.userdata;
    sub.context_uid = context_id(s, call->context);
    return sub;
}

void fire(const Subscription& sub, CUpti_ApiCallbackSite site, FakeCudaApiCall* call) {
    CUpti_CallbackData data{};
    data.callbackSite = site;
    data.functionName = call->name;
    data.context = call->context;
    data.contextUid = sub.context_uid;
    data.correlationData = &call->user_data;
    data.correlationId = call->correlation_id;
    sub.callback(sub.userdata, static_cast<CUpti_CallbackDomain>(call->domain), call->cbid, &data);
}

std::atomic<int> g_thread_id_type{CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT};

uint32_t take_correlation(FakeCudaApiCall* call) {
    if (call->correlation_id == 0) call->correlation_id = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
    return call->correlation_id;
}

void on_api_enter(FakeCudaApiCall* call) {
    call->start_ns = now_ns();
    State& s = state();
    bool external = false, api = false;
    Subscription sub;
    {
        std::lock_guard<std::mutex> g(s.mu);
        api = api_activity(s, call->domain, call->cbid);
        external = s.kinds[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION] && api;
        sub = subscription(s, call);
    }
    if (settings().ids_every_call || api || sub.callback != nullptr) take_correlation(call);
    if (external) {
        for (uint32_t kind = CUPTI_EXTERNAL_CORRELATION_KIND_INVALID + 1; kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE;
             ++kind) {
            if (t_external[kind].empty()) continue;
            CUpti_ActivityExternalCorrelation r{};
            r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
            r.externalKind = static_cast<CUpti_ExternalCorrelationKind>(kind);
            r.externalId = t_external[kind].back();
            r.correlationId = call->correlation_id;
            emit(r);
        }
    }
    if (sub.callback != nullptr) fire(sub, CUPTI_API_ENTER, call);
}

void on_api_exit(FakeCudaApiCall* call) {
    State& s = state();
    bool api = false;
    Subscription sub;
    {
        std::lock_guard<std::mutex> g(s.mu);
        api = api_activity(s, call->domain, call->cbid);
        sub = subscription(s, call);
    }
    if (api || sub.callback != nullptr) take_correlation(call);  // enabled while the call ran
    if (sub.callback != nullptr) fire(sub, CUPTI_API_EXIT, call);
    if (api) {
        CUpti_ActivityAPI r{};
        r.kind = call->domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
        r.cbid = call->cbid;
        r.start = call->start_ns;
        r.end = now_ns();
        r.processId = static_cast<uint32_t>(getpid());
        r.threadId = g_thread_id_type.load() == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
                         ? static_cast<uint32_t>(syscall(SYS_gettid))
                         : static_cast<uint32_t>(pthread_self());  // the DEFAULT type
        r.correlationId = call->correlation_id;
        emit(r);
    }
}

// The correlation id device work carries (see the header comment); the
// call takes it now if it has none yet. (The tool owns correlation_id.)
uint32_t work_correlation(const FakeCudaApiCall* call) {
    auto* caller = const_cast<FakeCudaApiCall*>(call->parent);
    if (settings().outer_correlation && caller != nullptr && caller->domain == CUPTI_CB_DOMAIN_RUNTIME_API)
        return take_correlation(caller);
    return take_correlation(const_cast<FakeCudaApiCall*>(call));
}

bool on_device(FakeCudaMemory m) { return m == FAKE_CUDA_MEMORY_DEVICE || m == FAKE_CUDA_MEMORY_MANAGED; }

uint8_t memory_kind(FakeCudaMemory m) {
    switch (m) {
        case FAKE_CUDA_MEMORY_PAGEABLE: return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
        case FAKE_CUDA_MEMORY_PINNED: return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
        case FAKE_CUDA_MEMORY_DEVICE: return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        case FAKE_CUDA_MEMORY_MANAGED: return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
    }
    return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
}

uint8_t copy_kind(const FakeCudaWork& w) {
    const bool src = on_device(w.src.memory), dst = on_device(w.dst.memory);
    if (src && dst) return w.src.device == w.dst.device ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOD : CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    if (src) return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    if (dst) return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
}

// What every device record shares.
struct Placement {
    uint64_t start = 0, end = 0;
    uint32_t device = 0, context = 0, stream = 0, correlation = 0;
};

void on_kernel(const FakeCudaWork& w, const Placement& p, const char* name, int64_t grid_id, bool concurrent) {
    CUpti_ActivityKernel10 r{};
    r.kind = concurrent ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
    r.registersPerThread = kRegistersPerThread;
    r.start = p.start;
    r.end = p.end;
    r.completed = p.end;
    r.deviceId = p.device;
    r.contextId = p.context;
    r.streamId = p.stream;
    r.gridX = static_cast<int32_t>(w.grid[0]);
    r.gridY = static_cast<int32_t>(w.grid[1]);
    r.gridZ = static_cast<int32_t>(w.grid[2]);
    r.blockX = static_cast<int32_t>(w.block[0]);
    r.blockY = static_cast<int32_t>(w.block[1]);
    r.blockZ = static_cast<int32_t>(w.block[2]);
    r.staticSharedMemory = 0;
    r.dynamicSharedMemory = static_cast<int32_t>(w.dynamic_shared_bytes);
    r.correlationId = p.correlation;
    r.gridId = grid_id;
    r.name = name;
    r.queued = CUPTI_TIMESTAMP_UNKNOWN;
    r.submitted = CUPTI_TIMESTAMP_UNKNOWN;
    r.launchType = w.cooperative ? CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE : CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    r.graphNodeId = w.graph_node_id;
    r.graphId = w.graph_id;
    emit(r);
}

void on_memcpy(const FakeCudaWork& w, const Placement& p) {
    CUpti_ActivityMemcpy6 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = copy_kind(w);
    r.srcKind = memory_kind(w.src.memory);
    r.dstKind = memory_kind(w.dst.memory);
    r.flags = w.async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    r.bytes = w.bytes;
    r.start = p.start;
    r.end = p.end;
    r.deviceId = p.device;
    r.contextId = p.context;
    r.streamId = p.stream;
    r.correlationId = p.correlation;
    r.graphNodeId = w.graph_node_id;
    r.graphId = w.graph_id;
    r.copyCount = 1;
    emit(r);
}

void on_peer_memcpy(const FakeCudaWork& w, const Placement& p, uint32_t src_context, uint32_t dst_context) {
    CUpti_ActivityMemcpyPtoP4 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    r.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    r.srcKind = memory_kind(w.src.memory);
    r.dstKind = memory_kind(w.dst.memory);
    r.flags = w.async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    r.bytes = w.bytes;
    r.start = p.start;
    r.end = p.end;
    r.deviceId = p.device;
    r.contextId = p.context;
    r.streamId = p.stream;
    r.srcDeviceId = static_cast<uint32_t>(w.src.device);
    r.srcContextId = src_context;
    r.dstDeviceId = static_cast<uint32_t>(w.dst.device);
    r.dstContextId = dst_context;
    r.correlationId = p.correlation;
    r.graphNodeId = w.graph_node_id;
    r.graphId = w.graph_id;
    emit(r);
}

void on_memset(const FakeCudaWork& w, const Placement& p) {
    CUpti_ActivityMemset4 r{};
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.value = w.value;
    r.bytes = w.bytes;
    r.start = p.start;
    r.end = p.end;
    r.deviceId = p.device;
    r.contextId = p.context;
    r.streamId = p.stream;
    r.correlationId = p.correlation;
    r.flags = w.async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
    r.memoryKind = memory_kind(w.dst.memory);
    r.graphNodeId = w.graph_node_id;
    r.graphId = w.graph_id;
    emit(r);
}

void on_device_work(const FakeCudaApiCall* call, const FakeCudaWork* work) {
    const FakeCudaWork& w = *work;
    const uint64_t now = now_ns();
    const uint64_t duration = w.kind == FAKE_CUDA_WORK_KERNEL ? settings().kernel_ns : w.bytes / 10 + kGapNs;
    Placement p;
    p.correlation = work_correlation(call);
    p.device = static_cast<uint32_t>(w.device);
    const char* name = nullptr;
    int64_t grid_id = 0;
    uint32_t src_context = 0, dst_context = 0;
    bool kernel = false, concurrent = false, copy = false, peer_copy = false, set = false;
    State& s = state();
    {
        std::lock_guard<std::mutex> g(s.mu);
        // The device is busy whether or not anyone watches, so the stream's
        // clock advances either way.
        uint64_t& busy = s.busy_until[{w.device, w.stream_id}];
        p.start = std::max(now, busy) + kGapNs;
        p.end = p.start + duration;
        busy = p.end;
        p.context = context_id(s, w.context);
        p.stream = stream_id(s, w.stream_id);
        switch (w.kind) {
            case FAKE_CUDA_WORK_KERNEL:
                concurrent = s.kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL];
                kernel = concurrent || s.kinds[CUPTI_ACTIVITY_KIND_KERNEL];
                if (kernel) {
                    name = s.names.insert(w.kernel_name != nullptr ? w.kernel_name : "").first->c_str();
                    grid_id = s.next_grid_id++;
                }
                break;
            case FAKE_CUDA_WORK_MEMCPY:
                // A copy between devices is a MEMCPY2 record when that kind
                // is on, else a MEMCPY record of kind PTOP.
                peer_copy = copy_kind(w) == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP && s.kinds[CUPTI_ACTIVITY_KIND_MEMCPY2];
                copy = !peer_copy && s.kinds[CUPTI_ACTIVITY_KIND_MEMCPY];
                src_context = context_id(s, w.src.context);
                dst_context = context_id(s, w.dst.context);
                break;
            case FAKE_CUDA_WORK_MEMSET: set = s.kinds[CUPTI_ACTIVITY_KIND_MEMSET]; break;
        }
    }
    if (kernel) on_kernel(w, p, name, grid_id, concurrent);
    if (copy) on_memcpy(w, p);
    if (peer_copy) on_peer_memcpy(w, p, src_context, dst_context);
    if (set) on_memset(w, p);
}

const FakeCudaToolHooks kHooks = {FAKE_CUDA_TOOL_VERSION, on_api_enter, on_api_exit, on_device_work};

// ---------------------------------------------------------------------------
// Attaching to the driver
// ---------------------------------------------------------------------------

std::mutex g_attach_mu;
FakeCudaToolRegisterFn g_register = nullptr;  // set once attached

// Installs the hooks in the fake driver; false if there is none.
bool attach() {
    std::lock_guard<std::mutex> g(g_attach_mu);
    if (g_register != nullptr) return true;
    void* driver = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver == nullptr) return false;
    auto reg = reinterpret_cast<FakeCudaToolRegisterFn>(dlsym(driver, "fakeCudaToolRegister"));
    if (reg == nullptr || reg(&kHooks) != 0) return false;
    g_register = reg;
    return true;
}

// When this library goes away (dlclose, or the end of the process), the
// driver must stop calling into it.
__attribute__((destructor)) void detach() {
    std::lock_guard<std::mutex> g(g_attach_mu);
    if (g_register != nullptr) g_register(nullptr);
    g_register = nullptr;
}

bool valid_kind(CUpti_ActivityKind kind) {
    return kind > CUPTI_ACTIVITY_KIND_INVALID && kind < CUPTI_ACTIVITY_KIND_COUNT;
}

// Enables or disables one activity kind; the DRIVER and RUNTIME kinds set
// every cbid of their domain, overriding earlier per-cbid choices.
CUptiResult set_kind(CUpti_ActivityKind kind, bool enable) {
    if (!valid_kind(kind)) return CUPTI_ERROR_INVALID_KIND;
    if (enable && !attach()) return CUPTI_ERROR_NOT_INITIALIZED;
    State& s = state();
    std::lock_guard<std::mutex> g(s.mu);
    s.kinds[kind] = enable;
    if (kind == CUPTI_ACTIVITY_KIND_DRIVER) s.api_activity[0].assign(kCbidCount[0], enable);
    if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) s.api_activity[1].assign(kCbidCount[1], enable);
    return CUPTI_SUCCESS;
}

CUptiResult set_api_activity(uint32_t domain, CUpti_CallbackId cbid, uint8_t enable) {
    const int d = api_index(domain);
    if (cbid == 0 || cbid >= kCbidCount[d]) return CUPTI_ERROR_INVALID_PARAMETER;
    if (enable && !attach()) return CUPTI_ERROR_NOT_INITIALIZED;
    State& s = state();
    std::lock_guard<std::mutex> g(s.mu);
    s.api_activity[d][cbid] = enable != 0;
    return CUPTI_SUCCESS;
}

// ---------------------------------------------------------------------------
// Result strings: the enumerator names, as real CUPTI answers.
// ---------------------------------------------------------------------------
#define FAKE_RESULT(code) {code, #code}
const struct {
    CUptiResult code;
    const char* name;
} kResults[] = {
    FAKE_RESULT(CUPTI_SUCCESS),
    FAKE_RESULT(CUPTI_ERROR_INVALID_PARAMETER),
    FAKE_RESULT(CUPTI_ERROR_INVALID_DEVICE),
    FAKE_RESULT(CUPTI_ERROR_INVALID_CONTEXT),
    FAKE_RESULT(CUPTI_ERROR_INVALID_OPERATION),
    FAKE_RESULT(CUPTI_ERROR_OUT_OF_MEMORY),
    FAKE_RESULT(CUPTI_ERROR_HARDWARE),
    FAKE_RESULT(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT),
    FAKE_RESULT(CUPTI_ERROR_API_NOT_IMPLEMENTED),
    FAKE_RESULT(CUPTI_ERROR_MAX_LIMIT_REACHED),
    FAKE_RESULT(CUPTI_ERROR_NOT_READY),
    FAKE_RESULT(CUPTI_ERROR_NOT_COMPATIBLE),
    FAKE_RESULT(CUPTI_ERROR_NOT_INITIALIZED),
    FAKE_RESULT(CUPTI_ERROR_QUEUE_EMPTY),
    FAKE_RESULT(CUPTI_ERROR_INVALID_HANDLE),
    FAKE_RESULT(CUPTI_ERROR_INVALID_STREAM),
    FAKE_RESULT(CUPTI_ERROR_INVALID_KIND),
    FAKE_RESULT(CUPTI_ERROR_DISABLED),
    FAKE_RESULT(CUPTI_ERROR_NOT_SUPPORTED),
    FAKE_RESULT(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES),
    FAKE_RESULT(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
    FAKE_RESULT(CUPTI_ERROR_UNKNOWN),
};
#undef FAKE_RESULT

}  // namespace

// ============================================================================
// Exported functions. Each is declared extern "C" by the CUPTI headers; the
// definitions inherit that linkage (-Wmissing-declarations flags one that is
// not declared, and so would be mangled and left out of the export list).
// ============================================================================

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t* version) {
    if (version == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    *version = kVersion;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
    if (str == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    for (const auto& r : kResults) {
        if (r.code == result) {
            *str = r.name;
            return CUPTI_SUCCESS;
        }
    }
    return CUPTI_ERROR_INVALID_PARAMETER;
}

// --- Activity -------------------------------------------------------------------

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp) {
    if (funcTimestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    g_timestamp.store(funcTimestamp, std::memory_order_release);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                                    CUpti_BuffersCallbackCompleteFunc funcBufferCompleted) {
    if (env_flag("FAKE_CUPTI_FAIL")) return CUPTI_ERROR_NOT_INITIALIZED;
    if (funcBufferRequested == nullptr || funcBufferCompleted == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    State& s = state();
    std::lock_guard<std::mutex> g(s.mu);
    s.request = funcBufferRequested;
    s.complete = funcBufferCompleted;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) { return set_kind(kind, true); }

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) { return set_kind(kind, false); }

CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
    return set_api_activity(CUPTI_CB_DOMAIN_DRIVER_API, cbid, enable);
}

CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
    return set_api_activity(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, enable);
}

CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
    if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_thread_id_type.store(type);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) {
    State& s = state();
    const char* busy = std::getenv("FAKE_CUPTI_BUSY_DEVICE");
    const bool partial =
        (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0 || busy == nullptr || std::strcmp(busy, "1") != 0;
    {
        std::lock_guard<std::mutex> g(s.mu);
        if (s.complete == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
        if (partial && s.current.records != 0) retire_current(s);
    }
    deliver_full();
    return CUPTI_SUCCESS;
}

// Stateless: the next record is found from the previous one's kind.
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t validBufferSizeBytes,
                                                CUpti_Activity** record) {
    if (buffer == nullptr || record == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    size_t offset = first_offset(buffer);
    if (*record != nullptr) {
        const size_t previous = record_size((*record)->kind);
        if (previous == 0) return CUPTI_ERROR_INVALID_KIND;
        offset = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + align_up(previous);
    }
    if (offset >= validBufferSizeBytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    if (offset + sizeof(CUpti_ActivityKind) > validBufferSizeBytes) return CUPTI_ERROR_INVALID_KIND;
    CUpti_ActivityKind kind;
    std::memcpy(&kind, buffer + offset, sizeof kind);
    const size_t size = record_size(kind);
    if (size == 0 || offset + size > validBufferSizeBytes) return CUPTI_ERROR_INVALID_KIND;
    *record = reinterpret_cast<CUpti_Activity*>(buffer + offset);
    return CUPTI_SUCCESS;
}

// All buffers are global (as in real CUPTI since 6.0), so only the global
// count (context NULL) is ever nonzero. Reading it resets it.
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t, size_t* dropped) {
    if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    *dropped = 0;
    if (context != nullptr) return CUPTI_SUCCESS;
    State& s = state();
    std::lock_guard<std::mutex> g(s.mu);
    *dropped = s.dropped;
    s.dropped = 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    t_external[kind].push_back(id);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t* lastId) {
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID || kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (t_external[kind].empty()) return CUPTI_ERROR_QUEUE_EMPTY;
    if (lastId != nullptr) *lastId = t_external[kind].back();
    t_external[kind].pop_back();
    return CUPTI_SUCCESS;
}

// --- Callbacks --------------------------------------------------------------------

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
    if (subscriber == nullptr || callback == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    // FAKE_CUPTI_BUSY stands for another tool in the process holding the one
    // subscriber slot (CUPTI before 13.2 allows one).
    if (env_flag("FAKE_CUPTI_BUSY")) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    {
        State& s = state();
        std::lock_guard<std::mutex> g(s.mu);
        if (s.subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    if (!attach()) return CUPTI_ERROR_NOT_INITIALIZED;
    State& s = state();
    std::lock_guard<std::mutex> g(s.mu);
    if (s.subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;  // lost a race
    s.subscribed = true;
    s.subscriber.callback = callback;
    s.subscriber.userdata = userdata;
    s.subscriber.enabled[0].assign(kCbidCount[0], false);
    s.subscriber.enabled[1].assign(kCbidCount[1], false);
    *subscriber = &g_subscriber_handle;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
    State& s = state();
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.subscribed || subscriber != &g_subscriber_handle) return CUPTI_ERROR_INVALID_PARAMETER;
    s.subscribed = false;
    s.subscriber = Subscriber{};
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    if (domain <= CUPTI_CB_DOMAIN_INVALID || domain >= CUPTI_CB_DOMAIN_SIZE) return CUPTI_ERROR_INVALID_PARAMETER;
    const int d = api_index(domain);
    if (d >= 0 && (cbid == 0 || cbid >= kCbidCount[d])) return CUPTI_ERROR_INVALID_PARAMETER;
    State& s = state();
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.subscribed || subscriber != &g_subscriber_handle) return CUPTI_ERROR_INVALID_PARAMETER;
    if (d >= 0) s.subscriber.enabled[d][cbid] = enable != 0;  // other domains: accepted, never fire
    return CUPTI_SUCCESS;
}

// Answers for the functions the fakes export (fake_cupti_ids.h), and only
// for those.
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
    if (name == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    const fake_cupti_ids::ApiId* id = fake_cupti_ids::find_cbid(domain, cbid);
    if (id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
    *name = id->cupti_name;
    return CUPTI_SUCCESS;
}
