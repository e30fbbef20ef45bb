// Fake CUDA runtime, built as libcudart.so.13 for tests only.
//
// What matters is not what it computes but how it reaches the driver, which
// copies the real runtime:
//   1. at first use, dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
//   2. dlsym(handle, "cuGetProcAddress_v2") - the only dlsym of a CUDA
//      function (see "Tools" below for the fake's own two);
//   3. ask that function for "cuGetProcAddress" itself, at 12000 (the _v2
//      ABI, used for every later lookup) and at 11030 (the v1 ABI, used once,
//      for cuDriverGetVersion);
//   4. fetch every other driver function through the answer: legacy entry
//      points with flags 0, _ptsz / _ptds entry points with
//      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, each at the version of
//      the ABI it calls (the version in its PFN typedef's name).
// The runtime never links libcuda and never calls a driver symbol directly.
//
// Each runtime call makes exactly one "interesting" driver call (memory,
// launch, copy, set, synchronisation); the first call of the process, and the
// first of each thread, also initialise: cuInit, cuDeviceGetCount,
// cuDevicePrimaryCtxRetain, cuCtxSetCurrent.
//
// Kernels: nvcc-generated code registers fatbinaries; here a test calls
// fakeRegisterKernel(stub, name), which loads a one-kernel fake library
// (cuLibraryLoadData + cuLibraryGetKernel) and binds the CUkernel to stub.
// Launches pass that CUkernel as the CUfunction, as CUDA 12+ runtimes do.
//
// Tools: every exported runtime function (FAKE_RT_ENTRY) reports itself as
// one API call, under its CUPTI runtime callback id, to the fake driver's
// tool interface (fakeCudaToolApiEnter / Exit, fake_cuda_tool.h), which
// passes it on to the fake CUPTI. The real runtime does the same through a
// private driver interface.
#include "fake_cuda.h"
#include "fake_cuda_tool.h"
#include "fake_cupti_ids.h"

#include <cuda_profiler_api.h>
#include <cudaProfilerTypedefs.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace {

// ---------------------------------------------------------------------------
// Error codes. The runtime's codes were aligned with the driver's, so the
// driver result converts as is; the asserts pin down the ones we rely on.
// ---------------------------------------------------------------------------
static_assert(int(cudaErrorInvalidValue) == int(CUDA_ERROR_INVALID_VALUE), "");
static_assert(int(cudaErrorMemoryAllocation) == int(CUDA_ERROR_OUT_OF_MEMORY), "");
static_assert(int(cudaErrorInitializationError) == int(CUDA_ERROR_NOT_INITIALIZED), "");
static_assert(int(cudaErrorCudartUnloading) == int(CUDA_ERROR_DEINITIALIZED), "");
static_assert(int(cudaErrorNoDevice) == int(CUDA_ERROR_NO_DEVICE), "");
static_assert(int(cudaErrorInvalidDevice) == int(CUDA_ERROR_INVALID_DEVICE), "");
static_assert(int(cudaErrorDeviceUninitialized) == int(CUDA_ERROR_INVALID_CONTEXT), "");
static_assert(int(cudaErrorInvalidResourceHandle) == int(CUDA_ERROR_INVALID_HANDLE), "");
static_assert(int(cudaErrorSymbolNotFound) == int(CUDA_ERROR_NOT_FOUND), "");
static_assert(int(cudaErrorNotReady) == int(CUDA_ERROR_NOT_READY), "");
static_assert(int(cudaErrorNotSupported) == int(CUDA_ERROR_NOT_SUPPORTED), "");
static_assert(int(cudaErrorUnknown) == int(CUDA_ERROR_UNKNOWN), "");

// Flag values the runtime passes through unchanged.
static_assert(cudaHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE && cudaHostAllocMapped == CU_MEMHOSTALLOC_DEVICEMAP &&
                  cudaHostAllocWriteCombined == CU_MEMHOSTALLOC_WRITECOMBINED,
              "");
static_assert(cudaMemAttachGlobal == CU_MEM_ATTACH_GLOBAL && cudaMemAttachHost == CU_MEM_ATTACH_HOST, "");
// cudaLaunchKernelExC hands its attributes to the driver as they are.
static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute), "");

thread_local cudaError_t t_last_error = cudaSuccess;

// Every failing call records its error for cudaGetLastError.
cudaError_t fail(cudaError_t e) {
    if (e != cudaSuccess) t_last_error = e;
    return e;
}
cudaError_t result(CUresult rc) { return fail(static_cast<cudaError_t>(rc)); }

// ---------------------------------------------------------------------------
// Driver functions, all obtained through cuGetProcAddress.
// ---------------------------------------------------------------------------

