// The CUPTI callback id of every API function the fakes export, from the
// real cupti_driver_cbid.h / cupti_runtime_cbid.h: the fake driver and
// runtime report calls by these ids, and the fake CUPTI names them
// (cuptiGetCallbackName) from the same table.
//
// CUPTI names a driver function exactly as exported ("cuMemcpyHtoD_v2",
// "cuLaunchKernel_ptsz") and a runtime function with the version of its ABI
// appended ("cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000",
// "__cudaLaunchKernel_v13000"); where CUPTI has several versions of a runtime
// function, the row uses the one whose ABI the fake exports
// (cudaGraphInstantiate with flags: _v12000).
//
// A row whose name has no CUPTI enumerator does not compile. An exported
// function without a row aborts at its first call (see driver_api_id and the
// runtime's api_id), so the table cannot silently fall behind the exports.
#pragma once

#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include <cstdint>
#include <cstring>

namespace fake_cupti_ids {

struct ApiId {
    const char* exported;  // the function's exported name
    CUpti_CallbackDomain domain;
    uint32_t cbid;
    const char* cupti_name;  // what cuptiGetCallbackName answers for cbid
};

#define FAKE_DRIVER_API(name) {#name, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##name, #name}
#define FAKE_RUNTIME_API(name, version) \
    {#name, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##name##_##version, #name "_" #version}

inline constexpr ApiId kApiIds[] = {
    // --- libcuda.so.1 ---
    FAKE_DRIVER_API(cuCtxGetCurrent),
    FAKE_DRIVER_API(cuCtxGetDevice),
    FAKE_DRIVER_API(cuCtxGetDevice_v2),
    FAKE_DRIVER_API(cuCtxPopCurrent_v2),
    FAKE_DRIVER_API(cuCtxPushCurrent_v2),
    FAKE_DRIVER_API(cuCtxSetCurrent),
    FAKE_DRIVER_API(cuCtxSynchronize),
    FAKE_DRIVER_API(cuProfilerStart),
    FAKE_DRIVER_API(cuProfilerStop),
    FAKE_DRIVER_API(cuCtxSynchronize_v2),
    FAKE_DRIVER_API(cuDeviceGet),
    FAKE_DRIVER_API(cuDeviceGetAttribute),
    FAKE_DRIVER_API(cuDeviceGetCount),
    FAKE_DRIVER_API(cuDeviceGetDefaultMemPool),
    FAKE_DRIVER_API(cuDeviceGetMemPool),
    FAKE_DRIVER_API(cuDeviceGetName),
    FAKE_DRIVER_API(cuDeviceGetUuid),
    FAKE_DRIVER_API(cuDeviceGetUuid_v2),
    FAKE_DRIVER_API(cuDevicePrimaryCtxGetState),
    FAKE_DRIVER_API(cuDevicePrimaryCtxRelease),
    FAKE_DRIVER_API(cuDevicePrimaryCtxRelease_v2),
    FAKE_DRIVER_API(cuDevicePrimaryCtxRetain),
    FAKE_DRIVER_API(cuDeviceTotalMem),
    FAKE_DRIVER_API(cuDeviceTotalMem_v2),
    FAKE_DRIVER_API(cuDriverGetVersion),
    FAKE_DRIVER_API(cuEventCreate),
    FAKE_DRIVER_API(cuEventDestroy_v2),
    FAKE_DRIVER_API(cuEventElapsedTime),
    FAKE_DRIVER_API(cuEventElapsedTime_v2),
    FAKE_DRIVER_API(cuEventQuery),
    FAKE_DRIVER_API(cuEventRecord),
    FAKE_DRIVER_API(cuEventRecord_ptsz),
    FAKE_DRIVER_API(cuEventSynchronize),
    FAKE_DRIVER_API(cuFuncGetModule),
    FAKE_DRIVER_API(cuFuncGetName),
    FAKE_DRIVER_API(cuGetErrorName),
    FAKE_DRIVER_API(cuGetErrorString),
    FAKE_DRIVER_API(cuGetProcAddress),
    FAKE_DRIVER_API(cuGetProcAddress_v2),
    FAKE_DRIVER_API(cuGraphAddKernelNode),
    FAKE_DRIVER_API(cuGraphAddKernelNode_v2),
    FAKE_DRIVER_API(cuGraphCreate),
    FAKE_DRIVER_API(cuGraphDestroy),
    FAKE_DRIVER_API(cuGraphExecDestroy),
    FAKE_DRIVER_API(cuGraphInstantiateWithFlags),
    FAKE_DRIVER_API(cuGraphLaunch),
    FAKE_DRIVER_API(cuGraphLaunch_ptsz),
    FAKE_DRIVER_API(cuInit),
    FAKE_DRIVER_API(cuKernelGetFunction),
    FAKE_DRIVER_API(cuKernelGetLibrary),
    FAKE_DRIVER_API(cuKernelGetName),
    FAKE_DRIVER_API(cuLaunchCooperativeKernel),
    FAKE_DRIVER_API(cuLaunchCooperativeKernel_ptsz),
    FAKE_DRIVER_API(cuLaunchHostFunc),
    FAKE_DRIVER_API(cuLaunchHostFunc_ptsz),
    FAKE_DRIVER_API(cuLaunchKernel),
    FAKE_DRIVER_API(cuLaunchKernelEx),
    FAKE_DRIVER_API(cuLaunchKernelEx_ptsz),
    FAKE_DRIVER_API(cuLaunchKernel_ptsz),
    FAKE_DRIVER_API(cuLibraryGetKernel),
    FAKE_DRIVER_API(cuLibraryGetModule),
    FAKE_DRIVER_API(cuLibraryLoadData),
    FAKE_DRIVER_API(cuLibraryLoadFromFile),
    FAKE_DRIVER_API(cuLibraryUnload),
    FAKE_DRIVER_API(cuMemAddressFree),
    FAKE_DRIVER_API(cuMemAddressReserve),
    FAKE_DRIVER_API(cuMemAlloc),
    FAKE_DRIVER_API(cuMemAllocAsync),
    FAKE_DRIVER_API(cuMemAllocAsync_ptsz),
    FAKE_DRIVER_API(cuMemAllocFromPoolAsync),
    FAKE_DRIVER_API(cuMemAllocFromPoolAsync_ptsz),
    FAKE_DRIVER_API(cuMemAllocHost_v2),
    FAKE_DRIVER_API(cuMemAllocManaged),
    FAKE_DRIVER_API(cuMemAllocPitch_v2),
    FAKE_DRIVER_API(cuMemAlloc_v2),
    FAKE_DRIVER_API(cuMemCreate),
    FAKE_DRIVER_API(cuMemFree),
    FAKE_DRIVER_API(cuMemFreeAsync),
    FAKE_DRIVER_API(cuMemFreeAsync_ptsz),
    FAKE_DRIVER_API(cuMemFreeHost),
    FAKE_DRIVER_API(cuMemFree_v2),
    FAKE_DRIVER_API(cuMemGetAddressRange_v2),
    FAKE_DRIVER_API(cuMemGetAllocationGranularity),
    FAKE_DRIVER_API(cuMemGetInfo),
    FAKE_DRIVER_API(cuMemGetInfo_v2),
    FAKE_DRIVER_API(cuMemHostAlloc),
    FAKE_DRIVER_API(cuMemMap),
    FAKE_DRIVER_API(cuMemPoolCreate),
    FAKE_DRIVER_API(cuMemPoolDestroy),
    FAKE_DRIVER_API(cuMemPoolGetAttribute),
    FAKE_DRIVER_API(cuMemPoolSetAttribute),
    FAKE_DRIVER_API(cuMemPoolTrimTo),
    FAKE_DRIVER_API(cuMemRelease),
    FAKE_DRIVER_API(cuMemSetAccess),
    FAKE_DRIVER_API(cuMemUnmap),
    FAKE_DRIVER_API(cuMemcpy),
    FAKE_DRIVER_API(cuMemcpy2DAsync_v2),
    FAKE_DRIVER_API(cuMemcpy2DAsync_v2_ptsz),
    FAKE_DRIVER_API(cuMemcpy2DUnaligned_v2),
    FAKE_DRIVER_API(cuMemcpy2DUnaligned_v2_ptds),
    FAKE_DRIVER_API(cuMemcpy2D_v2),
    FAKE_DRIVER_API(cuMemcpy2D_v2_ptds),
    FAKE_DRIVER_API(cuMemcpy3DAsync_v2),
    FAKE_DRIVER_API(cuMemcpy3DAsync_v2_ptsz),
    FAKE_DRIVER_API(cuMemcpy3D_v2),
    FAKE_DRIVER_API(cuMemcpy3D_v2_ptds),
    FAKE_DRIVER_API(cuMemcpyAsync),
    FAKE_DRIVER_API(cuMemcpyAsync_ptsz),
    FAKE_DRIVER_API(cuMemcpyDtoDAsync_v2),
    FAKE_DRIVER_API(cuMemcpyDtoDAsync_v2_ptsz),
    FAKE_DRIVER_API(cuMemcpyDtoD_v2),
    FAKE_DRIVER_API(cuMemcpyDtoD_v2_ptds),
    FAKE_DRIVER_API(cuMemcpyDtoHAsync_v2),
    FAKE_DRIVER_API(cuMemcpyDtoHAsync_v2_ptsz),
    FAKE_DRIVER_API(cuMemcpyDtoH_v2),
    FAKE_DRIVER_API(cuMemcpyDtoH_v2_ptds),
    FAKE_DRIVER_API(cuMemcpyHtoDAsync_v2),
    FAKE_DRIVER_API(cuMemcpyHtoDAsync_v2_ptsz),
    FAKE_DRIVER_API(cuMemcpyHtoD_v2),
    FAKE_DRIVER_API(cuMemcpyHtoD_v2_ptds),
    FAKE_DRIVER_API(cuMemcpyPeer),
    FAKE_DRIVER_API(cuMemcpyPeerAsync),
    FAKE_DRIVER_API(cuMemcpyPeerAsync_ptsz),
    FAKE_DRIVER_API(cuMemcpyPeer_ptds),
    FAKE_DRIVER_API(cuMemcpy_ptds),
    FAKE_DRIVER_API(cuMemsetD16Async),
    FAKE_DRIVER_API(cuMemsetD16Async_ptsz),
    FAKE_DRIVER_API(cuMemsetD16_v2),
    FAKE_DRIVER_API(cuMemsetD16_v2_ptds),
    FAKE_DRIVER_API(cuMemsetD2D16Async),
    FAKE_DRIVER_API(cuMemsetD2D16Async_ptsz),
    FAKE_DRIVER_API(cuMemsetD2D16_v2),
    FAKE_DRIVER_API(cuMemsetD2D16_v2_ptds),
    FAKE_DRIVER_API(cuMemsetD2D32Async),
    FAKE_DRIVER_API(cuMemsetD2D32Async_ptsz),
    FAKE_DRIVER_API(cuMemsetD2D32_v2),
    FAKE_DRIVER_API(cuMemsetD2D32_v2_ptds),
    FAKE_DRIVER_API(cuMemsetD2D8Async),
    FAKE_DRIVER_API(cuMemsetD2D8Async_ptsz),
    FAKE_DRIVER_API(cuMemsetD2D8_v2),
    FAKE_DRIVER_API(cuMemsetD2D8_v2_ptds),
    FAKE_DRIVER_API(cuMemsetD32Async),
    FAKE_DRIVER_API(cuMemsetD32Async_ptsz),
    FAKE_DRIVER_API(cuMemsetD32_v2),
    FAKE_DRIVER_API(cuMemsetD32_v2_ptds),
    FAKE_DRIVER_API(cuMemsetD8Async),
    FAKE_DRIVER_API(cuMemsetD8Async_ptsz),
    FAKE_DRIVER_API(cuMemsetD8_v2),
    FAKE_DRIVER_API(cuMemsetD8_v2_ptds),
    FAKE_DRIVER_API(cuModuleGetFunction),
    FAKE_DRIVER_API(cuModuleLoad),
    FAKE_DRIVER_API(cuModuleLoadData),
    FAKE_DRIVER_API(cuModuleUnload),
    FAKE_DRIVER_API(cuPointerGetAttribute),
    FAKE_DRIVER_API(cuPointerGetAttributes),
    FAKE_DRIVER_API(cuStreamCreate),
    FAKE_DRIVER_API(cuStreamCreateWithPriority),
    FAKE_DRIVER_API(cuStreamDestroy_v2),
    FAKE_DRIVER_API(cuStreamGetCtx),
    FAKE_DRIVER_API(cuStreamGetCtx_ptsz),
    FAKE_DRIVER_API(cuStreamGetId),
    FAKE_DRIVER_API(cuStreamGetId_ptsz),
    FAKE_DRIVER_API(cuStreamQuery),
    FAKE_DRIVER_API(cuStreamQuery_ptsz),
    FAKE_DRIVER_API(cuStreamSynchronize),
    FAKE_DRIVER_API(cuStreamSynchronize_ptsz),
    FAKE_DRIVER_API(cuStreamWaitEvent),
    FAKE_DRIVER_API(cuStreamWaitEvent_ptsz),

    // --- libcudart.so.13 ---
    FAKE_RUNTIME_API(__cudaGetKernel, v13000),
    FAKE_RUNTIME_API(__cudaLaunchKernel, v13000),
    FAKE_RUNTIME_API(__cudaLaunchKernel_ptsz, v13000),
    FAKE_RUNTIME_API(cudaDeviceGetDefaultMemPool, v11020),
    FAKE_RUNTIME_API(cudaDeviceSynchronize, v3020),
    FAKE_RUNTIME_API(cudaProfilerStart, v4000),
    FAKE_RUNTIME_API(cudaProfilerStop, v4000),
    FAKE_RUNTIME_API(cudaDriverGetVersion, v3020),
    FAKE_RUNTIME_API(cudaEventCreate, v3020),
    FAKE_RUNTIME_API(cudaEventDestroy, v3020),
    FAKE_RUNTIME_API(cudaEventRecord, v3020),
    FAKE_RUNTIME_API(cudaEventRecord_ptsz, v7000),
    FAKE_RUNTIME_API(cudaEventSynchronize, v3020),
    FAKE_RUNTIME_API(cudaFree, v3020),
    FAKE_RUNTIME_API(cudaFreeAsync, v11020),
    FAKE_RUNTIME_API(cudaFreeAsync_ptsz, v11020),
    FAKE_RUNTIME_API(cudaFreeHost, v3020),
    FAKE_RUNTIME_API(cudaGetDevice, v3020),
    FAKE_RUNTIME_API(cudaGetDeviceCount, v3020),
    FAKE_RUNTIME_API(cudaGetDriverEntryPoint, v11030),
    FAKE_RUNTIME_API(cudaGetDriverEntryPointByVersion, v12050),
    FAKE_RUNTIME_API(cudaGetDriverEntryPointByVersion_ptsz, v12050),
    FAKE_RUNTIME_API(cudaGetDriverEntryPoint_ptsz, v11030),
    FAKE_RUNTIME_API(cudaGetErrorName, v6050),
    FAKE_RUNTIME_API(cudaGetErrorString, v3020),
    FAKE_RUNTIME_API(cudaGetKernel, v12000),
    FAKE_RUNTIME_API(cudaGetLastError, v3020),
    FAKE_RUNTIME_API(cudaGraphCreate, v10000),
    FAKE_RUNTIME_API(cudaGraphDestroy, v10000),
    FAKE_RUNTIME_API(cudaGraphExecDestroy, v10000),
    FAKE_RUNTIME_API(cudaGraphInstantiate, v12000),
    FAKE_RUNTIME_API(cudaGraphLaunch, v10000),
    FAKE_RUNTIME_API(cudaGraphLaunch_ptsz, v10000),
    FAKE_RUNTIME_API(cudaHostAlloc, v3020),
    FAKE_RUNTIME_API(cudaLaunchCooperativeKernel, v9000),
    FAKE_RUNTIME_API(cudaLaunchCooperativeKernel_ptsz, v9000),
    FAKE_RUNTIME_API(cudaLaunchKernel, v7000),
    FAKE_RUNTIME_API(cudaLaunchKernelExC, v11060),
    FAKE_RUNTIME_API(cudaLaunchKernelExC_ptsz, v11060),
    FAKE_RUNTIME_API(cudaLaunchKernel_ptsz, v7000),
    FAKE_RUNTIME_API(cudaMalloc, v3020),
    FAKE_RUNTIME_API(cudaMallocAsync, v11020),
    FAKE_RUNTIME_API(cudaMallocAsync_ptsz, v11020),
    FAKE_RUNTIME_API(cudaMallocFromPoolAsync, v11020),
    FAKE_RUNTIME_API(cudaMallocFromPoolAsync_ptsz, v11020),
    FAKE_RUNTIME_API(cudaMallocHost, v3020),
    FAKE_RUNTIME_API(cudaMallocManaged, v6000),
    FAKE_RUNTIME_API(cudaMallocPitch, v3020),
    FAKE_RUNTIME_API(cudaMemGetInfo, v3020),
    FAKE_RUNTIME_API(cudaMemcpy, v3020),
    FAKE_RUNTIME_API(cudaMemcpyAsync, v3020),
    FAKE_RUNTIME_API(cudaMemcpyAsync_ptsz, v7000),
    FAKE_RUNTIME_API(cudaMemcpy_ptds, v7000),
    FAKE_RUNTIME_API(cudaMemset, v3020),
    FAKE_RUNTIME_API(cudaMemsetAsync, v3020),
    FAKE_RUNTIME_API(cudaMemsetAsync_ptsz, v7000),
    FAKE_RUNTIME_API(cudaMemset_ptds, v7000),
    FAKE_RUNTIME_API(cudaPeekAtLastError, v3020),
    FAKE_RUNTIME_API(cudaRuntimeGetVersion, v3020),
    FAKE_RUNTIME_API(cudaSetDevice, v3020),
    FAKE_RUNTIME_API(cudaStreamCreate, v3020),
    FAKE_RUNTIME_API(cudaStreamDestroy, v5050),
    FAKE_RUNTIME_API(cudaStreamSynchronize, v3020),
    FAKE_RUNTIME_API(cudaStreamSynchronize_ptsz, v7000),
};

#undef FAKE_DRIVER_API
#undef FAKE_RUNTIME_API

// The row of an exported function of the given domain, or nullptr.
inline const ApiId* find_exported(CUpti_CallbackDomain domain, const char* exported) {
    for (const ApiId& id : kApiIds)
        if (id.domain == domain && std::strcmp(id.exported, exported) == 0) return &id;
    return nullptr;
}

// The row of a callback id, or nullptr.
inline const ApiId* find_cbid(CUpti_CallbackDomain domain, uint32_t cbid) {
    for (const ApiId& id : kApiIds)
        if (id.domain == domain && id.cbid == cbid) return &id;
    return nullptr;
}

}  // namespace fake_cupti_ids
