// THE table of the fakes' per-thread-default-stream twins (_ptsz / _ptds).
// A driver or runtime function that takes a stream, or works on the default
// stream, exists twice: the legacy entry point and its twin, whose NULL
// stream is the calling thread's own. Both bodies are the same call with
// `per_thread` false or true, so each pair is one row here, and everything
// else is generated from it:
//   - the definitions of both functions (FAKE_DEFINE_DRIVER_TWIN in
//     fake_driver*.cpp, FAKE_DEFINE_RUNTIME_TWIN in fake_runtime.cpp);
//   - the declarations of the twins (fake_cuda.h; the toolkit declares them
//     only under CUDA_API_PER_THREAD_DEFAULT_STREAM);
//   - both cuGetProcAddress rows of each driver pair
//     (fake_driver_procaddr.cpp).
// Add a pair here and nowhere else (but fake_cupti_ids.h, which names every
// exported function).
//
// FAKE_DRIVER_*_TWINS(X): X(sym, ptsym, base, since, ptsince, pt, params, call)
//   sym      the legacy exported symbol
//   ptsym    its twin
//   base     the name cuGetProcAddress is asked for; an identifier, used
//            only with # and ## so that cuda.h's #defines of base names
//            (cuMemcpyHtoD -> cuMemcpyHtoD_v2) do not apply
//   since    CUDA version of the legacy ABI, ptsince of the twin's
//            (cudaTypedefs.h: PFN_<base>_v<since>, PFN_<base>_v<ptsince>_<pt>)
//   pt       ptsz (takes a stream) or ptds (works on the default stream)
//   params   parenthesised parameter list
//   call     the body's one expression; `per_thread` is in scope
// The groups follow the source file that defines them, whose helpers the
// calls use.
//
// FAKE_RUNTIME_TWINS(X): X(sym, ptsym, params, call), as above.
// clang-format off
#pragma once

#define FAKE_DRIVER_MEMORY_TWINS(X)                                                                         \
  X(cuMemAllocAsync, cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, 11020, ptsz,                              \
    (CUdeviceptr* dptr, size_t bytesize, CUstream hStream),                                                  \
    alloc_async(dptr, bytesize, nullptr, hStream, per_thread))                                              \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, 11020, ptsz,      \
    (CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                               \
    pool == nullptr ? CUDA_ERROR_INVALID_VALUE : alloc_async(dptr, bytesize, pool, hStream, per_thread))     \
  X(cuMemFreeAsync, cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, 11020, ptsz,                                 \
    (CUdeviceptr dptr, CUstream hStream), free_async(dptr, hStream, per_thread))