// Driver functions that come in a legacy and a per-thread-default-stream
// variant. The two variants have identical signatures (asserted below), so one
// struct type holds either set.
struct StreamFns {
    PFN_cuMemcpy_v7000_ptds memcpy = nullptr;
    PFN_cuMemcpyAsync_v7000_ptsz memcpyAsync = nullptr;
    PFN_cuMemsetD8_v7000_ptds memsetD8 = nullptr;
    PFN_cuMemsetD8Async_v7000_ptsz memsetD8Async = nullptr;
    PFN_cuMemAllocAsync_v11020_ptsz memAllocAsync = nullptr;
    PFN_cuMemFreeAsync_v11020_ptsz memFreeAsync = nullptr;
    PFN_cuMemAllocFromPoolAsync_v11020_ptsz memAllocFromPoolAsync = nullptr;
    PFN_cuLaunchKernel_v7000_ptsz launchKernel = nullptr;
    PFN_cuLaunchKernelEx_v11060_ptsz launchKernelEx = nullptr;
    PFN_cuLaunchCooperativeKernel_v9000_ptsz launchCooperativeKernel = nullptr;
    PFN_cuGraphLaunch_v10000_ptsz graphLaunch = nullptr;
    PFN_cuStreamSynchronize_v7000_ptsz streamSynchronize = nullptr;
    PFN_cuStreamBeginCapture_v10010_ptsz streamBeginCapture = nullptr;
    PFN_cuStreamBeginCaptureToGraph_v12030_ptsz streamBeginCaptureToGraph = nullptr;
    PFN_cuStreamEndCapture_v10000_ptsz streamEndCapture = nullptr;
    PFN_cuStreamIsCapturing_v10000_ptsz streamIsCapturing = nullptr;
    PFN_cuEventRecord_v7000_ptsz eventRecord = nullptr;
};
static_assert(std::is_same<PFN_cuMemcpy_v4000, PFN_cuMemcpy_v7000_ptds>::value, "");
static_assert(std::is_same<PFN_cuMemcpyAsync_v4000, PFN_cuMemcpyAsync_v7000_ptsz>::value, "");
static_assert(std::is_same<PFN_cuMemsetD8_v3020, PFN_cuMemsetD8_v7000_ptds>::value, "");
static_assert(std::is_same<PFN_cuMemsetD8Async_v3020, PFN_cuMemsetD8Async_v7000_ptsz>::value, "");
static_assert(std::is_same<PFN_cuMemAllocAsync_v11020, PFN_cuMemAllocAsync_v11020_ptsz>::value, "");
static_assert(std::is_same<PFN_cuMemFreeAsync_v11020, PFN_cuMemFreeAsync_v11020_ptsz>::value, "");
static_assert(std::is_same<PFN_cuMemAllocFromPoolAsync_v11020, PFN_cuMemAllocFromPoolAsync_v11020_ptsz>::value, "");
static_assert(std::is_same<PFN_cuLaunchKernel_v4000, PFN_cuLaunchKernel_v7000_ptsz>::value, "");
static_assert(std::is_same<PFN_cuLaunchKernelEx_v11060, PFN_cuLaunchKernelEx_v11060_ptsz>::value, "");
static_assert(std::is_same<PFN_cuLaunchCooperativeKernel_v9000, PFN_cuLaunchCooperativeKernel_v9000_ptsz>::value, "");
static_assert(std::is_same<PFN_cuGraphLaunch_v10000, PFN_cuGraphLaunch_v10000_ptsz>::value, "");
static_assert(std::is_same<PFN_cuStreamSynchronize_v2000, PFN_cuStreamSynchronize_v7000_ptsz>::value, "");
static_assert(std::is_same<PFN_cuStreamBeginCapture_v10010, PFN_cuStreamBeginCapture_v10010_ptsz>::value, "");
static_assert(std::is_same<PFN_cuStreamBeginCaptureToGraph_v12030, PFN_cuStreamBeginCaptureToGraph_v12030_ptsz>::value, "");
static_assert(std::is_same<PFN_cuStreamEndCapture_v10000, PFN_cuStreamEndCapture_v10000_ptsz>::value, "");
static_assert(std::is_same<PFN_cuStreamIsCapturing_v10000, PFN_cuStreamIsCapturing_v10000_ptsz>::value, "");
static_assert(std::is_same<PFN_cuEventRecord_v2000, PFN_cuEventRecord_v7000_ptsz>::value, "");

