// THE table of intercepted entry points. Everything else is generated from it:
// the exported wrappers (hooks.cpp), the answers to dlsym and cuGetProcAddress
// (lookup.cpp), the API names and levels the collector prints (api.h), and the
// export list the hygiene test checks. Add a function here and nowhere else.
//
// NB_DRIVER(sym, base, since, variant, kind, params, args, fill)
//   sym      exported symbol of libcuda.so.1, also the name shown in outputs
//   base     the name cuGetProcAddress is asked for ("cuMemAlloc" for
//            cuMemAlloc_v2); a string, since cuda.h #defines many base names
//   since    CUDA version in which this ABI appeared (cudaTypedefs.h:
//            PFN_<base>_v<since>[_ptsz|_ptds]); older requests get the real,
//            unwrapped answer because its ABI is not this one
//   variant  ANY     no per-thread-default-stream twin exists
//            LEGACY  legacy-default-stream twin of a PTDS entry
//            PTDS    the _ptsz/_ptds twin, answered for flag
//                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
//   kind     Record kind (core/record.h)
//   params   parenthesised parameter list; args the same names
//   fill     statements run after the real call with `r` (Record&) and `rc`;
//            they run whether the call succeeded or not, so a pointer
//            argument is checked before it is read
//
// NB_TWIN(X, sym, ptsym, base, since, ptsince, kind, params, args, fill)
//   a LEGACY entry and its PTDS twin (_ptsz/_ptds), which share everything
//   but the symbol and the version their ABI appeared in
//
// NB_RUNTIME(sym, display, kind, params, args, fill)
//   sym      exported symbol of libcudart; display = name shown in outputs
//
// NB_RT_TWIN(X, sym, ptsym, kind, params, args, fill)
//   a runtime function and its per-thread twin, each shown by its symbol
//
// Helpers used in fill blocks are in shim/fill_helpers.h.
// clang-format off
#define NB_TWIN(X, sym, ptsym, base, since, ptsince, kind, params, args, fill) \
  X(sym, base, since, LEGACY, kind, params, args, fill)                       \
  X(ptsym, base, ptsince, PTDS, kind, params, args, fill)

#define NB_LAUNCH_FILL_DRV(f, gx, gy, gz, bx, by, bz, smem, st) \
  { r.ptr = reinterpret_cast<uint64_t>(f); r.name = rc == 0 ? kernel_name(f) : 0;      \
    r.grid[0] = gx; r.grid[1] = gy; r.grid[2] = gz;                                    \
    r.block[0] = bx; r.block[1] = by; r.block[2] = bz;                                 \
    r.shared_mem = smem; r.stream = reinterpret_cast<uint64_t>(st); }