// Synchronous copies and sets pass a NULL stream: the default stream of
// their flavour.
#define FAKE_DRIVER_COPY_TWINS(X)                                                                           \
  X(cuMemcpy, cuMemcpy_ptds, cuMemcpy, 4000, 7000, ptds,                                                     \
    (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),                                                    \
    memcpy_unified(dst, src, ByteCount, nullptr, per_thread))                                               \
  X(cuMemcpyAsync, cuMemcpyAsync_ptsz, cuMemcpyAsync, 4000, 7000, ptsz,                                      \
    (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),                                  \
    memcpy_unified(dst, src, ByteCount, hStream, per_thread))                                               \
  X(cuMemcpyPeer, cuMemcpyPeer_ptds, cuMemcpyPeer, 4000, 7000, ptds,                                         \
    (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,               \
     size_t ByteCount),                                                                                      \
    peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr, per_thread))                     \
  X(cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync, 4000, 7000, ptsz,                          \
    (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,               \
     size_t ByteCount, CUstream hStream),                                                                    \
    peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, per_thread))                     \
  X(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, 3020, 7000, ptds,                                   \
    (CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount),                                          \
    htod(dstDevice, srcHost, ByteCount, nullptr, per_thread))                                               \
  X(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, 3020, 7000, ptds,                                   \
    (void* dstHost, CUdeviceptr srcDevice, size_t ByteCount),                                                \
    dtoh(dstHost, srcDevice, ByteCount, nullptr, per_thread))                                               \
  X(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, 3020, 7000, ptds,                                   \
    (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),                                        \
    dtod(dstDevice, srcDevice, ByteCount, nullptr, per_thread))                                             \
  X(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, 3020, 7000, ptsz,                    \
    (CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream),                        \
    htod(dstDevice, srcHost, ByteCount, hStream, per_thread))                                               \
  X(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, 3020, 7000, ptsz,                    \
    (void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),                              \
    dtoh(dstHost, srcDevice, ByteCount, hStream, per_thread))                                               \
  X(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, 3020, 7000, ptsz,                    \
    (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),                      \
    dtod(dstDevice, srcDevice, ByteCount, hStream, per_thread))                                             \
  X(cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, cuMemcpy2D, 3020, 7000, ptds,                                         \
    (const CUDA_MEMCPY2D* pCopy), copy_2d(pCopy, nullptr, per_thread))                                       \
  X(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned, 3020, 7000, ptds,              \
    (const CUDA_MEMCPY2D* pCopy), copy_2d(pCopy, nullptr, per_thread))                                       \
  X(cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync, 3020, 7000, ptsz,                          \
    (const CUDA_MEMCPY2D* pCopy, CUstream hStream), copy_2d(pCopy, hStream, per_thread))                     \
  X(cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, cuMemcpy3D, 3020, 7000, ptds,                                         \
    (const CUDA_MEMCPY3D* pCopy), copy_3d(pCopy, nullptr, per_thread))                                       \
  X(cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync, 3020, 7000, ptsz,                          \
    (const CUDA_MEMCPY3D* pCopy, CUstream hStream), copy_3d(pCopy, hStream, per_thread))                     \
  X(cuMemsetD8_v2, cuMemsetD8_v2_ptds, cuMemsetD8, 3020, 7000, ptds,                                         \
    (CUdeviceptr dstDevice, unsigned char uc, size_t N), set_1d(dstDevice, uc, N, nullptr, per_thread))      \
  X(cuMemsetD16_v2, cuMemsetD16_v2_ptds, cuMemsetD16, 3020, 7000, ptds,                                      \
    (CUdeviceptr dstDevice, unsigned short us, size_t N), set_1d(dstDevice, us, N, nullptr, per_thread))     \
  X(cuMemsetD32_v2, cuMemsetD32_v2_ptds, cuMemsetD32, 3020, 7000, ptds,                                      \
    (CUdeviceptr dstDevice, unsigned int ui, size_t N), set_1d(dstDevice, ui, N, nullptr, per_thread))       \
  X(cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds, cuMemsetD2D8, 3020, 7000, ptds,                                   \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height),                 \
    set_2d(dstDevice, dstPitch, uc, Width, Height, nullptr, per_thread))                                    \
  X(cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds, cuMemsetD2D16, 3020, 7000, ptds,                                \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height),                \
    set_2d(dstDevice, dstPitch, us, Width, Height, nullptr, per_thread))                                    \
  X(cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds, cuMemsetD2D32, 3020, 7000, ptds,                                \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height),                  \
    set_2d(dstDevice, dstPitch, ui, Width, Height, nullptr, per_thread))                                    \
  X(cuMemsetD8Async, cuMemsetD8Async_ptsz, cuMemsetD8Async, 3020, 7000, ptsz,                                \
    (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream),                                   \
    set_1d(dstDevice, uc, N, hStream, per_thread))                                                          \
  X(cuMemsetD16Async, cuMemsetD16Async_ptsz, cuMemsetD16Async, 3020, 7000, ptsz,                             \
    (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream),                                  \
    set_1d(dstDevice, us, N, hStream, per_thread))                                                          \
  X(cuMemsetD32Async, cuMemsetD32Async_ptsz, cuMemsetD32Async, 3020, 7000, ptsz,                             \
    (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream),                                    \
    set_1d(dstDevice, ui, N, hStream, per_thread))                                                          \
  X(cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async, 3020, 7000, ptsz,                          \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, CUstream hStream), \
    set_2d(dstDevice, dstPitch, uc, Width, Height, hStream, per_thread))                                    \
  X(cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async, 3020, 7000, ptsz,                       \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, CUstream hStream), \
    set_2d(dstDevice, dstPitch, us, Width, Height, hStream, per_thread))                                    \
  X(cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async, 3020, 7000, ptsz,                       \
    (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height, CUstream hStream), \
    set_2d(dstDevice, dstPitch, ui, Width, Height, hStream, per_thread))