struct Driver {
    PFN_cuGetProcAddress_v12000 getProcAddress = nullptr;    // used for every lookup
    PFN_cuGetProcAddress_v11030 getProcAddressV1 = nullptr;  // used once, for cuDriverGetVersion
    PFN_cuDriverGetVersion_v2020 driverGetVersion = nullptr;
    PFN_cuInit_v2000 init = nullptr;
    PFN_cuDeviceGetCount_v2000 deviceGetCount = nullptr;
    PFN_cuDevicePrimaryCtxRetain_v7000 primaryCtxRetain = nullptr;
    PFN_cuCtxSetCurrent_v4000 ctxSetCurrent = nullptr;
    PFN_cuCtxSynchronize_v2000 ctxSynchronize = nullptr;
    PFN_cuProfilerStart_v4000 profilerStart = nullptr;
    PFN_cuProfilerStop_v4000 profilerStop = nullptr;
    PFN_cuMemAlloc_v3020 memAlloc = nullptr;
    PFN_cuMemFree_v3020 memFree = nullptr;
    PFN_cuMemAllocManaged_v6000 memAllocManaged = nullptr;
    PFN_cuMemAllocPitch_v3020 memAllocPitch = nullptr;
    PFN_cuMemAllocHost_v3020 memAllocHost = nullptr;
    PFN_cuMemHostAlloc_v2020 memHostAlloc = nullptr;
    PFN_cuMemFreeHost_v2000 memFreeHost = nullptr;
    PFN_cuMemGetInfo_v3020 memGetInfo = nullptr;
    PFN_cuDeviceGetDefaultMemPool_v11020 deviceGetDefaultMemPool = nullptr;
    PFN_cuStreamCreate_v2000 streamCreate = nullptr;
    PFN_cuStreamDestroy_v4000 streamDestroy = nullptr;
    PFN_cuEventCreate_v2000 eventCreate = nullptr;
    PFN_cuEventDestroy_v4000 eventDestroy = nullptr;
    PFN_cuEventSynchronize_v2000 eventSynchronize = nullptr;
    PFN_cuLibraryLoadData_v12000 libraryLoadData = nullptr;
    PFN_cuLibraryGetKernel_v12000 libraryGetKernel = nullptr;
    PFN_cuGraphCreate_v10000 graphCreate = nullptr;
    PFN_cuGraphInstantiateWithFlags_v11040 graphInstantiate = nullptr;
    PFN_cuGraphExecDestroy_v10000 graphExecDestroy = nullptr;
    PFN_cuGraphDestroy_v10000 graphDestroy = nullptr;
    StreamFns legacy;
    StreamFns per_thread;

    int device_count = 0;
    std::vector<CUcontext> primary;  // retained primary contexts, by device
    cudaError_t init_error = cudaSuccess;
};

Driver& drv() {
    static Driver* d = new Driver;  // never destroyed: atexit code may still call the runtime
    return *d;
}

std::mutex& mu() {
    static std::mutex* m = new std::mutex;
    return *m;
}

// One lookup through the cuGetProcAddress the runtime was given.
template <typename Pfn>
bool fetch(Pfn* out, PFN_cuGetProcAddress_v12000 getProc, const char* name, int version, cuuint64_t flags) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult rc = getProc(name, &p, version, flags, &status);
    *out = reinterpret_cast<Pfn>(p);
    return rc == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS && p != nullptr;
}

bool fetch_stream_fns(StreamFns* f, PFN_cuGetProcAddress_v12000 gp, bool per_thread) {
    const cuuint64_t flags = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    // The per-thread variants appeared later than some legacy ones.
    auto v = [per_thread](int legacy, int ptds) { return per_thread ? ptds : legacy; };
    bool ok = true;
    ok &= fetch(&f->memcpy, gp, "cuMemcpy", v(4000, 7000), flags);
    ok &= fetch(&f->memcpyAsync, gp, "cuMemcpyAsync", v(4000, 7000), flags);
    ok &= fetch(&f->memsetD8, gp, "cuMemsetD8", v(3020, 7000), flags);
    ok &= fetch(&f->memsetD8Async, gp, "cuMemsetD8Async", v(3020, 7000), flags);
    ok &= fetch(&f->memAllocAsync, gp, "cuMemAllocAsync", 11020, flags);
    ok &= fetch(&f->memFreeAsync, gp, "cuMemFreeAsync", 11020, flags);
    ok &= fetch(&f->memAllocFromPoolAsync, gp, "cuMemAllocFromPoolAsync", 11020, flags);
    ok &= fetch(&f->launchKernel, gp, "cuLaunchKernel", v(4000, 7000), flags);
    ok &= fetch(&f->launchKernelEx, gp, "cuLaunchKernelEx", 11060, flags);
    ok &= fetch(&f->launchCooperativeKernel, gp, "cuLaunchCooperativeKernel", 9000, flags);
    ok &= fetch(&f->graphLaunch, gp, "cuGraphLaunch", 10000, flags);
    ok &= fetch(&f->streamSynchronize, gp, "cuStreamSynchronize", v(2000, 7000), flags);
    ok &= fetch(&f->streamBeginCapture, gp, "cuStreamBeginCapture", 10010, flags);
    ok &= fetch(&f->streamBeginCaptureToGraph, gp, "cuStreamBeginCaptureToGraph", 12030, flags);
    ok &= fetch(&f->streamEndCapture, gp, "cuStreamEndCapture", 10000, flags);
    ok &= fetch(&f->streamIsCapturing, gp, "cuStreamIsCapturing", 10000, flags);
    ok &= fetch(&f->eventRecord, gp, "cuEventRecord", v(2000, 7000), flags);
    return ok;
}