#define NB_DRIVER_HOOKS(X)                                                                    \
  /* ---- device memory ---- */                                                                \
  X(cuMemAlloc_v2, "cuMemAlloc", 3020, ANY, Alloc,                                             \
    (CUdeviceptr* dptr, size_t bytesize), (dptr, bytesize),                                    \
    { r.bytes = bytesize; r.ptr = rc == 0 ? *dptr : 0; r.device = current_device(); })        \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, ANY, Alloc,                                   \
    (CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes), \
    (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes),                                    \
    { r.bytes = rc == 0 ? *pPitch * Height : WidthInBytes * Height;                            \
      r.ptr = rc == 0 ? *dptr : 0; r.device = current_device(); })                             \
  X(cuMemAllocManaged, "cuMemAllocManaged", 6000, ANY, Alloc,                                  \
    (CUdeviceptr* dptr, size_t bytesize, unsigned int flags), (dptr, bytesize, flags),         \
    { r.bytes = bytesize; r.ptr = rc == 0 ? *dptr : 0; r.device = current_device();            \
      r.flags |= record_flag::kManaged; })                                                     \
  NB_TWIN(X, cuMemAllocAsync, cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, 11020, Alloc,     \
    (CUdeviceptr* dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream),         \
    { r.bytes = bytesize; r.ptr = rc == 0 ? *dptr : 0; r.device = current_device();            \
      r.stream = handle(hStream); r.flags |= record_flag::kAsync;                              \
      if (rc == 0) note_pool_reserved(r, 0, r.device); })                                      \
  NB_TWIN(X, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, 11020, Alloc, \
    (CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                 \
    (dptr, bytesize, pool, hStream),                                                           \
    { r.bytes = bytesize; r.ptr = rc == 0 ? *dptr : 0; r.device = current_device();            \
      r.ptr2 = handle(pool); r.stream = handle(hStream); r.flags |= record_flag::kAsync;       \
      if (rc == 0) note_pool_reserved(r, r.ptr2, r.device); })                                 \
  X(cuMemFree_v2, "cuMemFree", 3020, ANY, Free,                                                \
    (CUdeviceptr dptr), (dptr), { r.ptr = dptr; })                                             \
  NB_TWIN(X, cuMemFreeAsync, cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, 11020, Free,         \
    (CUdeviceptr dptr, CUstream hStream), (dptr, hStream),                                     \
    { r.ptr = dptr; r.stream = handle(hStream); r.flags |= record_flag::kAsync;                \
      if (rc == 0) note_pool_reserved(r, 0, current_device()); })                              \
  /* ---- virtual memory management ---- */                                                    \
  X(cuMemCreate, "cuMemCreate", 10020, ANY, VmmCreate,                                         \
    (CUmemGenericAllocationHandle* handle_out, size_t size, const CUmemAllocationProp* prop,   \
     unsigned long long flags), (handle_out, size, prop, flags),                               \
    { r.bytes = size; r.ptr = rc == 0 ? *handle_out : 0; r.device = prop_device(prop); })      \
  X(cuMemRelease, "cuMemRelease", 10020, ANY, VmmRelease,                                      \
    (CUmemGenericAllocationHandle h), (h), { r.ptr = h; })                                     \
  X(cuMemMap, "cuMemMap", 10020, ANY, VmmMap,                                                  \
    (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,              \
     unsigned long long flags), (ptr, size, offset, h, flags),                                 \
    { r.ptr = ptr; r.bytes = size; r.ptr2 = h; r.aux = offset; })                              \
  X(cuMemUnmap, "cuMemUnmap", 10020, ANY, VmmUnmap,                                            \
    (CUdeviceptr ptr, size_t size), (ptr, size), { r.ptr = ptr; r.bytes = size; })             \
  /* ---- pinned host memory (kept out of the device snapshot) ---- */                        \
  X(cuMemAllocHost_v2, "cuMemAllocHost", 3020, ANY, HostAlloc,                                 \
    (void** pp, size_t bytesize), (pp, bytesize),                                              \
    { r.bytes = bytesize; r.ptr = rc == 0 ? handle(*pp) : 0; })                                \
  X(cuMemHostAlloc, "cuMemHostAlloc", 2020, ANY, HostAlloc,                                    \
    (void** pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags),                   \
    { r.bytes = bytesize; r.ptr = rc == 0 ? handle(*pp) : 0; })                                \
  X(cuMemFreeHost, "cuMemFreeHost", 2000, ANY, HostFree,                                       \
    (void* p), (p), { r.ptr = handle(p); })                                                    \
  /* ---- launches ---- */                                                                     \
  NB_TWIN(X, cuLaunchKernel, cuLaunchKernel_ptsz, "cuLaunchKernel", 4000, 7000, Launch,         \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
     unsigned int by, unsigned int bz, unsigned int smem, CUstream hStream, void** params,     \
     void** extra), (f, gx, gy, gz, bx, by, bz, smem, hStream, params, extra),                 \
    NB_LAUNCH_FILL_DRV(f, gx, gy, gz, bx, by, bz, smem, hStream))                              \
  NB_TWIN(X, cuLaunchKernelEx, cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, 11060, Launch, \
    (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),                 \
    (config, f, params, extra),                                                                \
    { if (config) NB_LAUNCH_FILL_DRV(f, config->gridDimX, config->gridDimY, config->gridDimZ,  \
                       config->blockDimX, config->blockDimY, config->blockDimZ,                \
                       config->sharedMemBytes, config->hStream) })                             \
  NB_TWIN(X, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", 9000, 9000, Launch, \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
     unsigned int by, unsigned int bz, unsigned int smem, CUstream hStream, void** params),    \
    (f, gx, gy, gz, bx, by, bz, smem, hStream, params),                                        \
    NB_LAUNCH_FILL_DRV(f, gx, gy, gz, bx, by, bz, smem, hStream))                              \
  NB_TWIN(X, cuLaunchHostFunc, cuLaunchHostFunc_ptsz, "cuLaunchHostFunc", 10000, 10000, Other,  \
    (CUstream hStream, CUhostFn fn, void* userData), (hStream, fn, userData),                  \
    { r.stream = handle(hStream); r.ptr = reinterpret_cast<uint64_t>(fn); })                   \
  NB_TWIN(X, cuGraphLaunch, cuGraphLaunch_ptsz, "cuGraphLaunch", 10000, 10000, Graph,           \
    (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream),                         \
    { r.ptr = handle(hGraphExec); r.stream = handle(hStream); })                               \
  /* ---- copies ---- */                                                                       \
  NB_TWIN(X, cuMemcpy, cuMemcpy_ptds, "cuMemcpy", 4000, 7000, Memcpy,                           \
    (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n),                               \
    { copy(r, dst, src, n, CopyKind::Default, nullptr); })                                     \
  NB_TWIN(X, cuMemcpyAsync, cuMemcpyAsync_ptsz, "cuMemcpyAsync", 4000, 7000, Memcpy,            \
    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), (dst, src, n, hStream),   \
    { copy(r, dst, src, n, CopyKind::Default, hStream); })                                     \
  NB_TWIN(X, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 3020, 7000, Memcpy,         \
    (CUdeviceptr dst, const void* src, size_t n), (dst, src, n),                               \
    { copy(r, dst, handle(src), n, CopyKind::HtoD, nullptr); })                                \
  NB_TWIN(X, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 3020, 7000, Memcpy,         \
    (void* dst, CUdeviceptr src, size_t n), (dst, src, n),                                     \
    { copy(r, handle(dst), src, n, CopyKind::DtoH, nullptr); })                                \
  NB_TWIN(X, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", 3020, 7000, Memcpy,         \
    (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n),                               \
    { copy(r, dst, src, n, CopyKind::DtoD, nullptr); })                                        \
  NB_TWIN(X, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 3020, 7000, Memcpy, \
    (CUdeviceptr dst, const void* src, size_t n, CUstream hStream), (dst, src, n, hStream),   \
    { copy(r, dst, handle(src), n, CopyKind::HtoD, hStream); })                                \
  NB_TWIN(X, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 3020, 7000, Memcpy, \
    (void* dst, CUdeviceptr src, size_t n, CUstream hStream), (dst, src, n, hStream),         \
    { copy(r, handle(dst), src, n, CopyKind::DtoH, hStream); })                                \
  NB_TWIN(X, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", 3020, 7000, Memcpy, \
    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), (dst, src, n, hStream),   \
    { copy(r, dst, src, n, CopyKind::DtoD, hStream); })                                        \
  NB_TWIN(X, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, "cuMemcpy2D", 3020, 7000, Memcpy,               \
    (const CUDA_MEMCPY2D* p), (p), { copy2d(r, p, nullptr); })                                 \
  NB_TWIN(X, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds, "cuMemcpy2DUnaligned", 3020, 7000, Memcpy, \
    (const CUDA_MEMCPY2D* p), (p), { copy2d(r, p, nullptr); })                                 \
  NB_TWIN(X, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync", 3020, 7000, Memcpy, \
    (const CUDA_MEMCPY2D* p, CUstream hStream), (p, hStream), { copy2d(r, p, hStream); })      \
  NB_TWIN(X, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, "cuMemcpy3D", 3020, 7000, Memcpy,               \
    (const CUDA_MEMCPY3D* p), (p), { copy3d(r, p, nullptr); })                                 \
  NB_TWIN(X, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync", 3020, 7000, Memcpy, \
    (const CUDA_MEMCPY3D* p, CUstream hStream), (p, hStream), { copy3d(r, p, hStream); })      \
  NB_TWIN(X, cuMemcpyPeer, cuMemcpyPeer_ptds, "cuMemcpyPeer", 4000, 7000, Memcpy,               \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n),              \
    (dst, dctx, src, sctx, n), { copy(r, dst, src, n, CopyKind::Peer, nullptr); })             \
  NB_TWIN(X, cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync", 4000, 7000, Memcpy, \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream hStream), \
    (dst, dctx, src, sctx, n, hStream), { copy(r, dst, src, n, CopyKind::Peer, hStream); })    \
  /* ---- sets ---- */                                                                         \
  NB_TWIN(X, cuMemsetD8_v2, cuMemsetD8_v2_ptds, "cuMemsetD8", 3020, 7000, Memset,               \
    (CUdeviceptr dst, unsigned char v, size_t n), (dst, v, n), { set(r, dst, n, nullptr); })   \
  NB_TWIN(X, cuMemsetD16_v2, cuMemsetD16_v2_ptds, "cuMemsetD16", 3020, 7000, Memset,            \
    (CUdeviceptr dst, unsigned short v, size_t n), (dst, v, n), { set(r, dst, 2 * n, nullptr); }) \
  NB_TWIN(X, cuMemsetD32_v2, cuMemsetD32_v2_ptds, "cuMemsetD32", 3020, 7000, Memset,            \
    (CUdeviceptr dst, unsigned int v, size_t n), (dst, v, n), { set(r, dst, 4 * n, nullptr); }) \
  NB_TWIN(X, cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds, "cuMemsetD2D8", 3020, 7000, Memset,         \
    (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h), (dst, pitch, v, w, h), \
    { set(r, dst, w * h, nullptr); })                                                          \
  NB_TWIN(X, cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds, "cuMemsetD2D16", 3020, 7000, Memset,      \
    (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h), (dst, pitch, v, w, h), \
    { set(r, dst, 2 * w * h, nullptr); })                                                      \
  NB_TWIN(X, cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds, "cuMemsetD2D32", 3020, 7000, Memset,      \
    (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h), (dst, pitch, v, w, h), \
    { set(r, dst, 4 * w * h, nullptr); })                                                      \
  NB_TWIN(X, cuMemsetD8Async, cuMemsetD8Async_ptsz, "cuMemsetD8Async", 3020, 7000, Memset,      \
    (CUdeviceptr dst, unsigned char v, size_t n, CUstream s), (dst, v, n, s), { set(r, dst, n, s); }) \
  NB_TWIN(X, cuMemsetD16Async, cuMemsetD16Async_ptsz, "cuMemsetD16Async", 3020, 7000, Memset,   \
    (CUdeviceptr dst, unsigned short v, size_t n, CUstream s), (dst, v, n, s), { set(r, dst, 2 * n, s); }) \
  NB_TWIN(X, cuMemsetD32Async, cuMemsetD32Async_ptsz, "cuMemsetD32Async", 3020, 7000, Memset,   \
    (CUdeviceptr dst, unsigned int v, size_t n, CUstream s), (dst, v, n, s), { set(r, dst, 4 * n, s); }) \
  NB_TWIN(X, cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz, "cuMemsetD2D8Async", 3020, 7000, Memset, \
    (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s),          \
    (dst, pitch, v, w, h, s), { set(r, dst, w * h, s); })                                      \
  NB_TWIN(X, cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz, "cuMemsetD2D16Async", 3020, 7000, Memset, \
    (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s),         \
    (dst, pitch, v, w, h, s), { set(r, dst, 2 * w * h, s); })                                  \
  NB_TWIN(X, cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz, "cuMemsetD2D32Async", 3020, 7000, Memset, \
    (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s),           \
    (dst, pitch, v, w, h, s), { set(r, dst, 4 * w * h, s); })                                  \
  /* ---- synchronisation ---- */                                                              \
  X(cuCtxSynchronize, "cuCtxSynchronize", 2000, ANY, Sync, (), (), {})                         \
  X(cuCtxSynchronize_v2, "cuCtxSynchronize", 13000, ANY, Sync,                                 \
    (CUcontext ctx), (ctx), { r.ptr = handle(ctx); })                                          \
  NB_TWIN(X, cuStreamSynchronize, cuStreamSynchronize_ptsz, "cuStreamSynchronize", 2000, 7000, Sync, \
    (CUstream hStream), (hStream), { r.stream = handle(hStream); })                            \
  X(cuEventSynchronize, "cuEventSynchronize", 2000, ANY, Sync,                                 \
    (CUevent hEvent), (hEvent), { r.ptr = handle(hEvent); })                                   \
  /* ---- stream capture: work on a capturing stream runs later, as a graph. Kind Capture: */ \
  /* the fill runs even when nb is not recording (hooks.cpp), to keep count of the captures */ \
  NB_TWIN(X, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture", 10010, 10010, Capture, \
    (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode),                             \
    { r.stream = handle(hStream); note_capture_begin(r, rc); })                                \
  NB_TWIN(X, cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz, "cuStreamBeginCaptureToGraph", 12030, 12030, Capture, \
    (CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies, const CUgraphEdgeData* dependencyData, \
     size_t numDependencies, CUstreamCaptureMode mode),                                        \
    (hStream, hGraph, dependencies, dependencyData, numDependencies, mode),                    \
    { r.stream = handle(hStream); note_capture_begin(r, rc); })                                \
  NB_TWIN(X, cuStreamEndCapture, cuStreamEndCapture_ptsz, "cuStreamEndCapture", 10000, 10000, Capture, \
    (CUstream hStream, CUgraph* phGraph), (hStream, phGraph),                                  \
    { r.stream = handle(hStream); note_capture_end(r, rc); })                                  \
  /* ---- the capture range of NB_STEP=profiler-api ---- */                                    \
  X(cuProfilerStart, "cuProfilerStart", 4000, ANY, Profiler, (), (), {})                       \
  X(cuProfilerStop, "cuProfilerStop", 4000, ANY, Profiler, (), (), {})                         \
  /* ---- unloads: a function handle may be reused afterwards, so cached ---- */               \
  /* ---- kernel names are forgotten                                     ---- */               \
  X(cuModuleUnload, "cuModuleUnload", 2000, ANY, Module,                                       \
    (CUmodule hmod), (hmod), { r.ptr = handle(hmod); forget_kernel_names(); })                 \
  X(cuLibraryUnload, "cuLibraryUnload", 12000, ANY, Module,                                    \
    (CUlibrary lib), (lib), { r.ptr = handle(lib); forget_kernel_names(); })