#define FAKE_DRIVER_EXEC_TWINS(X)                                                                           \
  X(cuStreamSynchronize, cuStreamSynchronize_ptsz, cuStreamSynchronize, 2000, 7000, ptsz,                    \
    (CUstream hStream), stream_sync(hStream, per_thread))                                                    \
  X(cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010, 10010, ptsz,         \
    (CUstream hStream, CUstreamCaptureMode mode), begin_capture(hStream, mode, per_thread))                  \
  X(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 12030, 12030, \
    ptsz, (CUstream hStream, CUgraph hGraph, const CUgraphNode*, const CUgraphEdgeData*, size_t,             \
           CUstreamCaptureMode mode),                                                                        \
    begin_capture(hStream, mode, per_thread, hGraph))                                                       \
  X(cuStreamEndCapture, cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000, 10000, ptsz,                     \
    (CUstream hStream, CUgraph* phGraph), end_capture(hStream, phGraph, per_thread))                         \
  X(cuStreamIsCapturing, cuStreamIsCapturing_ptsz, cuStreamIsCapturing, 10000, 10000, ptsz,                  \
    (CUstream hStream, CUstreamCaptureStatus* captureStatus), is_capturing(hStream, captureStatus, per_thread)) \
  X(cuStreamQuery, cuStreamQuery_ptsz, cuStreamQuery, 2000, 7000, ptsz,                                      \
    (CUstream hStream), check_stream(hStream, per_thread)) /* always idle */                                 \
  X(cuStreamGetId, cuStreamGetId_ptsz, cuStreamGetId, 12000, 12000, ptsz,                                    \
    (CUstream hStream, unsigned long long* streamId), stream_get_id(hStream, streamId, per_thread))          \
  X(cuStreamGetCtx, cuStreamGetCtx_ptsz, cuStreamGetCtx, 9020, 9020, ptsz,                                   \
    (CUstream hStream, CUcontext* pctx), stream_get_ctx(hStream, pctx, per_thread))                          \
  X(cuStreamWaitEvent, cuStreamWaitEvent_ptsz, cuStreamWaitEvent, 3020, 7000, ptsz,                          \
    (CUstream hStream, CUevent hEvent, unsigned int Flags), stream_wait_event(hStream, hEvent, Flags, per_thread)) \
  X(cuEventRecord, cuEventRecord_ptsz, cuEventRecord, 2000, 7000, ptsz,                                      \
    (CUevent hEvent, CUstream hStream), event_record(hEvent, hStream, per_thread))                           \
  X(cuLaunchKernel, cuLaunchKernel_ptsz, cuLaunchKernel, 4000, 7000, ptsz,                                   \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, \
     unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,          \
     void** kernelParams, void** extra),                                                                     \
    launch_kernel(f, make_launch(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes), \
                  hStream, kernelParams, extra, per_thread))                                                 \
  X(cuLaunchKernelEx, cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, 11060, ptsz,                           \
    (const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra),                         \
    launch_kernel_ex(config, f, kernelParams, extra, per_thread))                                           \
  X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000, 9000, ptsz,  \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, \
     unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void**),  \
    enqueue_kernel(f, make_launch(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,             \
                                  sharedMemBytes, true), hStream, per_thread))                               \
  X(cuLaunchHostFunc, cuLaunchHostFunc_ptsz, cuLaunchHostFunc, 10000, 10000, ptsz,                           \
    (CUstream hStream, CUhostFn fn, void* userData), launch_host_func(hStream, fn, userData, per_thread))     \
  X(cuGraphLaunch, cuGraphLaunch_ptsz, cuGraphLaunch, 10000, 10000, ptsz,                                    \
    (CUgraphExec hGraphExec, CUstream hStream), graph_launch(hGraphExec, hStream, per_thread))

#define FAKE_DRIVER_TWINS(X) FAKE_DRIVER_MEMORY_TWINS(X) FAKE_DRIVER_COPY_TWINS(X) FAKE_DRIVER_EXEC_TWINS(X)