// Steps 1-4 of the header comment, then cuInit. Runs once per process.
cudaError_t load_driver(Driver& d) {
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return cudaErrorInsufficientDriver;
    auto bootstrap = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(handle, "cuGetProcAddress_v2"));
    if (bootstrap == nullptr) return cudaErrorInsufficientDriver;
    const cuuint64_t dflt = CU_GET_PROC_ADDRESS_DEFAULT;
    if (!fetch(&d.getProcAddress, bootstrap, "cuGetProcAddress", 12000, dflt)) return cudaErrorInsufficientDriver;
    if (!fetch(&d.getProcAddressV1, d.getProcAddress, "cuGetProcAddress", 11030, dflt))
        return cudaErrorInsufficientDriver;

    // The one lookup through the v1 ABI.
    void* p = nullptr;
    if (d.getProcAddressV1("cuDriverGetVersion", &p, 2020, dflt) != CUDA_SUCCESS || p == nullptr)
        return cudaErrorInsufficientDriver;
    d.driverGetVersion = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(p);

    PFN_cuGetProcAddress_v12000 gp = d.getProcAddress;
    bool ok = true;
    ok &= fetch(&d.init, gp, "cuInit", 2000, dflt);
    ok &= fetch(&d.deviceGetCount, gp, "cuDeviceGetCount", 2000, dflt);
    ok &= fetch(&d.primaryCtxRetain, gp, "cuDevicePrimaryCtxRetain", 7000, dflt);
    ok &= fetch(&d.ctxSetCurrent, gp, "cuCtxSetCurrent", 4000, dflt);
    ok &= fetch(&d.ctxSynchronize, gp, "cuCtxSynchronize", 2000, dflt);
    ok &= fetch(&d.profilerStart, gp, "cuProfilerStart", 4000, dflt);
    ok &= fetch(&d.profilerStop, gp, "cuProfilerStop", 4000, dflt);
    ok &= fetch(&d.memAlloc, gp, "cuMemAlloc", 3020, dflt);
    ok &= fetch(&d.memFree, gp, "cuMemFree", 3020, dflt);
    ok &= fetch(&d.memAllocManaged, gp, "cuMemAllocManaged", 6000, dflt);
    ok &= fetch(&d.memAllocPitch, gp, "cuMemAllocPitch", 3020, dflt);
    ok &= fetch(&d.memAllocHost, gp, "cuMemAllocHost", 3020, dflt);
    ok &= fetch(&d.memHostAlloc, gp, "cuMemHostAlloc", 2020, dflt);
    ok &= fetch(&d.memFreeHost, gp, "cuMemFreeHost", 2000, dflt);
    ok &= fetch(&d.memGetInfo, gp, "cuMemGetInfo", 3020, dflt);
    ok &= fetch(&d.deviceGetDefaultMemPool, gp, "cuDeviceGetDefaultMemPool", 11020, dflt);
    ok &= fetch(&d.streamCreate, gp, "cuStreamCreate", 2000, dflt);
    ok &= fetch(&d.streamDestroy, gp, "cuStreamDestroy", 4000, dflt);
    ok &= fetch(&d.eventCreate, gp, "cuEventCreate", 2000, dflt);
    ok &= fetch(&d.eventDestroy, gp, "cuEventDestroy", 4000, dflt);
    ok &= fetch(&d.eventSynchronize, gp, "cuEventSynchronize", 2000, dflt);
    ok &= fetch(&d.libraryLoadData, gp, "cuLibraryLoadData", 12000, dflt);
    ok &= fetch(&d.libraryGetKernel, gp, "cuLibraryGetKernel", 12000, dflt);
    ok &= fetch(&d.graphCreate, gp, "cuGraphCreate", 10000, dflt);
    ok &= fetch(&d.graphInstantiate, gp, "cuGraphInstantiateWithFlags", 11040, dflt);
    ok &= fetch(&d.graphExecDestroy, gp, "cuGraphExecDestroy", 10000, dflt);
    ok &= fetch(&d.graphDestroy, gp, "cuGraphDestroy", 10000, dflt);
    ok &= fetch_stream_fns(&d.legacy, gp, false);
    ok &= fetch_stream_fns(&d.per_thread, gp, true);
    if (!ok) return cudaErrorInsufficientDriver;

    if (CUresult rc = d.init(0)) return static_cast<cudaError_t>(rc);
    if (CUresult rc = d.deviceGetCount(&d.device_count)) return static_cast<cudaError_t>(rc);
    d.primary.assign(static_cast<size_t>(d.device_count), nullptr);
    return cudaSuccess;
}

// Loads and initialises the driver on first use; afterwards returns the
// outcome of that one attempt.
cudaError_t ensure_driver() {
    static std::once_flag once;
    std::call_once(once, [] { drv().init_error = load_driver(drv()); });
    return drv().init_error;
}

// The calling thread's device (cudaSetDevice) and whether its primary
// context has been made current on this thread.
thread_local int t_device = 0;
thread_local bool t_bound = false;

// Makes sure the driver is up and the current device's primary context is
// current on this thread (retaining it on first use in the process).
cudaError_t ensure_context() {
    if (cudaError_t e = ensure_driver()) return e;
    if (t_bound) return cudaSuccess;
    Driver& d = drv();
    CUcontext ctx = nullptr;
    {
        std::lock_guard<std::mutex> g(mu());
        CUcontext& slot = d.primary[static_cast<size_t>(t_device)];
        if (slot == nullptr) {
            if (CUresult rc = d.primaryCtxRetain(&slot, t_device)) return static_cast<cudaError_t>(rc);
        }
        ctx = slot;
    }
    if (CUresult rc = d.ctxSetCurrent(ctx)) return static_cast<cudaError_t>(rc);
    t_bound = true;
    return cudaSuccess;
}

