// Helper API for test programs that run against the fake CUDA stack in this
// folder (libcuda.so.1 from fake_driver*.cpp, libcudart.so.13 from
// fake_runtime.cpp). Include it after, or instead of, <cuda.h> and
// <cuda_runtime_api.h>; it pulls both in.
//
// What it adds:
//  - declarations of the per-thread-default-stream entry points (_ptsz /
//    _ptds) that libcuda and libcudart export but that the toolkit headers
//    only declare when CUDA_API_PER_THREAD_DEFAULT_STREAM is defined, so a
//    test can call both flavours from one translation unit;
//  - the nvcc-internal runtime entry points __cudaGetKernel and
//    __cudaLaunchKernel(_ptsz), which CUDA 13 kernel stubs call and which the
//    toolkit declares only for nvcc (crt/device_functions.h, __CUDACC__);
//  - the fakes' own test hooks (fakeRegisterKernel, fakeCudaCallCount);
//  - small inline helpers to build fake module images.
//
// The declarations carry no default arguments on purpose: when a test defines
// CUDA_API_PER_THREAD_DEFAULT_STREAM the toolkit headers declare the same
// functions with defaults, and C++ forbids repeating a default argument.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <initializer_list>
#include <string>

extern "C" {

// ---------------------------------------------------------------------------
// Fake driver (libcuda.so.1): per-thread-default-stream exports.
// Parameter lists are identical to the legacy functions in cuda.h; the table
// in fake_driver_procaddr.cpp checks each against its PFN_*_ptsz/_ptds typedef
// in cudaTypedefs.h, and ptds_decl_check.cpp against cuda.h itself.
// ---------------------------------------------------------------------------
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                   CUcontext srcContext, size_t ByteCount);
CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                        CUcontext srcContext, size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                           CUstream hStream);
CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                           CUstream hStream);
CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy);
CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy);
CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream);
CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy);
CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream);
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N);
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult CUDAAPI cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                      size_t Height);
CUresult CUDAAPI cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                       size_t Height);
CUresult CUDAAPI cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                       size_t Height);
CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
CUresult CUDAAPI cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                        size_t Height, CUstream hStream);
CUresult CUDAAPI cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                         size_t Height, CUstream hStream);
CUresult CUDAAPI cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                         size_t Height, CUstream hStream);
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                                  const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                                  CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph);
CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus);
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId);
CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx);
CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                     unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                     void** kernelParams, void** extra);
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                       void** extra);
CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                unsigned int gridDimZ, unsigned int blockDimX,
                                                unsigned int blockDimY, unsigned int blockDimZ,
                                                unsigned int sharedMemBytes, CUstream hStream,
                                                void** kernelParams);
CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData);
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

// Test hook of the fake driver: how many times the exported function with this
// exact name (e.g. "cuMemAlloc_v2", "cuLaunchKernel_ptsz") has been entered in
// this process, whatever path reached it (symbol, dlsym, cuGetProcAddress).
// Lets a test check that one runtime call, or one call through an interposer,
// reached the driver exactly once.
unsigned long long fakeCudaCallCount(const char* exportedName);

// ---------------------------------------------------------------------------
// Fake runtime (libcudart.so.13): per-thread-default-stream exports.
// ---------------------------------------------------------------------------
cudaError_t CUDARTAPI cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind);
cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                           cudaStream_t stream);
cudaError_t CUDARTAPI cudaMemset_ptds(void* devPtr, int value, size_t count);
cudaError_t CUDARTAPI cudaMemsetAsync_ptsz(void* devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream);
cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream);
cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t CUDARTAPI cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t stream, cudaGraph_t graph,
                                                         const cudaGraphNode_t* dependencies,
                                                         const cudaGraphEdgeData* dependencyData,
                                                         size_t numDependencies, cudaStreamCaptureMode mode);
cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t* pGraph);
cudaError_t CUDARTAPI cudaStreamIsCapturing_ptsz(cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus);
cudaError_t CUDARTAPI cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t CUDARTAPI cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                            size_t sharedMem, cudaStream_t stream);
cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args);
cudaError_t CUDARTAPI cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                                       void** args, size_t sharedMem, cudaStream_t stream);
cudaError_t CUDARTAPI cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t CUDARTAPI cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                                                   enum cudaDriverEntryPointQueryResult* driverStatus);
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(const char* symbol, void** funcPtr,
                                                            unsigned int cudaVersion, unsigned long long flags,
                                                            enum cudaDriverEntryPointQueryResult* driverStatus);

// nvcc-internal entry points (crt/device_functions.h declares them for nvcc
// only). A CUDA 13 kernel stub does: __cudaGetKernel(&k, stub) once, then
// __cudaLaunchKernel(k, grid, block, args, shmem, stream) per launch.
cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* kernel, const void* hostStub);
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                         size_t sharedMem, cudaStream_t stream);
cudaError_t CUDARTAPI __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                              size_t sharedMem, cudaStream_t stream);

// Test hook of the fake runtime, standing in for the fatbinary registration
// that nvcc-generated code performs (__cudaRegisterFunction): loads a fake
// library holding one kernel named deviceName (any bytes but newline) and
// binds it to hostStub, the address a test passes to cudaLaunchKernel etc.
// Registering the same stub again rebinds it. Returns 0 (cudaSuccess) or a
// cudaError_t value.
int fakeRegisterKernel(const void* hostStub, const char* deviceName);

}  // extern "C"

namespace fake_cuda {

// A fake module image, the text that cuModuleLoadData / cuLibraryLoadData of
// the fake driver accept: an optional "fake-module" line, then one kernel name
// per line. Names must not contain '\n'; any other byte is kept as is.
inline std::string module_image(std::initializer_list<std::string> kernel_names) {
    std::string image = "fake-module\n";
    for (const std::string& name : kernel_names) {
        image += name;
        image += '\n';
    }
    return image;
}

// How every test program begins: cuInit, then device 0's primary context,
// current on the calling thread. The first failing call's result, or
// CUDA_SUCCESS.
inline CUresult use_primary_context() {
    CUdevice dev;
    CUcontext ctx;
    if (CUresult rc = cuInit(0)) return rc;
    if (CUresult rc = cuDeviceGet(&dev, 0)) return rc;
    if (CUresult rc = cuDevicePrimaryCtxRetain(&ctx, dev)) return rc;
    return cuCtxSetCurrent(ctx);
}

}  // namespace fake_cuda
