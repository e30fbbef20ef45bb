// Shared by the fake driver's translation units (fake_driver*.cpp) only.
//
// The fake driver is split by topic:
//   fake_driver.cpp          state, devices, contexts, errors, memory, VMM
//   fake_driver_copy.cpp     memcpy / memset families
//   fake_driver_exec.cpp     streams, events, modules, libraries, launches, graphs
//   fake_driver_procaddr.cpp the cuGetProcAddress table
//   fake_driver_tool.cpp     the tool interface (what the fake CUPTI sees)
#pragma once

#include "fake_cuda.h"       // _ptsz / _ptds declarations
#include "fake_cuda_tool.h"  // the tool interface
#include "fake_cupti_ids.h"  // CUPTI callback ids of the exports

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

// ---------------------------------------------------------------------------
// Old ABIs that libcuda still exports under the plain name. cuda.h maps the
// plain name to the newest ABI (#define cuMemAlloc cuMemAlloc_v2) and declares
// the old one only for NVIDIA's own build (__CUDA_API_VERSION_INTERNAL), so we
// drop the macro and declare the old ABI ourselves. cudaTypedefs.h hides their
// PFN typedefs the same way; ours below have the same names and types so the
// cuGetProcAddress table can check them like the public ones.
// From here on, in the driver's sources, cuMemAlloc means the v1 ABI; the
// current ABIs are always spelled with their suffix (cuMemAlloc_v2).
// ---------------------------------------------------------------------------
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemGetInfo
#undef cuDeviceTotalMem
#undef cuDevicePrimaryCtxRelease
#undef cuDeviceGetUuid
#undef cuEventElapsedTime
#undef cuGraphAddKernelNode
#undef cuGetProcAddress

extern "C" {
typedef unsigned int FakeCUdeviceptr_v1;  // CUdeviceptr_v1: 32-bit device pointers of CUDA 2.x/3.0

CUresult CUDAAPI cuMemAlloc(FakeCUdeviceptr_v1* dptr, unsigned int bytesize);
CUresult CUDAAPI cuMemFree(FakeCUdeviceptr_v1 dptr);
CUresult CUDAAPI cuMemGetInfo(unsigned int* free, unsigned int* total);
CUresult CUDAAPI cuDeviceTotalMem(unsigned int* bytes, CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult CUDAAPI cuDeviceGetUuid(CUuuid* uuid, CUdevice dev);
CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                      size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
// cuGetProcAddress v1 (CUDA 11.3): no status argument.
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);

typedef CUresult(CUDAAPI* PFN_cuMemAlloc_v2000)(FakeCUdeviceptr_v1* dptr, unsigned int bytesize);
typedef CUresult(CUDAAPI* PFN_cuMemFree_v2000)(FakeCUdeviceptr_v1 dptr);
typedef CUresult(CUDAAPI* PFN_cuMemGetInfo_v2000)(unsigned int* free, unsigned int* total);
typedef CUresult(CUDAAPI* PFN_cuDeviceTotalMem_v2000)(unsigned int* bytes, CUdevice dev);
typedef CUresult(CUDAAPI* PFN_cuDevicePrimaryCtxRelease_v7000)(CUdevice dev);
}  // extern "C"

// ---------------------------------------------------------------------------
// Internal state shared between the driver's translation units.
// One process-wide mutex guards all of it: the fake does no real work, so
// contention does not matter and one lock keeps the invariants obvious.
// ---------------------------------------------------------------------------
namespace fake {

std::mutex& lock();

// Call counting, tracing and tool reporting. Every exported entry point
// starts with FAKE_ENTRY(): it bumps a per-name counter (fakeCudaCallCount),
// with FAKE_CUDA_TRACE=1 prints the name to stderr, and brackets the rest of
// the function as one API call for the tool (fake_driver_tool.cpp), under the
// function's CUPTI callback id. It declares variables, so it must be the
// first statement of the function body.
std::atomic<unsigned long long>& call_counter(const char* exported_name);
void trace_call(const char* exported_name);
#define FAKE_ENTRY()                                                                                \
    static std::atomic<unsigned long long>& fake_counter_ = ::fake::call_counter(__func__);        \
    static const ::fake_cupti_ids::ApiId& fake_api_id_ = ::fake::driver_api_id(__func__);         \
    fake_counter_.fetch_add(1, std::memory_order_relaxed);                                         \
    ::fake::trace_call(__func__);                                                                  \
    const ::fake::ApiScope fake_api_scope_(fake_api_id_)

// --- Tool reporting (fake_driver_tool.cpp, fake_cuda_tool.h) ---------------------

// The CUPTI id of an exported driver function; aborts if the table in
// fake_cupti_ids.h lacks it.
const fake_cupti_ids::ApiId& driver_api_id(const char* exported_name);

// One driver call, entry to exit, as the tool sees it.
class ApiScope {
public:
    explicit ApiScope(const fake_cupti_ids::ApiId& id);
    ~ApiScope();
    ApiScope(const ApiScope&) = delete;
    ApiScope& operator=(const ApiScope&) = delete;

private:
    FakeCudaApiCall call_{};
};

// Whether a tool saw the entry of the thread's innermost call, i.e. whether
// device work is worth describing.
bool tool_watching();
// Hands device work to the tool that saw the innermost call, if any. Fills
// work.async from the call's name. Caller must not hold lock().
void report_work(FakeCudaWork& work);
// What the driver knows of the memory at p. Caller must not hold lock().
FakeCudaMemorySide describe_memory(CUdeviceptr p);
// Where a stream's work runs. Caller must not hold lock().
CUresult stream_info(CUstream stream, bool per_thread, unsigned long long* id, int* device);

// Devices and contexts (fake_driver.cpp). Each device has one (primary)
// context; there is no cuCtxCreate.
struct Context;
int device_count();
CUresult check_init();                 // CUDA_ERROR_NOT_INITIALIZED before cuInit
CUresult check_device(CUdevice dev);   // + CUDA_ERROR_INVALID_DEVICE
Context* find_context(CUcontext ctx);  // nullptr if not a context of ours
CUcontext primary_context(int device);
int context_device(const Context* ctx);
// The calling thread's current context: CUDA_ERROR_INVALID_CONTEXT if none.
CUresult current_context(Context** out);
// The same as a handle, NULL if none; no initialisation check.
CUcontext current_context_handle();

// Memory (fake_driver.cpp). Checks that [ptr, ptr + bytes) lies inside one
// live allocation the fake handed out (device, managed, pinned host or a
// mapped virtual range). Copies and sets use it to refuse wild pointers.
bool range_is_allocated(CUdeviceptr ptr, size_t bytes);
CUresult alloc_device(CUdeviceptr* dptr, size_t bytes, int device, CUmemoryPool pool, bool managed);
CUresult free_device(CUdeviceptr dptr);
CUresult default_pool(int device, CUmemoryPool* out);
CUresult check_pool(CUmemoryPool pool, int* device);

// Streams (fake_driver_exec.cpp). per_thread says whether the entry point is
// a _ptsz/_ptds one, which decides what the NULL stream means.
CUresult check_stream(CUstream stream, bool per_thread);
// Whether the stream is being captured into a graph (its work does not run).
bool stream_capturing(CUstream stream, bool per_thread);
CUresult stream_device(CUstream stream, bool per_thread, int* device);

}  // namespace fake