const StreamFns& fns(bool per_thread) { return per_thread ? drv().per_thread : drv().legacy; }

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// ---------------------------------------------------------------------------
// API calls, as the tool sees them (see the header comment).
// ---------------------------------------------------------------------------
struct ToolFns {
    FakeCudaToolApiFn enter = nullptr;
    FakeCudaToolApiFn exit = nullptr;
};

// Found once, with a dlopen of its own: a call must be reportable before the
// runtime has loaded the driver (the first call is the one that loads it).
const ToolFns& tool_fns() {
    static const ToolFns fns = [] {
        ToolFns f;
        void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) return f;
        f.enter = reinterpret_cast<FakeCudaToolApiFn>(dlsym(handle, "fakeCudaToolApiEnter"));
        f.exit = reinterpret_cast<FakeCudaToolApiFn>(dlsym(handle, "fakeCudaToolApiExit"));
        if (f.enter == nullptr || f.exit == nullptr) f = ToolFns{};  // not the fake driver
        return f;
    }();
    return fns;
}

// The CUPTI id of an exported runtime function; aborts if the table in
// fake_cupti_ids.h lacks it, so that no export goes unreported.
const fake_cupti_ids::ApiId& api_id(const char* exported_name) {
    const fake_cupti_ids::ApiId* id = fake_cupti_ids::find_exported(CUPTI_CB_DOMAIN_RUNTIME_API, exported_name);
    if (id == nullptr) {
        std::fprintf(stderr, "fake_cudart: %s has no row in fake_cupti_ids.h\n", exported_name);
        std::abort();
    }
    return *id;
}

// One runtime call, entry to exit.
class ApiScope {
public:
    explicit ApiScope(const fake_cupti_ids::ApiId& id) : fns_(tool_fns()) {
        if (fns_.enter == nullptr) return;
        call_.domain = id.domain;
        call_.cbid = id.cbid;
        call_.name = id.cupti_name;
        fns_.enter(&call_);
    }
    ~ApiScope() {
        if (fns_.exit != nullptr) fns_.exit(&call_);
    }
    ApiScope(const ApiScope&) = delete;
    ApiScope& operator=(const ApiScope&) = delete;

private:
    const ToolFns& fns_;
    FakeCudaApiCall call_{};
};

// First statement of every exported runtime function (it declares variables).
// Exported functions never call each other, so each call is reported once.
#define FAKE_RT_ENTRY()                                                          \
    static const ::fake_cupti_ids::ApiId& fake_api_id_ = api_id(__func__);       \
    const ApiScope fake_api_scope_(fake_api_id_)

// ---------------------------------------------------------------------------
// Kernels registered with fakeRegisterKernel, by host stub.
// ---------------------------------------------------------------------------
std::unordered_map<const void*, CUkernel>& kernels() {
    static auto* k = new std::unordered_map<const void*, CUkernel>;
    return *k;
}

cudaError_t find_kernel(const void* stub, CUkernel* out) {
    std::lock_guard<std::mutex> g(mu());
    auto it = kernels().find(stub);
    if (it == kernels().end()) return cudaErrorInvalidDeviceFunction;
    *out = it->second;
    return cudaSuccess;
}

// ---------------------------------------------------------------------------
// Shared bodies of the legacy and _ptsz / _ptds entry points.
// ---------------------------------------------------------------------------

cudaError_t get_kernel(cudaKernel_t* kernel, const void* stub) {
    if (kernel == nullptr) return fail(cudaErrorInvalidValue);
    if (cudaError_t e = ensure_driver()) return fail(e);
    CUkernel k = nullptr;
    if (cudaError_t e = find_kernel(stub, &k)) return fail(e);
    *kernel = k;
    return cudaSuccess;
}

cudaError_t launch(CUfunction f, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t stream,
                   bool per_thread) {
    return result(fns(per_thread).launchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                               static_cast<unsigned>(shmem), stream, args, nullptr));
}

cudaError_t launch_stub(const void* func, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t stream,
                        bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    CUkernel k = nullptr;
    if (cudaError_t e = find_kernel(func, &k)) return fail(e);
    return launch(reinterpret_cast<CUfunction>(k), grid, block, args, shmem, stream, per_thread);
}

