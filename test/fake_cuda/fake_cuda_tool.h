// The tool interface of the fake driver: how the fake CUPTI (fake_cupti.cpp)
// learns about API calls and device work, in place of the real driver's
// private callback tables that real CUPTI hooks into.
//
//   libcupti.so.13 --fakeCudaToolRegister(&hooks)--> libcuda.so.1
//   libcuda.so.1   --hooks.api_enter / api_exit-->    libcupti.so.13  (every driver call)
//   libcudart.so.13 --fakeCudaToolApiEnter / Exit--> libcuda.so.1 --hooks--> libcupti  (every runtime call)
//   libcuda.so.1   --hooks.device_work-->             libcupti.so.13  (each kernel, copy, set)
//
// The fake CUPTI finds fakeCudaToolRegister with dlsym on libcuda.so.1 (it
// links neither fake). The driver reports facts in its own terms (which
// memory, which device, which stream); what a CUPTI record makes of them
// (copy kinds, context and stream ids, timestamps, correlation ids) is the
// fake CUPTI's business.
//
// Plain C structs, so that the three libraries agree on the layout whatever
// compiled them; FAKE_CUDA_TOOL_VERSION changes with any change here.
#pragma once

#include <cuda.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_CUDA_TOOL_VERSION 1

struct FakeCudaToolHooks;

// One API call from entry to exit. It lives on the stack of the entry point
// that reports it, so the tool may keep a pointer to it until api_exit.
typedef struct FakeCudaApiCall {
    // Filled by whoever reports the call (driver or runtime), before entry:
    uint32_t domain;   // CUPTI_CB_DOMAIN_DRIVER_API or CUPTI_CB_DOMAIN_RUNTIME_API
    uint32_t cbid;     // CUPTI_DRIVER_TRACE_CBID_* / CUPTI_RUNTIME_TRACE_CBID_*
    const char* name;  // CUPTI's name of the cbid: "cuLaunchKernel", "cudaLaunchKernel_v7000"

    // Filled by the driver at entry:
    CUcontext context;                      // the thread's current context, or NULL
    const struct FakeCudaApiCall* parent;   // the call on this thread this one was made from, or NULL
    const struct FakeCudaToolHooks* tool;   // the tool that saw the entry; NULL if none was registered

    // The tool's, from api_enter to api_exit:
    uint32_t correlation_id;  // 0 until the tool assigns one
    uint64_t start_ns;
    uint64_t user_data;       // what CUpti_CallbackData::correlationData points at
} FakeCudaApiCall;

// Memory as the driver knows it. Host memory is pinned when the fake driver
// allocated it (cuMemAllocHost, cuMemHostAlloc), pageable otherwise.
typedef enum FakeCudaMemory {
    FAKE_CUDA_MEMORY_PAGEABLE = 1,
    FAKE_CUDA_MEMORY_PINNED = 2,
    FAKE_CUDA_MEMORY_DEVICE = 3,
    FAKE_CUDA_MEMORY_MANAGED = 4,
} FakeCudaMemory;

typedef struct FakeCudaMemorySide {
    FakeCudaMemory memory;
    int device;         // owning device of device / managed memory; -1 for host memory
    CUcontext context;  // that device's (primary) context; NULL for host memory
} FakeCudaMemorySide;

typedef enum FakeCudaWorkKind {
    FAKE_CUDA_WORK_KERNEL = 1,
    FAKE_CUDA_WORK_MEMCPY = 2,
    FAKE_CUDA_WORK_MEMSET = 3,
} FakeCudaWorkKind;

// One piece of device work, reported during the API call that enqueued it.
// Pointers are valid for the duration of the device_work call only.
typedef struct FakeCudaWork {
    FakeCudaWorkKind kind;

    // Where it runs.
    int device;
    CUcontext context;
    unsigned long long stream_id;  // what cuStreamGetId answers for the stream
    int async;                     // enqueued by a stream-ordered (…Async) entry point

    // Kernels.
    const char* kernel_name;  // as the module names it (mangled)
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int dynamic_shared_bytes;
    int cooperative;
    uint32_t graph_id;        // nonzero for a kernel node of a graph launch
    uint64_t graph_node_id;   // nonzero for a kernel node of a graph launch

    // Copies (src, dst) and sets (dst, value).
    unsigned long long bytes;
    FakeCudaMemorySide src;
    FakeCudaMemorySide dst;
    uint32_t value;
} FakeCudaWork;

typedef struct FakeCudaToolHooks {
    uint32_t version;  // FAKE_CUDA_TOOL_VERSION
    void (*api_enter)(FakeCudaApiCall* call);
    void (*api_exit)(FakeCudaApiCall* call);
    // call: the innermost API call of the thread, a driver call.
    void (*device_work)(const FakeCudaApiCall* call, const FakeCudaWork* work);
} FakeCudaToolHooks;

// Exported by the fake libcuda.so.1.
//
// Installs the tool (NULL: removes it). Calls already in flight finish with
// the tool that saw their entry. Returns 0, or -1 for a version mismatch.
int fakeCudaToolRegister(const FakeCudaToolHooks* hooks);
// For the fake runtime: brackets one of its API calls. domain, cbid and name
// must be set; the driver fills the rest and passes the call to the tool.
// Every Enter needs its Exit, on the same thread, in LIFO order.
void fakeCudaToolApiEnter(FakeCudaApiCall* call);
void fakeCudaToolApiExit(FakeCudaApiCall* call);

typedef int (*FakeCudaToolRegisterFn)(const FakeCudaToolHooks* hooks);
typedef void (*FakeCudaToolApiFn)(FakeCudaApiCall* call);

#ifdef __cplusplus
}  // extern "C"
#endif