#define FAKE_RUNTIME_TWINS(X)                                                                               \
  X(__cudaLaunchKernel, __cudaLaunchKernel_ptsz,                                                             \
    (cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem, cudaStream_t stream),  \
    launch_handle(kernel, gridDim, blockDim, args, sharedMem, stream, per_thread))                          \
  X(cudaLaunchKernel, cudaLaunchKernel_ptsz,                                                                 \
    (const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem, cudaStream_t stream),     \
    launch_stub(func, gridDim, blockDim, args, sharedMem, stream, per_thread))                              \
  X(cudaLaunchKernelExC, cudaLaunchKernelExC_ptsz, (const cudaLaunchConfig_t* config, const void* func, void** args), \
    launch_ex(config, func, args, per_thread))                                                              \
  X(cudaLaunchCooperativeKernel, cudaLaunchCooperativeKernel_ptsz,                                           \
    (const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem, cudaStream_t stream),     \
    launch_cooperative(func, gridDim, blockDim, args, sharedMem, stream, per_thread))                       \
  X(cudaGraphLaunch, cudaGraphLaunch_ptsz, (cudaGraphExec_t graphExec, cudaStream_t stream),                 \
    graph_launch(graphExec, stream, per_thread))                                                            \
  X(cudaMallocAsync, cudaMallocAsync_ptsz, (void** devPtr, size_t size, cudaStream_t hStream),              \
    malloc_async(devPtr, size, nullptr, false, hStream, per_thread))                                        \
  X(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync_ptsz,                                                   \
    (void** ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream),                                   \
    malloc_async(ptr, size, memPool, true, stream, per_thread))                                             \
  X(cudaFreeAsync, cudaFreeAsync_ptsz, (void* devPtr, cudaStream_t hStream),                                 \
    free_async(devPtr, hStream, per_thread))                                                                \
  X(cudaMemcpy, cudaMemcpy_ptds, (void* dst, const void* src, size_t count, cudaMemcpyKind kind),       \
    memcpy_any(dst, src, count, kind, nullptr, false, per_thread))                                          \
  X(cudaMemcpyAsync, cudaMemcpyAsync_ptsz,                                                                   \
    (void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream),               \
    memcpy_any(dst, src, count, kind, stream, true, per_thread))                                            \
  X(cudaMemset, cudaMemset_ptds, (void* devPtr, int value, size_t count),                                    \
    memset_any(devPtr, value, count, nullptr, false, per_thread))                                           \
  X(cudaMemsetAsync, cudaMemsetAsync_ptsz, (void* devPtr, int value, size_t count, cudaStream_t stream),     \
    memset_any(devPtr, value, count, stream, true, per_thread))                                             \
  X(cudaStreamBeginCapture, cudaStreamBeginCapture_ptsz, (cudaStream_t stream, cudaStreamCaptureMode mode), \
    begin_capture(stream, mode, per_thread))                                                                \
  X(cudaStreamBeginCaptureToGraph, cudaStreamBeginCaptureToGraph_ptsz,                                       \
    (cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t*, const cudaGraphEdgeData*, size_t, \
     cudaStreamCaptureMode mode),                                                                       \
    begin_capture_to_graph(stream, graph, mode, per_thread))                                                \
  X(cudaStreamEndCapture, cudaStreamEndCapture_ptsz, (cudaStream_t stream, cudaGraph_t* pGraph),             \
    end_capture(stream, pGraph, per_thread))                                                                \
  X(cudaStreamIsCapturing, cudaStreamIsCapturing_ptsz,                                                       \
    (cudaStream_t stream, cudaStreamCaptureStatus* pCaptureStatus),                                     \
    is_capturing(stream, pCaptureStatus, per_thread))                                                       \
  X(cudaStreamSynchronize, cudaStreamSynchronize_ptsz, (cudaStream_t stream), stream_sync(stream, per_thread)) \
  X(cudaEventRecord, cudaEventRecord_ptsz, (cudaEvent_t event, cudaStream_t stream),                         \
    event_record(event, stream, per_thread))                                                                \
  X(cudaGetDriverEntryPoint, cudaGetDriverEntryPoint_ptsz,                                                   \
    (const char* symbol, void** funcPtr, unsigned long long flags,                                           \
     cudaDriverEntryPointQueryResult* driverStatus),                                                    \
    entry_point(symbol, funcPtr, CUDART_VERSION, flags, driverStatus, per_thread))                          \
  X(cudaGetDriverEntryPointByVersion, cudaGetDriverEntryPointByVersion_ptsz,                                 \
    (const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,                 \
     cudaDriverEntryPointQueryResult* driverStatus),                                                    \
    entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus, per_thread))

// Both functions of a pair, defined in the file whose helpers `call` uses.
#define FAKE_DEFINE_DRIVER_TWIN(sym, ptsym, base, since, ptsince, pt, params, call) \
  CUresult CUDAAPI sym params {                                                     \
    FAKE_ENTRY();                                                                   \
    const bool per_thread = false;                                                  \
    return call;                                                                    \
  }                                                                                 \
  CUresult CUDAAPI ptsym params {                                                   \
    FAKE_ENTRY();                                                                   \
    const bool per_thread = true;                                                   \
    return call;                                                                    \
  }
#define FAKE_DEFINE_RUNTIME_TWIN(sym, ptsym, params, call) \
  cudaError_t CUDARTAPI sym params {                       \
    FAKE_RT_ENTRY();                                       \
    const bool per_thread = false;                         \
    return call;                                           \
  }                                                        \
  cudaError_t CUDARTAPI ptsym params {                     \
    FAKE_RT_ENTRY();                                       \
    const bool per_thread = true;                          \
    return call;                                           \
  }
// clang-format on