cudaError_t launch_ex(const cudaLaunchConfig_t* config, const void* func, void** args, bool per_thread) {
    if (config == nullptr) return fail(cudaErrorInvalidValue);
    if (cudaError_t e = ensure_context()) return fail(e);
    CUkernel k = nullptr;
    if (cudaError_t e = find_kernel(func, &k)) return fail(e);
    CUlaunchConfig c{};
    c.gridDimX = config->gridDim.x;
    c.gridDimY = config->gridDim.y;
    c.gridDimZ = config->gridDim.z;
    c.blockDimX = config->blockDim.x;
    c.blockDimY = config->blockDim.y;
    c.blockDimZ = config->blockDim.z;
    c.sharedMemBytes = static_cast<unsigned>(config->dynamicSmemBytes);
    c.hStream = config->stream;
    c.attrs = reinterpret_cast<CUlaunchAttribute*>(config->attrs);
    c.numAttrs = config->numAttrs;
    return result(fns(per_thread).launchKernelEx(&c, reinterpret_cast<CUfunction>(k), args, nullptr));
}

cudaError_t launch_cooperative(const void* func, dim3 grid, dim3 block, void** args, size_t shmem,
                               cudaStream_t stream, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    CUkernel k = nullptr;
    if (cudaError_t e = find_kernel(func, &k)) return fail(e);
    return result(fns(per_thread).launchCooperativeKernel(reinterpret_cast<CUfunction>(k), grid.x, grid.y, grid.z,
                                                          block.x, block.y, block.z, static_cast<unsigned>(shmem),
                                                          stream, args));
}

cudaError_t launch_handle(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shmem, cudaStream_t stream,
                          bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    return launch(reinterpret_cast<CUfunction>(kernel), grid, block, args, shmem, stream, per_thread);
}

cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(fns(per_thread).graphLaunch(exec, stream));
}

cudaError_t memcpy_any(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream,
                       bool async, bool per_thread) {
    if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return fail(cudaErrorInvalidMemcpyDirection);
    if (cudaError_t e = ensure_context()) return fail(e);
    // Unified addressing: the driver's cuMemcpy works out the direction itself.
    if (async) return result(fns(per_thread).memcpyAsync(dptr(dst), dptr(src), count, stream));
    return result(fns(per_thread).memcpy(dptr(dst), dptr(src), count));
}

cudaError_t memset_any(void* p, int value, size_t count, cudaStream_t stream, bool async, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    const auto byte = static_cast<unsigned char>(value);
    if (async) return result(fns(per_thread).memsetD8Async(dptr(p), byte, count, stream));
    return result(fns(per_thread).memsetD8(dptr(p), byte, count));
}

cudaError_t malloc_async(void** p, size_t size, cudaMemPool_t pool, bool from_pool, cudaStream_t stream,
                         bool per_thread) {
    if (p == nullptr) return fail(cudaErrorInvalidValue);
    *p = nullptr;
    if (cudaError_t e = ensure_context()) return fail(e);
    CUdeviceptr d = 0;
    const CUresult rc = from_pool ? fns(per_thread).memAllocFromPoolAsync(&d, size, pool, stream)
                                  : fns(per_thread).memAllocAsync(&d, size, stream);
    if (rc == CUDA_SUCCESS) *p = reinterpret_cast<void*>(d);
    return result(rc);
}

cudaError_t free_async(void* p, cudaStream_t stream, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(fns(per_thread).memFreeAsync(dptr(p), stream));
}

cudaError_t stream_sync(cudaStream_t stream, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(fns(per_thread).streamSynchronize(stream));
}

cudaError_t begin_capture(cudaStream_t stream, cudaStreamCaptureMode mode, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(fns(per_thread).streamBeginCapture(stream, static_cast<CUstreamCaptureMode>(mode)));
}

cudaError_t begin_capture_to_graph(cudaStream_t stream, cudaGraph_t graph, cudaStreamCaptureMode mode, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(fns(per_thread).streamBeginCaptureToGraph(stream, reinterpret_cast<CUgraph>(graph), nullptr, nullptr, 0,
                                                            static_cast<CUstreamCaptureMode>(mode)));
}

cudaError_t end_capture(cudaStream_t stream, cudaGraph_t* graph, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(fns(per_thread).streamEndCapture(stream, reinterpret_cast<CUgraph*>(graph)));
}

cudaError_t is_capturing(cudaStream_t stream, cudaStreamCaptureStatus* status, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(fns(per_thread).streamIsCapturing(stream, reinterpret_cast<CUstreamCaptureStatus*>(status)));
}

cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, bool per_thread) {
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(fns(per_thread).eventRecord(event, stream));
}

// cudaGetDriverEntryPoint[ByVersion]: the driver's own lookup. cudaEnableDefault
// means the stream semantics of the entry point that was called.
cudaError_t entry_point(const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
                        cudaDriverEntryPointQueryResult* driverStatus, bool per_thread) {
    if (symbol == nullptr || funcPtr == nullptr) return fail(cudaErrorInvalidValue);
    *funcPtr = nullptr;
    cuuint64_t cu_flags = 0;
    switch (flags) {
        case cudaEnableDefault:
            cu_flags = per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
            break;
        case cudaEnableLegacyStream: cu_flags = CU_GET_PROC_ADDRESS_LEGACY_STREAM; break;
        case cudaEnablePerThreadDefaultStream: cu_flags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM; break;
        default: return fail(cudaErrorInvalidValue);
    }
    if (cudaError_t e = ensure_driver()) return fail(e);
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult rc =
        drv().getProcAddress(symbol, funcPtr, static_cast<int>(cudaVersion), cu_flags, &status);
    if (driverStatus != nullptr) *driverStatus = static_cast<cudaDriverEntryPointQueryResult>(status);
    // As documented: a symbol that is missing (or too new) is not an error of
    // the call, only *funcPtr == NULL and the status say so.
    if (rc == CUDA_ERROR_NOT_FOUND) return cudaSuccess;
    return result(rc);
}