#define NB_RT_TWIN(X, sym, ptsym, kind, params, args, fill) \
  X(sym, #sym, kind, params, args, fill)                    \
  X(ptsym, #ptsym, kind, params, args, fill)

#define NB_RT_LAUNCH_FILL(func, g, b, smem, st)                                                \
  { r.ptr = handle(func); if (r.name == 0) r.name = stub_name(func);                          \
    r.grid[0] = g.x; r.grid[1] = g.y; r.grid[2] = g.z;                                         \
    r.block[0] = b.x; r.block[1] = b.y; r.block[2] = b.z;                                      \
    r.shared_mem = static_cast<uint32_t>(smem); r.stream = handle(st); }

#define NB_RUNTIME_HOOKS(X)                                                                   \
  /* ---- device memory ---- */                                                                \
  X(cudaMalloc, "cudaMalloc", Alloc, (void** devPtr, size_t size), (devPtr, size),             \
    { r.bytes = size; r.ptr = rc == 0 ? handle(*devPtr) : 0; r.device = current_device(); })  \
  X(cudaFree, "cudaFree", Free, (void* devPtr), (devPtr), { r.ptr = handle(devPtr); })          \
  NB_RT_TWIN(X, cudaMallocAsync, cudaMallocAsync_ptsz, Alloc,                                   \
    (void** devPtr, size_t size, cudaStream_t s), (devPtr, size, s),                           \
    { r.bytes = size; r.ptr = rc == 0 ? handle(*devPtr) : 0; r.device = current_device();      \
      r.stream = handle(s); r.flags |= record_flag::kAsync;                                    \
      if (rc == 0) note_pool_reserved(r, 0, r.device); })                                      \
  NB_RT_TWIN(X, cudaMallocFromPoolAsync, cudaMallocFromPoolAsync_ptsz, Alloc,                   \
    (void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s),       \
    { r.bytes = size; r.ptr = rc == 0 ? handle(*ptr) : 0; r.device = current_device();         \
      r.ptr2 = handle(pool); r.stream = handle(s); r.flags |= record_flag::kAsync;             \
      if (rc == 0) note_pool_reserved(r, r.ptr2, r.device); })                                 \
  NB_RT_TWIN(X, cudaFreeAsync, cudaFreeAsync_ptsz, Free, (void* devPtr, cudaStream_t s), (devPtr, s), \
    { r.ptr = handle(devPtr); r.stream = handle(s); r.flags |= record_flag::kAsync;            \
      if (rc == 0) note_pool_reserved(r, 0, current_device()); })                              \
  X(cudaMallocManaged, "cudaMallocManaged", Alloc,                                             \
    (void** devPtr, size_t size, unsigned int flags), (devPtr, size, flags),                   \
    { r.bytes = size; r.ptr = rc == 0 ? handle(*devPtr) : 0; r.device = current_device();      \
      r.flags |= record_flag::kManaged; })                                                     \
  X(cudaMallocPitch, "cudaMallocPitch", Alloc,                                                 \
    (void** devPtr, size_t* pitch, size_t width, size_t height), (devPtr, pitch, width, height), \
    { r.bytes = rc == 0 ? *pitch * height : width * height;                                    \
      r.ptr = rc == 0 ? handle(*devPtr) : 0; r.device = current_device(); })                   \
  /* ---- pinned host memory ---- */                                                           \
  X(cudaMallocHost, "cudaMallocHost", HostAlloc, (void** p, size_t size), (p, size),           \
    { r.bytes = size; r.ptr = rc == 0 ? handle(*p) : 0; })                                     \
  X(cudaHostAlloc, "cudaHostAlloc", HostAlloc, (void** p, size_t size, unsigned int flags),    \
    (p, size, flags), { r.bytes = size; r.ptr = rc == 0 ? handle(*p) : 0; })                   \
  X(cudaFreeHost, "cudaFreeHost", HostFree, (void* p), (p), { r.ptr = handle(p); })            \
  /* ---- launches ---- */                                                                     \
  NB_RT_TWIN(X, cudaLaunchKernel, cudaLaunchKernel_ptsz, Launch,                                \
    (const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),              \
    (func, g, b, args, smem, s), NB_RT_LAUNCH_FILL(func, g, b, smem, s))                       \
  /* CUDA 13 kernel stubs call these instead of cudaLaunchKernel (host_runtime.h). */          \
  X(__cudaLaunchKernel, "cudaLaunchKernel", Launch,                                            \
    (cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),                \
    (k, g, b, args, smem, s),                                                                  \
    { if (r.name == 0 && rc == 0) r.name = kernel_name(reinterpret_cast<CUkernel>(k));         \
      NB_RT_LAUNCH_FILL(k, g, b, smem, s) })                                                   \
  X(__cudaLaunchKernel_ptsz, "cudaLaunchKernel_ptsz", Launch,                                  \
    (cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),                \
    (k, g, b, args, smem, s),                                                                  \
    { if (r.name == 0 && rc == 0) r.name = kernel_name(reinterpret_cast<CUkernel>(k));         \
      NB_RT_LAUNCH_FILL(k, g, b, smem, s) })                                                   \
  NB_RT_TWIN(X, cudaLaunchKernelExC, cudaLaunchKernelExC_ptsz, Launch,                          \
    (const cudaLaunchConfig_t* config, const void* func, void** args), (config, func, args),   \
    { if (config) NB_RT_LAUNCH_FILL(func, config->gridDim, config->blockDim,                   \
                                    config->dynamicSmemBytes, config->stream) })               \
  NB_RT_TWIN(X, cudaLaunchCooperativeKernel, cudaLaunchCooperativeKernel_ptsz, Launch,          \
    (const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),              \
    (func, g, b, args, smem, s), NB_RT_LAUNCH_FILL(func, g, b, smem, s))                       \
  X(cudaGraphLaunch, "cudaGraphLaunch", Graph, (cudaGraphExec_t e, cudaStream_t s), (e, s),    \
    { r.ptr = handle(e); r.stream = handle(s); })                                              \
  X(cudaGraphLaunch_ptsz, "cudaGraphLaunch_ptsz", Graph, (cudaGraphExec_t e, cudaStream_t s),  \
    (e, s), { r.ptr = handle(e); r.stream = handle(s); })                                      \
  /* ---- copies and sets ---- */                                                              \
  NB_RT_TWIN(X, cudaMemcpy, cudaMemcpy_ptds, Memcpy,                                            \
    (void* dst, const void* src, size_t n, cudaMemcpyKind k), (dst, src, n, k),                \
    { copy(r, handle(dst), handle(src), n, rt_copy_kind(k), nullptr); })                       \
  NB_RT_TWIN(X, cudaMemcpyAsync, cudaMemcpyAsync_ptsz, Memcpy,                                  \
    (void* dst, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s), (dst, src, n, k, s), \
    { copy(r, handle(dst), handle(src), n, rt_copy_kind(k), s); })                             \
  NB_RT_TWIN(X, cudaMemcpy2D, cudaMemcpy2D_ptds, Memcpy,                                        \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k),  \
    (dst, dp, src, sp, w, h, k), { copy(r, handle(dst), handle(src), w * h, rt_copy_kind(k), nullptr); }) \
  NB_RT_TWIN(X, cudaMemcpy2DAsync, cudaMemcpy2DAsync_ptsz, Memcpy,                              \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k,   \
     cudaStream_t s), (dst, dp, src, sp, w, h, k, s),                                          \
    { copy(r, handle(dst), handle(src), w * h, rt_copy_kind(k), s); })                         \
  X(cudaMemcpyPeer, "cudaMemcpyPeer", Memcpy,                                                  \
    (void* dst, int dd, const void* src, int sd, size_t n), (dst, dd, src, sd, n),             \
    { copy(r, handle(dst), handle(src), n, CopyKind::Peer, nullptr); })                        \
  X(cudaMemcpyPeerAsync, "cudaMemcpyPeerAsync", Memcpy,                                        \
    (void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t s), (dst, dd, src, sd, n, s), \
    { copy(r, handle(dst), handle(src), n, CopyKind::Peer, s); })                              \
  NB_RT_TWIN(X, cudaMemset, cudaMemset_ptds, Memset, (void* p, int v, size_t n), (p, v, n),     \
    { set(r, handle(p), n, nullptr); })                                                        \
  X(cudaMemsetAsync, "cudaMemsetAsync", Memset, (void* p, int v, size_t n, cudaStream_t s),    \
    (p, v, n, s), { set(r, handle(p), n, s); })                                                \
  X(cudaMemsetAsync_ptsz, "cudaMemsetAsync_ptsz", Memset,                                      \
    (void* p, int v, size_t n, cudaStream_t s), (p, v, n, s), { set(r, handle(p), n, s); })    \
  /* ---- synchronisation ---- */                                                              \
  X(cudaDeviceSynchronize, "cudaDeviceSynchronize", Sync, (), (), {})                          \
  NB_RT_TWIN(X, cudaStreamSynchronize, cudaStreamSynchronize_ptsz, Sync, (cudaStream_t s), (s), \
    { r.stream = handle(s); })                                                                 \
  X(cudaEventSynchronize, "cudaEventSynchronize", Sync, (cudaEvent_t e), (e),                  \
    { r.ptr = handle(e); })                                                                    \
  /* ---- stream capture ---- */                                                                \
  NB_RT_TWIN(X, cudaStreamBeginCapture, cudaStreamBeginCapture_ptsz, Capture,                   \
    (cudaStream_t s, cudaStreamCaptureMode mode), (s, mode),                                   \
    { r.stream = handle(s); note_capture_begin(r, rc); })                                      \
  NB_RT_TWIN(X, cudaStreamBeginCaptureToGraph, cudaStreamBeginCaptureToGraph_ptsz, Capture,     \
    (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps, const cudaGraphEdgeData* data,  \
     size_t n, cudaStreamCaptureMode mode), (s, g, deps, data, n, mode),                        \
    { r.stream = handle(s); note_capture_begin(r, rc); })                                      \
  NB_RT_TWIN(X, cudaStreamEndCapture, cudaStreamEndCapture_ptsz, Capture,                       \
    (cudaStream_t s, cudaGraph_t* g), (s, g), { r.stream = handle(s); note_capture_end(r, rc); }) \
  /* ---- the capture range of NB_STEP=profiler-api ---- */                                    \
  X(cudaProfilerStart, "cudaProfilerStart", Profiler, (), (), {})                              \
  X(cudaProfilerStop, "cudaProfilerStop", Profiler, (), (), {})
// clang-format on
