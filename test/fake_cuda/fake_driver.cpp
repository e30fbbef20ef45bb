// Fake CUDA driver, part 1: process state, devices, contexts, error strings,
// device / managed / pinned / pool / virtual memory.
//
// Built as libcuda.so.1 for tests only. "Device" memory is ordinary host
// memory, so every pointer the fake hands out can be read and written by the
// CPU, and copies really move bytes. Capacity is accounted per device so that
// out-of-memory paths can be tested (FAKE_CUDA_MEM_BYTES).
//
// Environment:
//   FAKE_CUDA_DEVICES    number of devices, default 1 (0: cuInit fails with
//                        CUDA_ERROR_NO_DEVICE; at most 16)
//   FAKE_CUDA_MEM_BYTES  capacity of each device in bytes, default 1 GiB
//   FAKE_CUDA_TRACE      1: print each driver entry point to stderr
#include "fake_driver_internal.h"

#include <cudaProfiler.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fake {
namespace {

constexpr size_t kAllocAlign = 256;              // what cudaMalloc guarantees
constexpr size_t kPitchAlign = 512;              // pitch of cuMemAllocPitch
constexpr size_t kGranularity = 2u << 20;        // VMM granularity, like real GPUs
constexpr size_t kHostAlign = 4096;              // pinned host allocations
constexpr int kMaxDevices = 16;
constexpr uint32_t kContextMagic = 0x43545846;   // "FXTC"
constexpr uint32_t kPoolMagic = 0x4c505846;      // "FXPL"

size_t round_up(size_t n, size_t align) { return (n + align - 1) / align * align; }

// Reads an unsigned number (decimal, 0x hex) from the environment.
unsigned long long env_number(const char* name, unsigned long long fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    char* end = nullptr;
    unsigned long long value = std::strtoull(text, &end, 0);
    return (end != nullptr && *end == '\0') ? value : fallback;
}

}  // namespace

struct Context {
    uint32_t magic = kContextMagic;
    int device = 0;
    unsigned retain_count = 0;  // cuDevicePrimaryCtxRetain minus Release
};

struct Pool {
    uint32_t magic = kPoolMagic;
    int device = 0;
    unsigned long long used = 0, used_high = 0;          // bytes handed out
    unsigned long long reserved = 0, reserved_high = 0;  // used, in 2 MiB chunks
    unsigned long long release_threshold = 0;
};