// ---------------------------------------------------------------------------
// Error strings
// ---------------------------------------------------------------------------
struct ErrorText {
    cudaError_t code;
    const char* name;
    const char* text;
};
#define FAKE_ERR(code, text) {code, #code, text}
const ErrorText kErrors[] = {
    FAKE_ERR(cudaSuccess, "no error"),
    FAKE_ERR(cudaErrorInvalidValue, "invalid argument"),
    FAKE_ERR(cudaErrorMemoryAllocation, "out of memory"),
    FAKE_ERR(cudaErrorInitializationError, "initialization error"),
    FAKE_ERR(cudaErrorCudartUnloading, "driver shutting down"),
    FAKE_ERR(cudaErrorInvalidConfiguration, "invalid configuration argument"),
    FAKE_ERR(cudaErrorInvalidPitchValue, "invalid pitch argument"),
    FAKE_ERR(cudaErrorInvalidSymbol, "invalid device symbol"),
    FAKE_ERR(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
    FAKE_ERR(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"),
    FAKE_ERR(cudaErrorNoDevice, "no CUDA-capable device is detected"),
    FAKE_ERR(cudaErrorInvalidDevice, "invalid device ordinal"),
    FAKE_ERR(cudaErrorInvalidKernelImage, "device kernel image is invalid"),
    FAKE_ERR(cudaErrorDeviceUninitialized, "invalid device context"),
    FAKE_ERR(cudaErrorInvalidDeviceFunction, "invalid device function"),
    FAKE_ERR(cudaErrorFileNotFound, "file not found"),
    FAKE_ERR(cudaErrorInvalidResourceHandle, "invalid resource handle"),
    FAKE_ERR(cudaErrorSymbolNotFound, "named symbol not found"),
    FAKE_ERR(cudaErrorNotReady, "device not ready"),
    FAKE_ERR(cudaErrorIllegalAddress, "an illegal memory access was encountered"),
    FAKE_ERR(cudaErrorLaunchOutOfResources, "too many resources requested for launch"),
    FAKE_ERR(cudaErrorLaunchFailure, "unspecified launch failure"),
    FAKE_ERR(cudaErrorNotPermitted, "operation not permitted"),
    FAKE_ERR(cudaErrorNotSupported, "operation not supported"),
    FAKE_ERR(cudaErrorUnknown, "unknown error"),
};
#undef FAKE_ERR

const ErrorText* find_error(cudaError_t code) {
    for (const ErrorText& e : kErrors)
        if (e.code == code) return &e;
    return nullptr;
}

}  // namespace

// ============================================================================
// Exported entry points. Each is declared extern "C" by cuda_runtime_api.h or
// fake_cuda.h; the definitions inherit that linkage (-Wmissing-declarations
// flags one that is not declared).
// ============================================================================

// --- Test hook and nvcc-internal entry points -----------------------------------

int fakeRegisterKernel(const void* hostStub, const char* deviceName) {
    if (hostStub == nullptr || deviceName == nullptr || std::strchr(deviceName, '\n') != nullptr)
        return fail(cudaErrorInvalidValue);
    if (cudaError_t e = ensure_driver()) return fail(e);
    const std::string image = std::string("fake-module\n") + deviceName + "\n";
    CUlibrary lib = nullptr;
    CUkernel k = nullptr;
    if (CUresult rc = drv().libraryLoadData(&lib, image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0))
        return result(rc);
    if (CUresult rc = drv().libraryGetKernel(&k, lib, deviceName)) return result(rc);
    std::lock_guard<std::mutex> g(mu());
    kernels()[hostStub] = k;
    return cudaSuccess;
}

cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* kernel, const void* hostStub) {
    FAKE_RT_ENTRY();
    return get_kernel(kernel, hostStub);
}

cudaError_t CUDARTAPI cudaGetKernel(cudaKernel_t* kernelPtr, const void* entryFuncAddr) {
    FAKE_RT_ENTRY();
    return get_kernel(kernelPtr, entryFuncAddr);
}

// --- Memory -----------------------------------------------------------------------

cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
    FAKE_RT_ENTRY();
    if (devPtr == nullptr) return fail(cudaErrorInvalidValue);
    *devPtr = nullptr;
    if (cudaError_t e = ensure_context()) return fail(e);
    if (size == 0) return cudaSuccess;  // like the real runtime: NULL, no driver call
    CUdeviceptr d = 0;
    const CUresult rc = drv().memAlloc(&d, size);
    if (rc == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(d);
    return result(rc);
}

cudaError_t CUDARTAPI cudaFree(void* devPtr) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    if (devPtr == nullptr) return cudaSuccess;  // the classic "initialise CUDA" idiom
    return result(drv().memFree(dptr(devPtr)));
}

