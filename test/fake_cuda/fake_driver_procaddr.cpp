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
#define PROC_PTSZ(base, ver, fn) {#base, ver, true, erase(static_cast<PFN_##base##_v##ver##_ptsz>(&fn))}
#define PROC_PTDS(base, ver, fn) {#base, ver, true, erase(static_cast<PFN_##base##_v##ver##_ptds>(&fn))}

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
    PROC(cuMemAllocAsync, 11020, cuMemAllocAsync),
    PROC_PTSZ(cuMemAllocAsync, 11020, cuMemAllocAsync_ptsz),
    PROC(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync),
    PROC_PTSZ(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync_ptsz),
    PROC(cuMemFreeAsync, 11020, cuMemFreeAsync),
    PROC_PTSZ(cuMemFreeAsync, 11020, cuMemFreeAsync_ptsz),
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

    // Copies
    PROC(cuMemcpy, 4000, cuMemcpy),
    PROC_PTDS(cuMemcpy, 7000, cuMemcpy_ptds),
    PROC(cuMemcpyAsync, 4000, cuMemcpyAsync),
    PROC_PTSZ(cuMemcpyAsync, 7000, cuMemcpyAsync_ptsz),
    PROC(cuMemcpyPeer, 4000, cuMemcpyPeer),
    PROC_PTDS(cuMemcpyPeer, 7000, cuMemcpyPeer_ptds),
    PROC(cuMemcpyPeerAsync, 4000, cuMemcpyPeerAsync),
    PROC_PTSZ(cuMemcpyPeerAsync, 7000, cuMemcpyPeerAsync_ptsz),
    PROC(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2),
    PROC_PTDS(cuMemcpyHtoD, 7000, cuMemcpyHtoD_v2_ptds),
    PROC(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2),
    PROC_PTDS(cuMemcpyDtoH, 7000, cuMemcpyDtoH_v2_ptds),
    PROC(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2),
    PROC_PTDS(cuMemcpyDtoD, 7000, cuMemcpyDtoD_v2_ptds),
    PROC(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2),
    PROC_PTSZ(cuMemcpyHtoDAsync, 7000, cuMemcpyHtoDAsync_v2_ptsz),
    PROC(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2),
    PROC_PTSZ(cuMemcpyDtoHAsync, 7000, cuMemcpyDtoHAsync_v2_ptsz),
    PROC(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2),
    PROC_PTSZ(cuMemcpyDtoDAsync, 7000, cuMemcpyDtoDAsync_v2_ptsz),
    PROC(cuMemcpy2D, 3020, cuMemcpy2D_v2),
    PROC_PTDS(cuMemcpy2D, 7000, cuMemcpy2D_v2_ptds),
    PROC(cuMemcpy2DUnaligned, 3020, cuMemcpy2DUnaligned_v2),
    PROC_PTDS(cuMemcpy2DUnaligned, 7000, cuMemcpy2DUnaligned_v2_ptds),
    PROC(cuMemcpy2DAsync, 3020, cuMemcpy2DAsync_v2),
    PROC_PTSZ(cuMemcpy2DAsync, 7000, cuMemcpy2DAsync_v2_ptsz),
    PROC(cuMemcpy3D, 3020, cuMemcpy3D_v2),
    PROC_PTDS(cuMemcpy3D, 7000, cuMemcpy3D_v2_ptds),
    PROC(cuMemcpy3DAsync, 3020, cuMemcpy3DAsync_v2),
    PROC_PTSZ(cuMemcpy3DAsync, 7000, cuMemcpy3DAsync_v2_ptsz),

    // Sets
    PROC(cuMemsetD8, 3020, cuMemsetD8_v2),
    PROC_PTDS(cuMemsetD8, 7000, cuMemsetD8_v2_ptds),
    PROC(cuMemsetD16, 3020, cuMemsetD16_v2),
    PROC_PTDS(cuMemsetD16, 7000, cuMemsetD16_v2_ptds),
    PROC(cuMemsetD32, 3020, cuMemsetD32_v2),
    PROC_PTDS(cuMemsetD32, 7000, cuMemsetD32_v2_ptds),
    PROC(cuMemsetD2D8, 3020, cuMemsetD2D8_v2),
    PROC_PTDS(cuMemsetD2D8, 7000, cuMemsetD2D8_v2_ptds),
    PROC(cuMemsetD2D16, 3020, cuMemsetD2D16_v2),
    PROC_PTDS(cuMemsetD2D16, 7000, cuMemsetD2D16_v2_ptds),
    PROC(cuMemsetD2D32, 3020, cuMemsetD2D32_v2),
    PROC_PTDS(cuMemsetD2D32, 7000, cuMemsetD2D32_v2_ptds),
    PROC(cuMemsetD8Async, 3020, cuMemsetD8Async),
    PROC_PTSZ(cuMemsetD8Async, 7000, cuMemsetD8Async_ptsz),
    PROC(cuMemsetD16Async, 3020, cuMemsetD16Async),
    PROC_PTSZ(cuMemsetD16Async, 7000, cuMemsetD16Async_ptsz),
    PROC(cuMemsetD32Async, 3020, cuMemsetD32Async),
    PROC_PTSZ(cuMemsetD32Async, 7000, cuMemsetD32Async_ptsz),
    PROC(cuMemsetD2D8Async, 3020, cuMemsetD2D8Async),
    PROC_PTSZ(cuMemsetD2D8Async, 7000, cuMemsetD2D8Async_ptsz),
    PROC(cuMemsetD2D16Async, 3020, cuMemsetD2D16Async),
    PROC_PTSZ(cuMemsetD2D16Async, 7000, cuMemsetD2D16Async_ptsz),
    PROC(cuMemsetD2D32Async, 3020, cuMemsetD2D32Async),
    PROC_PTSZ(cuMemsetD2D32Async, 7000, cuMemsetD2D32Async_ptsz),

    // Streams and events
    PROC(cuStreamCreate, 2000, cuStreamCreate),
    PROC(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority),
    PROC(cuStreamDestroy, 4000, cuStreamDestroy_v2),
    PROC(cuStreamSynchronize, 2000, cuStreamSynchronize),
    PROC_PTSZ(cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz),
    PROC(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2),
    PROC_PTSZ(cuStreamBeginCapture, 10010, cuStreamBeginCapture_v2_ptsz),
    PROC(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph),
    PROC_PTSZ(cuStreamBeginCaptureToGraph, 12030, cuStreamBeginCaptureToGraph_ptsz),
    PROC(cuStreamEndCapture, 10000, cuStreamEndCapture),
    PROC_PTSZ(cuStreamEndCapture, 10000, cuStreamEndCapture_ptsz),
    PROC(cuStreamIsCapturing, 10000, cuStreamIsCapturing),
    PROC_PTSZ(cuStreamIsCapturing, 10000, cuStreamIsCapturing_ptsz),
    PROC(cuStreamQuery, 2000, cuStreamQuery),
    PROC_PTSZ(cuStreamQuery, 7000, cuStreamQuery_ptsz),
    PROC(cuStreamGetId, 12000, cuStreamGetId),
    PROC_PTSZ(cuStreamGetId, 12000, cuStreamGetId_ptsz),
    PROC(cuStreamGetCtx, 9020, cuStreamGetCtx),
    PROC_PTSZ(cuStreamGetCtx, 9020, cuStreamGetCtx_ptsz),
    PROC(cuStreamWaitEvent, 3020, cuStreamWaitEvent),
    PROC_PTSZ(cuStreamWaitEvent, 7000, cuStreamWaitEvent_ptsz),
    PROC(cuEventCreate, 2000, cuEventCreate),
    PROC(cuEventRecord, 2000, cuEventRecord),
    PROC_PTSZ(cuEventRecord, 7000, cuEventRecord_ptsz),
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
    PROC(cuLaunchKernel, 4000, cuLaunchKernel),
    PROC_PTSZ(cuLaunchKernel, 7000, cuLaunchKernel_ptsz),
    PROC(cuLaunchKernelEx, 11060, cuLaunchKernelEx),
    PROC_PTSZ(cuLaunchKernelEx, 11060, cuLaunchKernelEx_ptsz),
    PROC(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel),
    PROC_PTSZ(cuLaunchCooperativeKernel, 9000, cuLaunchCooperativeKernel_ptsz),
    PROC(cuLaunchHostFunc, 10000, cuLaunchHostFunc),
    PROC_PTSZ(cuLaunchHostFunc, 10000, cuLaunchHostFunc_ptsz),
    PROC(cuGraphCreate, 10000, cuGraphCreate),
    PROC(cuGraphAddKernelNode, 10000, cuGraphAddKernelNode),
    PROC(cuGraphAddKernelNode, 12000, cuGraphAddKernelNode_v2),
    PROC(cuGraphInstantiateWithFlags, 11040, cuGraphInstantiateWithFlags),
    PROC(cuGraphLaunch, 10000, cuGraphLaunch),
    PROC_PTSZ(cuGraphLaunch, 10000, cuGraphLaunch_ptsz),
    PROC(cuGraphExecDestroy, 10000, cuGraphExecDestroy),
    PROC(cuGraphDestroy, 10000, cuGraphDestroy),
};

#undef PROC
#undef PROC_PTSZ
#undef PROC_PTDS

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