namespace {

enum class AllocKind { Device, Managed, Pool, HostPinned, Legacy32, Mapped };

// One allocation the fake handed out, keyed by its start address.
struct Alloc {
    size_t size = 0;      // bytes requested (what range queries report)
    size_t charged = 0;   // bytes counted against the device's capacity
    int device = 0;
    AllocKind kind = AllocKind::Device;
    Pool* pool = nullptr; // for cuMemAllocAsync / FromPoolAsync
    unsigned long long buffer_id = 0;
};

// Physical memory of the VMM API: a memfd, so that every mapping of the same
// handle aliases the same bytes, as on a GPU.
struct PhysMem {
    size_t size = 0;
    int device = 0;
    int fd = -1;
    unsigned mappings = 0;   // a mapping keeps the memory alive after cuMemRelease
    bool released = false;
};

// A virtual address range from cuMemAddressReserve: an inaccessible-in-spirit
// but in fact ordinary anonymous mapping that cuMemMap overlays.
struct Reservation {
    size_t size = 0;
    void* os_base = nullptr;  // what mmap returned (may start below the aligned base)
    size_t os_size = 0;
};

struct Device {
    unsigned long long capacity = 0;
    unsigned long long used = 0;
    Context context;
    Pool default_pool;
};

struct State {
    bool initialized = false;
    int device_count = 0;
    std::vector<std::unique_ptr<Device>> devices;
    std::map<CUdeviceptr, Alloc> allocs;  // by start address
    std::map<CUmemGenericAllocationHandle, PhysMem> phys;
    std::map<CUdeviceptr, CUmemGenericAllocationHandle> mapped_handle;  // mapping start -> handle
    std::map<CUdeviceptr, Reservation> reservations;
    std::vector<std::unique_ptr<Pool>> pools;  // cuMemPoolCreate
    CUmemGenericAllocationHandle next_handle = 1;
    unsigned long long next_buffer_id = 1;
    std::map<size_t, std::vector<void*>> device_blocks;  // freed device memory, by size
};

// Built on first use (not at load time) so that a test can set the
// environment in main() before its first CUDA call.
State& state() {
    static State* s = [] {
        auto* st = new State;  // never destroyed: other static destructors may still call us
        unsigned long long n = env_number("FAKE_CUDA_DEVICES", 1);
        st->device_count = static_cast<int>(std::min<unsigned long long>(n, kMaxDevices));
        unsigned long long capacity = env_number("FAKE_CUDA_MEM_BYTES", 1ull << 30);
        for (int d = 0; d < st->device_count; ++d) {
            auto dev = std::make_unique<Device>();
            dev->capacity = capacity;
            dev->context.device = d;
            dev->default_pool.device = d;
            st->devices.push_back(std::move(dev));
        }
        return st;
    }();
    return *s;
}

// Each thread has a context stack (cuCtxPush/PopCurrent); the top is current.
// A plain array, not a std::vector: a thread_local with a destructor dies
// before the atexit handlers run, and tools (nb's final flush) call the
// driver from one, as the real driver allows.
struct ContextStack {
    static constexpr size_t kDepth = 64;
    Context* items[kDepth];
    size_t size;
    bool empty() const { return size == 0; }
    bool full() const { return size == kDepth; }
    Context*& back() { return items[size - 1]; }
    void push_back(Context* c) { items[size++] = c; }
    void pop_back() { --size; }
};
thread_local ContextStack t_context_stack;

// Lookup of the allocation containing ptr. Caller holds lock().
std::map<CUdeviceptr, Alloc>::iterator find_alloc(CUdeviceptr ptr) {
    State& st = state();
    auto it = st.allocs.upper_bound(ptr);
    if (it == st.allocs.begin()) return st.allocs.end();
    --it;
    size_t extent = std::max<size_t>(it->second.size, 1);
    return ptr < it->first + extent ? it : st.allocs.end();
}

Pool* as_pool(CUmemoryPool pool) {
    State& st = state();
    for (auto& dev : st.devices)
        if (reinterpret_cast<CUmemoryPool>(&dev->default_pool) == pool) return &dev->default_pool;
    for (auto& p : st.pools)
        if (reinterpret_cast<CUmemoryPool>(p.get()) == pool) return p.get();
    return nullptr;
}

void pool_add(Pool* pool, long long delta) {
    pool->used += delta;
    pool->used_high = std::max(pool->used_high, pool->used);
    // A real pool reserves in large chunks and keeps them until trimmed; the
    // fake reports the used bytes rounded up to the VMM granularity.
    pool->reserved = std::max<unsigned long long>(round_up(pool->used, kGranularity),
                                                  std::min(pool->reserved, pool->release_threshold));
    pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
}

// Charges bytes to a device; caller holds lock().
CUresult charge(int device, size_t bytes) {
    Device& dev = *state().devices[device];
    if (bytes > dev.capacity - dev.used) return CUDA_ERROR_OUT_OF_MEMORY;
    dev.used += bytes;
    return CUDA_SUCCESS;
}

void uncharge(int device, size_t bytes) { state().devices[device]->used -= bytes; }

CUresult record(CUdeviceptr ptr, size_t size, size_t charged, int device, AllocKind kind, Pool* pool) {
    Alloc a;
    a.size = size;
    a.charged = charged;
    a.device = device;
    a.kind = kind;
    a.pool = pool;
    a.buffer_id = state().next_buffer_id++;
    state().allocs[ptr] = a;
    return CUDA_SUCCESS;
}

// Device memory is not in the host heap, as a real driver's is not: whole
// pages from mmap, kept by size once freed and handed out again. (From
// malloc, how much of the freed memory stays resident would depend on what
// else the process allocates, and a profiler that measures the process's
// memory, nb's benchmarks, would count it.) Small blocks come from the
// heap still: a page each would run out of mappings. Caller holds lock().
constexpr size_t kKeptBlocks = 64;              // freed blocks kept per size
constexpr size_t kPagedBlock = size_t(64) << 10;  // from here on, pages

void* device_block(size_t charged) {
    if (charged < kPagedBlock) return std::aligned_alloc(kAllocAlign, charged);
    auto& kept = state().device_blocks[charged];
    if (!kept.empty()) {
        void* p = kept.back();
        kept.pop_back();
        return p;
    }
    void* p = mmap(nullptr, charged, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

void free_device_block(void* p, size_t charged) {
    if (charged < kPagedBlock) {
        std::free(p);
        return;
    }
    auto& kept = state().device_blocks[charged];
    if (kept.size() < kKeptBlocks) {
        kept.push_back(p);
        return;
    }
    munmap(p, charged);
}

// Releases the host memory behind an allocation record; caller holds lock().
void release(CUdeviceptr ptr, const Alloc& a) {
    void* p = reinterpret_cast<void*>(ptr);
    switch (a.kind) {
        case AllocKind::Legacy32: munmap(p, round_up(std::max<size_t>(a.size, 1), kHostAlign)); break;
        case AllocKind::Mapped: break;  // owned by the reservation
        case AllocKind::HostPinned: std::free(p); break;
        default: free_device_block(p, a.charged); break;
    }
    if (a.charged != 0) uncharge(a.device, a.charged);
    if (a.pool != nullptr) pool_add(a.pool, -static_cast<long long>(a.charged));
}

CUresult alloc_host(void** pp, size_t bytes) {
    if (pp == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pp = nullptr;
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
    void* p = std::aligned_alloc(kHostAlign, round_up(bytes, kHostAlign));
    if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    std::lock_guard<std::mutex> g(lock());
    record(reinterpret_cast<CUdeviceptr>(p), bytes, 0, ctx->device, AllocKind::HostPinned, nullptr);
    *pp = p;
    return CUDA_SUCCESS;
}

unsigned clamp_u32(unsigned long long v) { return static_cast<unsigned>(std::min<unsigned long long>(v, UINT_MAX)); }

}  // namespace

// ----------------------------------------------------------------------------
// Internal API (fake_driver_internal.h)
// ----------------------------------------------------------------------------

std::mutex& lock() {
    static std::mutex* m = new std::mutex;
    return *m;
}

std::atomic<unsigned long long>& call_counter(const char* exported_name) {
    static std::mutex* m = new std::mutex;
    static auto* counters = new std::map<std::string, std::unique_ptr<std::atomic<unsigned long long>>>;
    // A real driver throws nothing: out of memory, a call goes uncounted.
    static std::atomic<unsigned long long> uncounted{0};
    try {
        std::lock_guard<std::mutex> g(*m);
        auto& slot = (*counters)[exported_name];
        if (!slot) slot = std::make_unique<std::atomic<unsigned long long>>(0);
        return *slot;
    } catch (...) {
        return uncounted;
    }
}

void trace_call(const char* exported_name) {
    static const bool enabled = [] {
        const char* v = std::getenv("FAKE_CUDA_TRACE");
        return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
    }();
    if (enabled) std::fprintf(stderr, "fake_cuda: %s\n", exported_name);
}

int device_count() { return state().device_count; }

CUresult check_init() {
    std::lock_guard<std::mutex> g(lock());
    return state().initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult check_device(CUdevice dev) {
    if (CUresult rc = check_init()) return rc;
    return (dev >= 0 && dev < device_count()) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

Context* find_context(CUcontext ctx) {
    for (auto& dev : state().devices)
        if (reinterpret_cast<CUcontext>(&dev->context) == ctx) return &dev->context;
    return nullptr;
}

CUcontext primary_context(int device) { return reinterpret_cast<CUcontext>(&state().devices[device]->context); }

int context_device(const Context* ctx) { return ctx->device; }

CUresult current_context(Context** out) {
    if (CUresult rc = check_init()) return rc;
    if (t_context_stack.empty() || t_context_stack.back() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *out = t_context_stack.back();
    return CUDA_SUCCESS;
}

CUcontext current_context_handle() {
    return t_context_stack.empty() ? nullptr : reinterpret_cast<CUcontext>(t_context_stack.back());
}

FakeCudaMemorySide describe_memory(CUdeviceptr p) {
    FakeCudaMemorySide side{FAKE_CUDA_MEMORY_PAGEABLE, -1, nullptr};  // memory the fake did not hand out
    std::lock_guard<std::mutex> g(lock());
    auto it = find_alloc(p);
    if (it == state().allocs.end()) return side;
    switch (it->second.kind) {
        case AllocKind::HostPinned: side.memory = FAKE_CUDA_MEMORY_PINNED; return side;
        case AllocKind::Managed: side.memory = FAKE_CUDA_MEMORY_MANAGED; break;
        default: side.memory = FAKE_CUDA_MEMORY_DEVICE; break;
    }
    side.device = it->second.device;
    side.context = primary_context(side.device);
    return side;
}

bool range_is_allocated(CUdeviceptr ptr, size_t bytes) {
    std::lock_guard<std::mutex> g(lock());
    auto it = find_alloc(ptr);
    if (it == state().allocs.end()) return false;
    return ptr - it->first + bytes <= it->second.size;
}

CUresult alloc_device(CUdeviceptr* dptr, size_t bytes, int device, CUmemoryPool pool_handle, bool managed) {
    if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *dptr = 0;
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    const size_t charged = round_up(bytes, kAllocAlign);
    std::lock_guard<std::mutex> g(lock());
    Pool* pool = nullptr;
    if (pool_handle != nullptr && (pool = as_pool(pool_handle)) == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = charge(device, charged)) return rc;
    void* p = device_block(charged);
    if (p == nullptr) {
        uncharge(device, charged);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    AllocKind kind = managed ? AllocKind::Managed : (pool ? AllocKind::Pool : AllocKind::Device);
    *dptr = reinterpret_cast<CUdeviceptr>(p);
    record(*dptr, bytes, charged, device, kind, pool);
    if (pool != nullptr) pool_add(pool, static_cast<long long>(charged));
    return CUDA_SUCCESS;
}

CUresult free_device(CUdeviceptr dptr) {
    if (dptr == 0) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> g(lock());
    auto it = state().allocs.find(dptr);
    if (it == state().allocs.end() || it->second.kind == AllocKind::HostPinned ||
        it->second.kind == AllocKind::Mapped)
        return CUDA_ERROR_INVALID_VALUE;
    Alloc a = it->second;
    state().allocs.erase(it);
    release(dptr, a);
    return CUDA_SUCCESS;
}

CUresult default_pool(int device, CUmemoryPool* out) {
    *out = reinterpret_cast<CUmemoryPool>(&state().devices[device]->default_pool);
    return CUDA_SUCCESS;
}

CUresult check_pool(CUmemoryPool pool, int* device) {
    std::lock_guard<std::mutex> g(lock());
    Pool* p = as_pool(pool);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *device = p->device;
    return CUDA_SUCCESS;
}

}  // namespace fake

using namespace fake;

// ----------------------------------------------------------------------------
// Exported entry points. Each is declared extern "C" by cuda.h, fake_cuda.h or
// fake_driver_internal.h; the definitions inherit that linkage, and
// -Wmissing-declarations catches one that is not declared (and would be
// mangled and left out of the export list).
// ----------------------------------------------------------------------------

unsigned long long fakeCudaCallCount(const char* exportedName) {
    return exportedName ? call_counter(exportedName).load() : 0;
}

// --- Errors -------------------------------------------------------------------

namespace {
struct ErrorText {
    CUresult code;
    const char* name;
    const char* text;
};
#define FAKE_ERR(code, text) {code, #code, text}
const ErrorText kErrors[] = {
    FAKE_ERR(CUDA_SUCCESS, "no error"),
    FAKE_ERR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    FAKE_ERR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    FAKE_ERR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    FAKE_ERR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    FAKE_ERR(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool"),
    FAKE_ERR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    FAKE_ERR(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"),
    FAKE_ERR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    FAKE_ERR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    FAKE_ERR(CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license"),
    FAKE_ERR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    FAKE_ERR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    FAKE_ERR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    FAKE_ERR(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    FAKE_ERR(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
    FAKE_ERR(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    FAKE_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    FAKE_ERR(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    FAKE_ERR(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    FAKE_ERR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    FAKE_ERR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    FAKE_ERR(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    FAKE_ERR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    FAKE_ERR(CUDA_ERROR_NOT_READY, "device not ready"),
    FAKE_ERR(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    FAKE_ERR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    FAKE_ERR(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    FAKE_ERR(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    FAKE_ERR(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    FAKE_ERR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"),
    FAKE_ERR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    FAKE_ERR(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    FAKE_ERR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
    FAKE_ERR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
    FAKE_ERR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    FAKE_ERR(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"),
    FAKE_ERR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    FAKE_ERR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    FAKE_ERR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    FAKE_ERR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
    FAKE_ERR(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef FAKE_ERR
const ErrorText* find_error(CUresult code) {
    for (const ErrorText& e : kErrors)
        if (e.code == code) return &e;
    return nullptr;
}
}  // namespace

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
    FAKE_ENTRY();
    if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* e = find_error(error);
    *pStr = e ? e->name : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
    FAKE_ENTRY();
    if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const ErrorText* e = find_error(error);
    *pStr = e ? e->text : nullptr;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// --- Initialisation and devices -------------------------------------------------

CUresult CUDAAPI cuInit(unsigned int Flags) {
    FAKE_ENTRY();
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(lock());
    if (state().device_count == 0) return CUDA_ERROR_NO_DEVICE;
    state().initialized = true;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
    FAKE_ENTRY();
    if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = CUDA_VERSION;  // 13000: the header we are built against
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
    FAKE_ENTRY();
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(ordinal)) return rc;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
    FAKE_ENTRY();
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    *count = device_count();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
    FAKE_ENTRY();
    if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(dev)) return rc;
    std::snprintf(name, static_cast<size_t>(len), "%s", "Fake CUDA Device");
    return CUDA_SUCCESS;
}

namespace {
CUresult device_uuid(CUuuid* uuid, CUdevice dev) {
    if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(dev)) return rc;
    // Deterministic: "FAKECUDA" followed by the ordinal.
    std::memset(uuid->bytes, 0, sizeof uuid->bytes);
    std::memcpy(uuid->bytes, "FAKECUDA", 8);
    uuid->bytes[15] = static_cast<char>(dev);
    return CUDA_SUCCESS;
}
}  // namespace

CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
    FAKE_ENTRY();
    return device_uuid(uuid, dev);
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
    FAKE_ENTRY();
    return device_uuid(uuid, dev);
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
    FAKE_ENTRY();
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(dev)) return rc;
    *bytes = state().devices[dev]->capacity;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
    FAKE_ENTRY();
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(dev)) return rc;
    *bytes = clamp_u32(state().devices[dev]->capacity);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
    FAKE_ENTRY();
    if (pi == nullptr || attrib < 1 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(dev)) return rc;
    // An H100-like part: compute capability 9.0, 132 SMs.
    switch (attrib) {
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *pi = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *pi = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *pi = 64; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *pi = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *pi = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *pi = 65535; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *pi = 49152; break;
        case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *pi = 65536; break;
        case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *pi = 2147483647; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *pi = 65536; break;
        case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *pi = 1980000; break;  // kHz
        case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *pi = 512; break;
        case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
        case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *pi = CU_COMPUTEMODE_DEFAULT; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = 0x18 + dev; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *pi = 2619000; break;  // kHz
        case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *pi = 5120; break;
        case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *pi = 50 << 20; break;
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *pi = 2048; break;
        case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *pi = 3; break;
        case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *pi = 32; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
        case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *pi = 233472; break;
        case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *pi = 65536; break;
        case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *pi = 232448; break;
        case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: *pi = 32; break;
        case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: *pi = 32 << 20; break;
        case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: *pi = 134213632; break;
        case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: *pi = 1024; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: *pi = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; break;
        case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_NUMA_ID: *pi = -1; break;
        case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: *pi = -1; break;
        default: *pi = 0; break;  // every other attribute: "not supported"
    }
    return CUDA_SUCCESS;
}

// --- Contexts ------------------------------------------------------------------

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
    FAKE_ENTRY();
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(dev)) return rc;
    std::lock_guard<std::mutex> g(lock());
    ++state().devices[dev]->context.retain_count;
    *pctx = primary_context(dev);
    return CUDA_SUCCESS;
}

namespace {
CUresult primary_release(CUdevice dev) {
    if (CUresult rc = check_device(dev)) return rc;
    std::lock_guard<std::mutex> g(lock());
    Context& ctx = state().devices[dev]->context;
    if (ctx.retain_count == 0) return CUDA_ERROR_INVALID_CONTEXT;
    --ctx.retain_count;  // the fake never tears a context down
    return CUDA_SUCCESS;
}
}  // namespace

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
    FAKE_ENTRY();
    return primary_release(dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    FAKE_ENTRY();
    return primary_release(dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
    FAKE_ENTRY();
    if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(dev)) return rc;
    std::lock_guard<std::mutex> g(lock());
    *flags = 0;
    *active = state().devices[dev]->context.retain_count > 0 ? 1 : 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    Context* c = nullptr;
    if (ctx != nullptr && (c = find_context(ctx)) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    // Replaces the top of the stack; setting NULL leaves no context current.
    if (t_context_stack.empty())
        t_context_stack.push_back(c);
    else
        t_context_stack.back() = c;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
    FAKE_ENTRY();
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    *pctx = t_context_stack.empty() ? nullptr : reinterpret_cast<CUcontext>(t_context_stack.back());
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    Context* c = find_context(ctx);
    if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (t_context_stack.full()) return CUDA_ERROR_OUT_OF_MEMORY;
    t_context_stack.push_back(c);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* pctx) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    if (t_context_stack.empty() || t_context_stack.back() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (pctx != nullptr) *pctx = reinterpret_cast<CUcontext>(t_context_stack.back());
    t_context_stack.pop_back();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
    FAKE_ENTRY();
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
    *device = ctx->device;
    return CUDA_SUCCESS;
}

// CUDA 13: an explicit context, NULL meaning the current one.
CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
    FAKE_ENTRY();
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Context* c = nullptr;
    if (ctx == nullptr) {
        if (CUresult rc = current_context(&c)) return rc;
    } else if (CUresult rc = check_init()) {
        return rc;
    } else if ((c = find_context(ctx)) == nullptr) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *device = c->device;
    return CUDA_SUCCESS;
}

// Nothing to start or stop: the capture range is the profiler's business.
CUresult CUDAAPI cuProfilerStart(void) {
    FAKE_ENTRY();
    Context* ctx = nullptr;
    return current_context(&ctx);
}

CUresult CUDAAPI cuProfilerStop(void) {
    FAKE_ENTRY();
    Context* ctx = nullptr;
    return current_context(&ctx);
}

// Work is done synchronously by every call, so synchronising has nothing to wait for.
CUresult CUDAAPI cuCtxSynchronize(void) {
    FAKE_ENTRY();
    Context* ctx = nullptr;
    return current_context(&ctx);
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
    FAKE_ENTRY();
    Context* c = nullptr;
    if (ctx == nullptr) return current_context(&c);
    if (CUresult rc = check_init()) return rc;
    return find_context(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// --- Device memory --------------------------------------------------------------

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
    FAKE_ENTRY();
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
    return alloc_device(dptr, bytesize, ctx->device, nullptr, false);
}

// The CUDA 2.0 ABI: a 32-bit device pointer. Served from the low 2 GiB of the
// address space (MAP_32BIT) so that the pointer fits and stays usable.
CUresult CUDAAPI cuMemAlloc(FakeCUdeviceptr_v1* dptr, unsigned int bytesize) {
    FAKE_ENTRY();
    if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    *dptr = 0;
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
#ifdef MAP_32BIT
    const size_t charged = round_up(bytesize, kAllocAlign);
    std::lock_guard<std::mutex> g(lock());
    if (CUresult rc = charge(ctx->device, charged)) return rc;
    void* p = mmap(nullptr, round_up(bytesize, kHostAlign), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (p == MAP_FAILED) {
        uncharge(ctx->device, charged);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    record(reinterpret_cast<CUdeviceptr>(p), bytesize, charged, ctx->device, AllocKind::Legacy32, nullptr);
    *dptr = static_cast<FakeCUdeviceptr_v1>(reinterpret_cast<uintptr_t>(p));
    return CUDA_SUCCESS;
#else
    return CUDA_ERROR_NOT_SUPPORTED;
#endif
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                                    unsigned int ElementSizeBytes) {
    FAKE_ENTRY();
    if (dptr == nullptr || pPitch == nullptr || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
    if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
    const size_t pitch = round_up(WidthInBytes, kPitchAlign);
    if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = alloc_device(dptr, pitch * Height, ctx->device, nullptr, false);
    if (rc == CUDA_SUCCESS) *pPitch = pitch;
    return rc;
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
    FAKE_ENTRY();
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
    return alloc_device(dptr, bytesize, ctx->device, nullptr, true);
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    return free_device(dptr);
}

CUresult CUDAAPI cuMemFree(FakeCUdeviceptr_v1 dptr) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    return free_device(dptr);
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t* free, size_t* total) {
    FAKE_ENTRY();
    if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
    std::lock_guard<std::mutex> g(lock());
    const Device& dev = *state().devices[ctx->device];
    *free = dev.capacity - dev.used;
    *total = dev.capacity;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo(unsigned int* free, unsigned int* total) {
    FAKE_ENTRY();
    size_t f = 0, t = 0;
    if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    Context* ctx = nullptr;
    if (CUresult rc = current_context(&ctx)) return rc;
    {
        std::lock_guard<std::mutex> g(lock());
        const Device& dev = *state().devices[ctx->device];
        f = dev.capacity - dev.used;
        t = dev.capacity;
    }
    *free = clamp_u32(f);
    *total = clamp_u32(t);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = find_alloc(dptr);
    if (it == state().allocs.end() || it->second.kind == AllocKind::HostPinned) return CUDA_ERROR_NOT_FOUND;
    if (pbase != nullptr) *pbase = it->first;
    if (psize != nullptr) *psize = it->second.size;
    return CUDA_SUCCESS;
}

// --- Stream-ordered allocation and pools -----------------------------------------

namespace {
CUresult alloc_async(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream stream, bool per_thread) {
    if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int device = 0;
    if (CUresult rc = stream_device(stream, per_thread, &device)) return rc;
    if (pool == nullptr) {
        default_pool(device, &pool);
    } else if (CUresult rc = check_pool(pool, &device)) {
        return rc;
    }
    return alloc_device(dptr, bytesize, device, pool, false);
}
CUresult free_async(CUdeviceptr dptr, CUstream stream, bool per_thread) {
    if (CUresult rc = check_stream(stream, per_thread)) return rc;
    return free_device(dptr);  // nothing is in flight, so "when the stream gets there" is now
}
}  // namespace

// Legacy / per-thread pairs (fake_twins.h).
FAKE_DRIVER_MEMORY_TWINS(FAKE_DEFINE_DRIVER_TWIN)

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
    FAKE_ENTRY();
    if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(dev)) return rc;
    return default_pool(dev, pool_out);
}

// No cuDeviceSetMemPool, so the current pool is always the default one.
CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
    FAKE_ENTRY();
    if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(dev)) return rc;
    return default_pool(dev, pool);
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps) {
    FAKE_ENTRY();
    if (pool == nullptr || poolProps == nullptr || poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(poolProps->location.id)) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto p = std::make_unique<Pool>();
    p->device = poolProps->location.id;
    *pool = reinterpret_cast<CUmemoryPool>(p.get());
    state().pools.push_back(std::move(p));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
    FAKE_ENTRY();
    std::lock_guard<std::mutex> g(lock());
    auto& pools = state().pools;
    auto it = std::find_if(pools.begin(), pools.end(),
                           [&](const std::unique_ptr<Pool>& p) { return reinterpret_cast<CUmemoryPool>(p.get()) == pool; });
    if (it == pools.end()) return CUDA_ERROR_INVALID_VALUE;
    // Allocations still out keep working; they just stop reporting to the pool.
    for (auto& entry : state().allocs)
        if (entry.second.pool == it->get()) entry.second.pool = nullptr;
    pools.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
    FAKE_ENTRY();
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(lock());
    Pool* p = as_pool(pool);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto* u64 = static_cast<cuuint64_t*>(value);
    switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *static_cast<int*>(value) = 1; break;
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *u64 = p->release_threshold; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *u64 = p->reserved; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *u64 = p->reserved_high; break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *u64 = p->used; break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *u64 = p->used_high; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
    FAKE_ENTRY();
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(lock());
    Pool* p = as_pool(pool);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const cuuint64_t v = *static_cast<cuuint64_t*>(value);
    switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: break;  // accepted, no effect
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->release_threshold = v; break;
        // Like the real driver, the high watermarks can only be reset to zero,
        // which sets them to the current value.
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            if (v != 0) return CUDA_ERROR_INVALID_VALUE;
            p->reserved_high = p->reserved;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            if (v != 0) return CUDA_ERROR_INVALID_VALUE;
            p->used_high = p->used;
            break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
    FAKE_ENTRY();
    std::lock_guard<std::mutex> g(lock());
    Pool* p = as_pool(pool);
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    p->reserved = std::max<unsigned long long>(round_up(p->used, kGranularity),
                                               std::min<unsigned long long>(p->reserved, minBytesToKeep));
    return CUDA_SUCCESS;
}

// --- Pinned host memory -------------------------------------------------------------

CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytesize) {
    FAKE_ENTRY();
    return alloc_host(pp, bytesize);
}

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
    FAKE_ENTRY();
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if ((Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
    return alloc_host(pp, bytesize);
}

CUresult CUDAAPI cuMemFreeHost(void* p) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = state().allocs.find(reinterpret_cast<CUdeviceptr>(p));
    if (it == state().allocs.end() || it->second.kind != AllocKind::HostPinned) return CUDA_ERROR_INVALID_VALUE;
    Alloc a = it->second;
    state().allocs.erase(it);
    release(reinterpret_cast<CUdeviceptr>(p), a);
    return CUDA_SUCCESS;
}

// --- Pointer attributes --------------------------------------------------------------

namespace {
// Caller holds lock(). Returns CUDA_ERROR_INVALID_VALUE for memory the fake
// did not hand out, as the real driver does for unregistered host memory.
CUresult pointer_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    auto it = find_alloc(ptr);
    if (it == state().allocs.end()) return CUDA_ERROR_INVALID_VALUE;
    const CUdeviceptr base = it->first;
    const Alloc& a = it->second;
    const bool host = a.kind == AllocKind::HostPinned;
    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext*>(data) = primary_context(a.device); break;
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *static_cast<unsigned*>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
            break;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *static_cast<CUdeviceptr*>(data) = ptr; break;
        case CU_POINTER_ATTRIBUTE_HOST_POINTER:
            if (!host && a.kind != AllocKind::Managed) return CUDA_ERROR_INVALID_VALUE;
            *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
            break;
        case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *static_cast<unsigned*>(data) = 1; break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID: *static_cast<unsigned long long*>(data) = a.buffer_id; break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<unsigned*>(data) = a.kind == AllocKind::Managed; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = a.device; break;
        case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
            *static_cast<unsigned*>(data) = a.kind == AllocKind::Device;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *static_cast<CUdeviceptr*>(data) = base; break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *static_cast<size_t*>(data) = a.size; break;
        case CU_POINTER_ATTRIBUTE_MAPPED: *static_cast<unsigned*>(data) = 1; break;
        case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *static_cast<CUmemoryPool*>(data) = reinterpret_cast<CUmemoryPool>(a.pool); break;
        case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *static_cast<size_t*>(data) = a.size; break;
        case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *static_cast<void**>(data) = reinterpret_cast<void*>(base); break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
}  // namespace

CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    FAKE_ENTRY();
    if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    return pointer_attribute(data, attribute, ptr);
}

// Unlike the single query, the batch one succeeds for unknown pointers and
// reports them as unregistered (memory type 0, NULL context).
CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes, void** data,
                                        CUdeviceptr ptr) {
    FAKE_ENTRY();
    if (numAttributes == 0 || attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    const bool known = find_alloc(ptr) != state().allocs.end();
    for (unsigned i = 0; i < numAttributes; ++i) {
        if (data[i] == nullptr) continue;
        if (known && pointer_attribute(data[i], attributes[i], ptr) == CUDA_SUCCESS) continue;
        switch (attributes[i]) {  // zero of the attribute's own width
            case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data[i]) = -2; break;
            case CU_POINTER_ATTRIBUTE_CONTEXT:
            case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
            case CU_POINTER_ATTRIBUTE_HOST_POINTER:
            case CU_POINTER_ATTRIBUTE_BUFFER_ID:
            case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
            case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
            case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *static_cast<unsigned long long*>(data[i]) = 0; break;
            default: *static_cast<unsigned*>(data[i]) = 0; break;
        }
    }
    return CUDA_SUCCESS;
}

// --- Virtual memory management ------------------------------------------------------

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
    FAKE_ENTRY();
    if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    *granularity = kGranularity;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags) {
    FAKE_ENTRY();
    if (ptr == nullptr || size == 0 || size % kGranularity != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (alignment != 0 && (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    // Real host memory, so that mapped ranges can be dereferenced. The
    // requested address is a hint, as for the real driver. MAP_NORESERVE: a
    // large reservation costs nothing until touched.
    const size_t align = std::max(alignment, kGranularity);
    const size_t os_size = size + align;
    void* os_base = mmap(reinterpret_cast<void*>(addr), os_size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (os_base == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    const CUdeviceptr base = round_up(reinterpret_cast<uintptr_t>(os_base), align);
    std::lock_guard<std::mutex> g(lock());
    state().reservations[base] = Reservation{size, os_base, os_size};
    *ptr = base;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = state().reservations.find(ptr);
    if (it == state().reservations.end() || it->second.size != size) return CUDA_ERROR_INVALID_VALUE;
    // Every mapping must be gone first.
    auto m = state().allocs.lower_bound(ptr);
    if (m != state().allocs.end() && m->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
    munmap(it->second.os_base, it->second.os_size);
    state().reservations.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
                             unsigned long long flags) {
    FAKE_ENTRY();
    if (handle == nullptr || prop == nullptr || flags != 0 || size == 0 || size % kGranularity != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_device(prop->location.id)) return rc;
    std::lock_guard<std::mutex> g(lock());
    if (CUresult rc = charge(prop->location.id, size)) return rc;
    int fd = memfd_create("fake_cuda_vmm", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
        if (fd >= 0) close(fd);
        uncharge(prop->location.id, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    PhysMem pm;
    pm.size = size;
    pm.device = prop->location.id;
    pm.fd = fd;
    *handle = state().next_handle++;
    state().phys[*handle] = pm;
    return CUDA_SUCCESS;
}

namespace {
// Frees physical memory once it is released and no longer mapped. Caller holds lock().
void maybe_destroy(std::map<CUmemGenericAllocationHandle, PhysMem>::iterator it) {
    if (!it->second.released || it->second.mappings != 0) return;
    close(it->second.fd);
    uncharge(it->second.device, it->second.size);
    state().phys.erase(it);
}
}  // namespace

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
    FAKE_ENTRY();
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    auto it = state().phys.find(handle);
    if (it == state().phys.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
    it->second.released = true;
    maybe_destroy(it);
    return CUDA_SUCCESS;
}

// A mapping is recorded as an allocation of kind Mapped (so copies and
// pointer queries see it) that charges nothing: its physical memory was
// charged by cuMemCreate.
CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
    FAKE_ENTRY();
    if (flags != 0 || size == 0 || size % kGranularity != 0 || offset % kGranularity != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    State& st = state();
    auto pm = st.phys.find(handle);
    if (pm == st.phys.end() || pm->second.released || offset + size > pm->second.size)
        return CUDA_ERROR_INVALID_VALUE;
    // The range must lie in one reservation and overlap no other mapping.
    auto res = st.reservations.upper_bound(ptr);
    if (res == st.reservations.begin()) return CUDA_ERROR_INVALID_VALUE;
    --res;
    if (ptr + size > res->first + res->second.size) return CUDA_ERROR_INVALID_VALUE;
    auto next = st.allocs.lower_bound(ptr);
    if (next != st.allocs.end() && next->first < ptr + size) return CUDA_ERROR_ALREADY_MAPPED;
    if (find_alloc(ptr) != st.allocs.end()) return CUDA_ERROR_ALREADY_MAPPED;
    void* p = mmap(reinterpret_cast<void*>(ptr), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                   pm->second.fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    ++pm->second.mappings;
    Alloc a;
    a.size = size;
    a.charged = 0;
    a.device = pm->second.device;
    a.kind = AllocKind::Mapped;
    a.buffer_id = st.next_buffer_id++;
    st.allocs[ptr] = a;
    st.mapped_handle[ptr] = handle;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
    FAKE_ENTRY();
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    std::lock_guard<std::mutex> g(lock());
    State& st = state();
    // Every mapping inside [ptr, ptr + size) goes; a mapping must not straddle the edge.
    auto first = st.allocs.lower_bound(ptr);
    if (first == st.allocs.end() || first->first != ptr) return CUDA_ERROR_INVALID_VALUE;
    for (auto it = first; it != st.allocs.end() && it->first < ptr + size; ++it)
        if (it->second.kind != AllocKind::Mapped || it->first + it->second.size > ptr + size)
            return CUDA_ERROR_INVALID_VALUE;
    for (auto it = first; it != st.allocs.end() && it->first < ptr + size;) {
        // Put plain anonymous memory back under the reservation.
        mmap(reinterpret_cast<void*>(it->first), it->second.size, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        auto h = st.mapped_handle.find(it->first);
        auto pm = st.phys.find(h->second);
        st.mapped_handle.erase(h);
        if (pm != st.phys.end()) {
            --pm->second.mappings;
            maybe_destroy(pm);
        }
        it = st.allocs.erase(it);
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
    FAKE_ENTRY();
    if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = check_init()) return rc;
    for (size_t i = 0; i < count; ++i)
        if (desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE && check_device(desc[i].location.id) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_DEVICE;
    // Access is never enforced (host memory is always accessible); only the
    // range is checked: it must be covered by mappings.
    std::lock_guard<std::mutex> g(lock());
    CUdeviceptr at = ptr;
    while (at < ptr + size) {
        auto it = find_alloc(at);
        if (it == state().allocs.end() || it->second.kind != AllocKind::Mapped) return CUDA_ERROR_INVALID_VALUE;
        at = it->first + it->second.size;
    }
    return CUDA_SUCCESS;
}