cudaError_t CUDARTAPI cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
    FAKE_RT_ENTRY();
    if (devPtr == nullptr) return fail(cudaErrorInvalidValue);
    *devPtr = nullptr;
    if (cudaError_t e = ensure_context()) return fail(e);
    CUdeviceptr d = 0;
    const CUresult rc = drv().memAllocManaged(&d, size, flags);
    if (rc == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(d);
    return result(rc);
}

cudaError_t CUDARTAPI cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
    FAKE_RT_ENTRY();
    if (devPtr == nullptr || pitch == nullptr) return fail(cudaErrorInvalidValue);
    *devPtr = nullptr;
    if (cudaError_t e = ensure_context()) return fail(e);
    CUdeviceptr d = 0;
    const CUresult rc = drv().memAllocPitch(&d, pitch, width, height, 16);  // pitch suits any element size
    if (rc == CUDA_SUCCESS) *devPtr = reinterpret_cast<void*>(d);
    return result(rc);
}

cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) {
    FAKE_RT_ENTRY();
    if (ptr == nullptr) return fail(cudaErrorInvalidValue);
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().memAllocHost(ptr, size));
}

cudaError_t CUDARTAPI cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
    FAKE_RT_ENTRY();
    if (pHost == nullptr) return fail(cudaErrorInvalidValue);
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().memHostAlloc(pHost, size, flags));
}

cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().memFreeHost(ptr));
}

cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_driver()) return fail(e);
    return result(drv().deviceGetDefaultMemPool(memPool, device));
}

cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().memGetInfo(free, total));
}

// --- Synchronisation ----------------------------------------------------------------

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().ctxSynchronize());
}

cudaError_t CUDARTAPI cudaProfilerStart(void) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().profilerStart());
}

cudaError_t CUDARTAPI cudaProfilerStop(void) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().profilerStop());
}

cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().eventSynchronize(event));
}

// --- Devices, streams, events, graphs ----------------------------------------------

cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
    FAKE_RT_ENTRY();
    if (count == nullptr) return fail(cudaErrorInvalidValue);
    *count = 0;
    if (cudaError_t e = ensure_driver()) return fail(e);
    *count = drv().device_count;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaSetDevice(int device) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_driver()) return fail(e);
    if (device < 0 || device >= drv().device_count) return fail(cudaErrorInvalidDevice);
    if (device != t_device) {
        t_device = device;
        t_bound = false;
    }
    // CUDA 12+: cudaSetDevice initialises the device's primary context at once.
    return fail(ensure_context());
}

cudaError_t CUDARTAPI cudaGetDevice(int* device) {
    FAKE_RT_ENTRY();
    if (device == nullptr) return fail(cudaErrorInvalidValue);
    if (cudaError_t e = ensure_driver()) return fail(e);
    *device = t_device;
    return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* pStream) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().streamCreate(pStream, CU_STREAM_DEFAULT));
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().streamDestroy(stream));
}

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t* event) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().eventCreate(event, CU_EVENT_DEFAULT));
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().eventDestroy(event));
}

cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t* pGraph, unsigned int flags) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().graphCreate(pGraph, flags));
}

cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().graphInstantiate(pGraphExec, graph, flags));
}

cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().graphExecDestroy(graphExec));
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
    FAKE_RT_ENTRY();
    if (cudaError_t e = ensure_context()) return fail(e);
    return result(drv().graphDestroy(graph));
}

// --- Errors and versions ----------------------------------------------------------------

cudaError_t CUDARTAPI cudaGetLastError(void) {
    FAKE_RT_ENTRY();
    const cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) {
    FAKE_RT_ENTRY();
    return t_last_error;
}

const char* CUDARTAPI cudaGetErrorName(cudaError_t error) {
    FAKE_RT_ENTRY();
    const ErrorText* e = find_error(error);
    return e ? e->name : "unrecognized error code";
}

const char* CUDARTAPI cudaGetErrorString(cudaError_t error) {
    FAKE_RT_ENTRY();
    const ErrorText* e = find_error(error);
    return e ? e->text : "unrecognized error code";
}

cudaError_t CUDARTAPI cudaDriverGetVersion(int* driverVersion) {
    FAKE_RT_ENTRY();
    if (driverVersion == nullptr) return fail(cudaErrorInvalidValue);
    *driverVersion = 0;  // no driver: 0, and still success, as documented
    if (ensure_driver() != cudaSuccess && drv().driverGetVersion == nullptr) return cudaSuccess;
    return result(drv().driverGetVersion(driverVersion));
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* runtimeVersion) {
    FAKE_RT_ENTRY();
    if (runtimeVersion == nullptr) return fail(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}

// --- Legacy / per-thread pairs (fake_twins.h): launches, stream-ordered
// allocation, copies and sets, captures, synchronisation, event records, driver
// entry points ---------------------------------------------------------------------

FAKE_RUNTIME_TWINS(FAKE_DEFINE_RUNTIME_TWIN)
