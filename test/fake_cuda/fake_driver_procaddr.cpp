// Fake CUDA driver, part 4: cuGetProcAddress (v1 and _v2), answered from one
// table.
//
// Each row is (base name as the API names it, the CUDA version in which that
// ABI appeared, whether it is the per-thread-default-stream variant, the
// function). The version is the one in the name of the function's PFN typedef
// in cudaTypedefs.h (PFN_cuMemAlloc_v3020 -> cuMemAlloc_v2 appeared in 3020),
// and the PROC* macros cast through that very typedef, so a row whose
// function does not have exactly that signature does not compile.
//
// Lookup, as the real driver documents it:
//  - rows with the requested name; none -> CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
//  - with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, the per-thread rows
//    if the name has one with version <= cudaVersion, else the legacy rows;
//    with DEFAULT or LEGACY_STREAM, the legacy rows only
//  - of those, the highest version <= cudaVersion; none ->
//    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
// On failure *pfn is NULL and the result is CUDA_ERROR_NOT_FOUND, which is
// what real drivers return (the header's prose says CUDA_SUCCESS). A
// cudaVersion above the driver's own (13000) is CUDA_ERROR_INVALID_VALUE, as
// documented.
#include "fake_driver_internal.h"

#include <cudaProfiler.h>
#include <cudaProfilerTypedefs.h>
#include <cudaTypedefs.h>

#include <cstring>

namespace fake {
namespace {

struct ProcEntry {
    const char* name;
    int version;
    bool per_thread;
    void* fn;
};

template <typename Pfn>
void* erase(Pfn fn) {
    return reinterpret_cast<void*>(fn);
}

// static_cast to the PFN type is the signature check.
#define PROC(base, ver, fn) {#base, ver, false, erase(static_cast<PFN_##base##_v##ver>(&fn))}
// A legacy / per-thread pair of fake_twins.h: both rows. base is used with #
// and ## only, so cuda.h's #define of a base name does not apply.
#define PROC_TWIN(sym, ptsym, base, since, ptsince, pt, params, call)              \
    {#base, since, false, erase(static_cast<PFN_##base##_v##since>(&sym))},         \
        {#base, ptsince, true, erase(static_cast<PFN_##base##_v##ptsince##_##pt>(&ptsym))},

const ProcEntry kProcTable[] = {
    // Errors, initialisation, devices
    PROC(cuGetErrorString, 6000, cuGetErrorString),
    PROC(cuGetErrorName, 6000, cuGetErrorName),
    PROC(cuInit, 2000, cuInit),
    PROC(cuDriverGetVersion, 2020, cuDriverGetVersion),
    PROC(cuDeviceGet, 2000, cuDeviceGet),
    PROC(cuDeviceGetCount, 2000, cuDeviceGetCount),
    PROC(cuDeviceGetName, 2000, cuDeviceGetName),
    PROC(cuDeviceGetUuid, 9020, cuDeviceGetUuid),
    PROC(cuDeviceGetUuid, 11040, cuDeviceGetUuid_v2),
    PROC(cuDeviceTotalMem, 2000, cuDeviceTotalMem),
    PROC(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2),
    PROC(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute),
    PROC(cuDeviceGetDefaultMemPool, 11020, cuDeviceGetDefaultMemPool),
    PROC(cuDeviceGetMemPool, 11020, cuDeviceGetMemPool),
    PROC(cuGetProcAddress, 11030, cuGetProcAddress),
    PROC(cuGetProcAddress, 12000, cuGetProcAddress_v2),

    // Contexts
    PROC(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
    PROC(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease),
    PROC(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
    PROC(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState),
    PROC(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
    PROC(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
    PROC(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2),
    PROC(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2),
    PROC(cuCtxGetDevice, 2000, cuCtxGetDevice),
    PROC(cuCtxGetDevice, 13000, cuCtxGetDevice_v2),
    PROC(cuProfilerStart, 4000, cuProfilerStart),
    PROC(cuProfilerStop, 4000, cuProfilerStop),
    PROC(cuCtxSynchronize, 2000, cuCtxSynchronize),
    PROC(cuCtxSynchronize, 13000, cuCtxSynchronize_v2),

    // Memory
    PROC(cuMemGetInfo, 2000, cuMemGetInfo),
    PROC(cuMemGetInfo, 3020, cuMemGetInfo_v2),
    PROC(cuMemAlloc, 2000, cuMemAlloc),
    PROC(cuMemAlloc, 3020, cuMemAlloc_v2),
    PROC(cuMemAllocPitch, 3020, cuMemAllocPitch_v2),
    PROC(cuMemAllocManaged, 6000, cuMemAllocManaged),
    PROC(cuMemFree, 2000, cuMemFree),
    PROC(cuMemFree, 3020, cuMemFree_v2),
    PROC(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2),
    PROC(cuMemAllocHost, 3020, cuMemAllocHost_v2),
    PROC(cuMemHostAlloc, 2020, cuMemHostAlloc),
    PROC(cuMemFreeHost, 2000, cuMemFreeHost),
    PROC(cuMemPoolCreate, 11020, cuMemPoolCreate),
    PROC(cuMemPoolDestroy, 11020, cuMemPoolDestroy),
    PROC(cuMemPoolGetAttribute, 11020, cuMemPoolGetAttribute),
    PROC(cuMemPoolSetAttribute, 11020, cuMemPoolSetAttribute),
    PROC(cuMemPoolTrimTo, 11020, cuMemPoolTrimTo),
    PROC(cuPointerGetAttribute, 4000, cuPointerGetAttribute),
    PROC(cuPointerGetAttributes, 7000, cuPointerGetAttributes),
    PROC(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity),
    PROC(cuMemAddressReserve, 10020, cuMemAddressReserve),
    PROC(cuMemAddressFree, 10020, cuMemAddressFree),
    PROC(cuMemCreate, 10020, cuMemCreate),
    PROC(cuMemRelease, 10020, cuMemRelease),
    PROC(cuMemMap, 10020, cuMemMap),
    PROC(cuMemUnmap, 10020, cuMemUnmap),
    PROC(cuMemSetAccess, 10020, cuMemSetAccess),

    // Streams and events
    PROC(cuStreamCreate, 2000, cuStreamCreate),
    PROC(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority),
    PROC(cuStreamDestroy, 4000, cuStreamDestroy_v2),
    PROC(cuEventCreate, 2000, cuEventCreate),
    PROC(cuEventQuery, 2000, cuEventQuery),
    PROC(cuEventSynchronize, 2000, cuEventSynchronize),
    PROC(cuEventDestroy, 4000, cuEventDestroy_v2),
    PROC(cuEventElapsedTime, 2000, cuEventElapsedTime),
    PROC(cuEventElapsedTime, 12080, cuEventElapsedTime_v2),

    // Modules, libraries, names
    PROC(cuModuleLoad, 2000, cuModuleLoad),
    PROC(cuModuleLoadData, 2000, cuModuleLoadData),
    PROC(cuModuleUnload, 2000, cuModuleUnload),
    PROC(cuModuleGetFunction, 2000, cuModuleGetFunction),
    PROC(cuFuncGetModule, 11000, cuFuncGetModule),
    PROC(cuFuncGetName, 12030, cuFuncGetName),
    PROC(cuLibraryLoadData, 12000, cuLibraryLoadData),
    PROC(cuLibraryLoadFromFile, 12000, cuLibraryLoadFromFile),
    PROC(cuLibraryUnload, 12000, cuLibraryUnload),
    PROC(cuLibraryGetKernel, 12000, cuLibraryGetKernel),
    PROC(cuLibraryGetModule, 12000, cuLibraryGetModule),
    PROC(cuKernelGetFunction, 12000, cuKernelGetFunction),
    PROC(cuKernelGetLibrary, 12050, cuKernelGetLibrary),
    PROC(cuKernelGetName, 12030, cuKernelGetName),

    // Launches and graphs
    PROC(cuGraphCreate, 10000, cuGraphCreate),
    PROC(cuGraphAddKernelNode, 10000, cuGraphAddKernelNode),
    PROC(cuGraphAddKernelNode, 12000, cuGraphAddKernelNode_v2),
    PROC(cuGraphInstantiateWithFlags, 11040, cuGraphInstantiateWithFlags),
    PROC(cuGraphExecDestroy, 10000, cuGraphExecDestroy),
    PROC(cuGraphDestroy, 10000, cuGraphDestroy),

    // Legacy / per-thread pairs: stream-ordered allocation, copies, sets,
    // streams and events, launches, graph launches
    FAKE_DRIVER_TWINS(PROC_TWIN)
};

#undef PROC
#undef PROC_TWIN

constexpr int kDriverVersion = CUDA_VERSION;

CUresult lookup(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
    if (pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pfn = nullptr;
    const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if (symbol == nullptr || (flags & ~known) != 0 || cuda_version > kDriverVersion) return CUDA_ERROR_INVALID_VALUE;
    const bool want_per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;

    const ProcEntry* best_legacy = nullptr;
    const ProcEntry* best_per_thread = nullptr;
    bool name_known = false;
    for (const ProcEntry& e : kProcTable) {
        if (std::strcmp(e.name, symbol) != 0) continue;
        name_known = true;
        if (e.version > cuda_version) continue;
        const ProcEntry*& best = e.per_thread ? best_per_thread : best_legacy;
        if (best == nullptr || e.version > best->version) best = &e;
    }
    const ProcEntry* chosen = (want_per_thread && best_per_thread) ? best_per_thread : best_legacy;
    if (chosen == nullptr) {
        if (status) *status = name_known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = chosen->fn;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fake

// ----------------------------------------------------------------------------
// Exported entry points (see the note in fake_driver.cpp about linkage).
// ----------------------------------------------------------------------------

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult* symbolStatus) {
    FAKE_ENTRY();
    return fake::lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
    FAKE_ENTRY();
    return fake::lookup(symbol, pfn, cudaVersion, flags, nullptr);
}
