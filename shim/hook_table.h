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
//   kind     Record kind (collector/record.h)
//   params   parenthesised parameter list; args the same names
//   fill     statements run after the real call with `r` (Record&) and `rc`
//
// NB_RUNTIME(sym, display, kind, params, args, fill)
//   sym      exported symbol of libcudart; display = name shown in outputs
//
// Helpers used in fill blocks are in shim/fill_helpers.h.
// clang-format off
#define NB_LAUNCH_FILL_DRV(f, gx, gy, gz, bx, by, bz, smem, st) \
  { r.ptr = reinterpret_cast<uint64_t>(f); r.name = kernel_name(f);                    \
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
  X(cuMemAllocAsync, "cuMemAllocAsync", 11020, LEGACY, Alloc,                                  \
    (CUdeviceptr* dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream),         \
    { r.bytes = bytesize; r.ptr = rc == 0 ? *dptr : 0; r.device = current_device();            \
      r.stream = handle(hStream); r.flags |= record_flag::kAsync; })                           \
  X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, PTDS, Alloc,                               \
    (CUdeviceptr* dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream),         \
    { r.bytes = bytesize; r.ptr = rc == 0 ? *dptr : 0; r.device = current_device();            \
      r.stream = handle(hStream); r.flags |= record_flag::kAsync; })                           \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, LEGACY, Alloc,                  \
    (CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                 \
    (dptr, bytesize, pool, hStream),                                                           \
    { r.bytes = bytesize; r.ptr = rc == 0 ? *dptr : 0; r.device = current_device();            \
      r.ptr2 = handle(pool); r.stream = handle(hStream); r.flags |= record_flag::kAsync; })    \
  X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", 11020, PTDS, Alloc,               \
    (CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                 \
    (dptr, bytesize, pool, hStream),                                                           \
    { r.bytes = bytesize; r.ptr = rc == 0 ? *dptr : 0; r.device = current_device();            \
      r.ptr2 = handle(pool); r.stream = handle(hStream); r.flags |= record_flag::kAsync; })    \
  X(cuMemFree_v2, "cuMemFree", 3020, ANY, Free,                                                \
    (CUdeviceptr dptr), (dptr), { r.ptr = dptr; })                                             \
  X(cuMemFreeAsync, "cuMemFreeAsync", 11020, LEGACY, Free,                                     \
    (CUdeviceptr dptr, CUstream hStream), (dptr, hStream),                                     \
    { r.ptr = dptr; r.stream = handle(hStream); r.flags |= record_flag::kAsync; })             \
  X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, PTDS, Free,                                  \
    (CUdeviceptr dptr, CUstream hStream), (dptr, hStream),                                     \
    { r.ptr = dptr; r.stream = handle(hStream); r.flags |= record_flag::kAsync; })             \
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
  X(cuLaunchKernel, "cuLaunchKernel", 4000, LEGACY, Launch,                                    \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
     unsigned int by, unsigned int bz, unsigned int smem, CUstream hStream, void** params,     \
     void** extra), (f, gx, gy, gz, bx, by, bz, smem, hStream, params, extra),                 \
    NB_LAUNCH_FILL_DRV(f, gx, gy, gz, bx, by, bz, smem, hStream))                              \
  X(cuLaunchKernel_ptsz, "cuLaunchKernel", 7000, PTDS, Launch,                                 \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
     unsigned int by, unsigned int bz, unsigned int smem, CUstream hStream, void** params,     \
     void** extra), (f, gx, gy, gz, bx, by, bz, smem, hStream, params, extra),                 \
    NB_LAUNCH_FILL_DRV(f, gx, gy, gz, bx, by, bz, smem, hStream))                              \
  X(cuLaunchKernelEx, "cuLaunchKernelEx", 11060, LEGACY, Launch,                               \
    (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),                 \
    (config, f, params, extra),                                                                \
    NB_LAUNCH_FILL_DRV(f, config->gridDimX, config->gridDimY, config->gridDimZ,                \
                       config->blockDimX, config->blockDimY, config->blockDimZ,                \
                       config->sharedMemBytes, config->hStream))                               \
  X(cuLaunchKernelEx_ptsz, "cuLaunchKernelEx", 11060, PTDS, Launch,                            \
    (const CUlaunchConfig* config, CUfunction f, void** params, void** extra),                 \
    (config, f, params, extra),                                                                \
    NB_LAUNCH_FILL_DRV(f, config->gridDimX, config->gridDimY, config->gridDimZ,                \
                       config->blockDimX, config->blockDimY, config->blockDimZ,                \
                       config->sharedMemBytes, config->hStream))                               \
  X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", 9000, LEGACY, Launch,              \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
     unsigned int by, unsigned int bz, unsigned int smem, CUstream hStream, void** params),    \
    (f, gx, gy, gz, bx, by, bz, smem, hStream, params),                                        \
    NB_LAUNCH_FILL_DRV(f, gx, gy, gz, bx, by, bz, smem, hStream))                              \
  X(cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", 9000, PTDS, Launch,           \
    (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
     unsigned int by, unsigned int bz, unsigned int smem, CUstream hStream, void** params),    \
    (f, gx, gy, gz, bx, by, bz, smem, hStream, params),                                        \
    NB_LAUNCH_FILL_DRV(f, gx, gy, gz, bx, by, bz, smem, hStream))                              \
  X(cuLaunchHostFunc, "cuLaunchHostFunc", 10000, LEGACY, Other,                                \
    (CUstream hStream, CUhostFn fn, void* userData), (hStream, fn, userData),                  \
    { r.stream = handle(hStream); r.ptr = reinterpret_cast<uint64_t>(fn); })                   \
  X(cuLaunchHostFunc_ptsz, "cuLaunchHostFunc", 10000, PTDS, Other,                             \
    (CUstream hStream, CUhostFn fn, void* userData), (hStream, fn, userData),                  \
    { r.stream = handle(hStream); r.ptr = reinterpret_cast<uint64_t>(fn); })                   \
  X(cuGraphLaunch, "cuGraphLaunch", 10000, LEGACY, Graph,                                      \
    (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream),                         \
    { r.ptr = handle(hGraphExec); r.stream = handle(hStream); })                               \
  X(cuGraphLaunch_ptsz, "cuGraphLaunch", 10000, PTDS, Graph,                                   \
    (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream),                         \
    { r.ptr = handle(hGraphExec); r.stream = handle(hStream); })                               \
  /* ---- copies ---- */                                                                       \
  X(cuMemcpy, "cuMemcpy", 4000, LEGACY, Memcpy,                                                \
    (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n),                               \
    { copy(r, dst, src, n, CopyKind::Default, nullptr); })                                     \
  X(cuMemcpy_ptds, "cuMemcpy", 7000, PTDS, Memcpy,                                             \
    (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n),                               \
    { copy(r, dst, src, n, CopyKind::Default, nullptr); })                                     \
  X(cuMemcpyAsync, "cuMemcpyAsync", 4000, LEGACY, Memcpy,                                      \
    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), (dst, src, n, hStream),   \
    { copy(r, dst, src, n, CopyKind::Default, hStream); })                                     \
  X(cuMemcpyAsync_ptsz, "cuMemcpyAsync", 7000, PTDS, Memcpy,                                   \
    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), (dst, src, n, hStream),   \
    { copy(r, dst, src, n, CopyKind::Default, hStream); })                                     \
  X(cuMemcpyHtoD_v2, "cuMemcpyHtoD", 3020, LEGACY, Memcpy,                                     \
    (CUdeviceptr dst, const void* src, size_t n), (dst, src, n),                               \
    { copy(r, dst, handle(src), n, CopyKind::HtoD, nullptr); })                                \
  X(cuMemcpyHtoD_v2_ptds, "cuMemcpyHtoD", 7000, PTDS, Memcpy,                                  \
    (CUdeviceptr dst, const void* src, size_t n), (dst, src, n),                               \
    { copy(r, dst, handle(src), n, CopyKind::HtoD, nullptr); })                                \
  X(cuMemcpyDtoH_v2, "cuMemcpyDtoH", 3020, LEGACY, Memcpy,                                     \
    (void* dst, CUdeviceptr src, size_t n), (dst, src, n),                                     \
    { copy(r, handle(dst), src, n, CopyKind::DtoH, nullptr); })                                \
  X(cuMemcpyDtoH_v2_ptds, "cuMemcpyDtoH", 7000, PTDS, Memcpy,                                  \
    (void* dst, CUdeviceptr src, size_t n), (dst, src, n),                                     \
    { copy(r, handle(dst), src, n, CopyKind::DtoH, nullptr); })                                \
  X(cuMemcpyDtoD_v2, "cuMemcpyDtoD", 3020, LEGACY, Memcpy,                                     \
    (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n),                               \
    { copy(r, dst, src, n, CopyKind::DtoD, nullptr); })                                        \
  X(cuMemcpyDtoD_v2_ptds, "cuMemcpyDtoD", 7000, PTDS, Memcpy,                                  \
    (CUdeviceptr dst, CUdeviceptr src, size_t n), (dst, src, n),                               \
    { copy(r, dst, src, n, CopyKind::DtoD, nullptr); })                                        \
  X(cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync", 3020, LEGACY, Memcpy,                           \
    (CUdeviceptr dst, const void* src, size_t n, CUstream hStream), (dst, src, n, hStream),   \
    { copy(r, dst, handle(src), n, CopyKind::HtoD, hStream); })                                \
  X(cuMemcpyHtoDAsync_v2_ptsz, "cuMemcpyHtoDAsync", 7000, PTDS, Memcpy,                        \
    (CUdeviceptr dst, const void* src, size_t n, CUstream hStream), (dst, src, n, hStream),   \
    { copy(r, dst, handle(src), n, CopyKind::HtoD, hStream); })                                \
  X(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync", 3020, LEGACY, Memcpy,                           \
    (void* dst, CUdeviceptr src, size_t n, CUstream hStream), (dst, src, n, hStream),         \
    { copy(r, handle(dst), src, n, CopyKind::DtoH, hStream); })                                \
  X(cuMemcpyDtoHAsync_v2_ptsz, "cuMemcpyDtoHAsync", 7000, PTDS, Memcpy,                        \
    (void* dst, CUdeviceptr src, size_t n, CUstream hStream), (dst, src, n, hStream),         \
    { copy(r, handle(dst), src, n, CopyKind::DtoH, hStream); })                                \
  X(cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync", 3020, LEGACY, Memcpy,                           \
    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), (dst, src, n, hStream),   \
    { copy(r, dst, src, n, CopyKind::DtoD, hStream); })                                        \
  X(cuMemcpyDtoDAsync_v2_ptsz, "cuMemcpyDtoDAsync", 7000, PTDS, Memcpy,                        \
    (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), (dst, src, n, hStream),   \
    { copy(r, dst, src, n, CopyKind::DtoD, hStream); })                                        \
  X(cuMemcpy2D_v2, "cuMemcpy2D", 3020, LEGACY, Memcpy,                                         \
    (const CUDA_MEMCPY2D* p), (p), { copy2d(r, p, nullptr); })                                 \
  X(cuMemcpy2D_v2_ptds, "cuMemcpy2D", 7000, PTDS, Memcpy,                                      \
    (const CUDA_MEMCPY2D* p), (p), { copy2d(r, p, nullptr); })                                 \
  X(cuMemcpy2DUnaligned_v2, "cuMemcpy2DUnaligned", 3020, LEGACY, Memcpy,                       \
    (const CUDA_MEMCPY2D* p), (p), { copy2d(r, p, nullptr); })                                 \
  X(cuMemcpy2DUnaligned_v2_ptds, "cuMemcpy2DUnaligned", 7000, PTDS, Memcpy,                    \
    (const CUDA_MEMCPY2D* p), (p), { copy2d(r, p, nullptr); })                                 \
  X(cuMemcpy2DAsync_v2, "cuMemcpy2DAsync", 3020, LEGACY, Memcpy,                               \
    (const CUDA_MEMCPY2D* p, CUstream hStream), (p, hStream), { copy2d(r, p, hStream); })      \
  X(cuMemcpy2DAsync_v2_ptsz, "cuMemcpy2DAsync", 7000, PTDS, Memcpy,                            \
    (const CUDA_MEMCPY2D* p, CUstream hStream), (p, hStream), { copy2d(r, p, hStream); })      \
  X(cuMemcpy3D_v2, "cuMemcpy3D", 3020, LEGACY, Memcpy,                                         \
    (const CUDA_MEMCPY3D* p), (p), { copy3d(r, p, nullptr); })                                 \
  X(cuMemcpy3D_v2_ptds, "cuMemcpy3D", 7000, PTDS, Memcpy,                                      \
    (const CUDA_MEMCPY3D* p), (p), { copy3d(r, p, nullptr); })                                 \
  X(cuMemcpy3DAsync_v2, "cuMemcpy3DAsync", 3020, LEGACY, Memcpy,                               \
    (const CUDA_MEMCPY3D* p, CUstream hStream), (p, hStream), { copy3d(r, p, hStream); })      \
  X(cuMemcpy3DAsync_v2_ptsz, "cuMemcpy3DAsync", 7000, PTDS, Memcpy,                            \
    (const CUDA_MEMCPY3D* p, CUstream hStream), (p, hStream), { copy3d(r, p, hStream); })      \
  X(cuMemcpyPeer, "cuMemcpyPeer", 4000, LEGACY, Memcpy,                                        \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n),              \
    (dst, dctx, src, sctx, n), { copy(r, dst, src, n, CopyKind::Peer, nullptr); })             \
  X(cuMemcpyPeer_ptds, "cuMemcpyPeer", 7000, PTDS, Memcpy,                                     \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n),              \
    (dst, dctx, src, sctx, n), { copy(r, dst, src, n, CopyKind::Peer, nullptr); })             \
  X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 4000, LEGACY, Memcpy,                              \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream hStream), \
    (dst, dctx, src, sctx, n, hStream), { copy(r, dst, src, n, CopyKind::Peer, hStream); })    \
  X(cuMemcpyPeerAsync_ptsz, "cuMemcpyPeerAsync", 7000, PTDS, Memcpy,                           \
    (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream hStream), \
    (dst, dctx, src, sctx, n, hStream), { copy(r, dst, src, n, CopyKind::Peer, hStream); })    \
  /* ---- sets ---- */                                                                         \
  X(cuMemsetD8_v2, "cuMemsetD8", 3020, LEGACY, Memset,                                         \
    (CUdeviceptr dst, unsigned char v, size_t n), (dst, v, n), { set(r, dst, n, nullptr); })   \
  X(cuMemsetD8_v2_ptds, "cuMemsetD8", 7000, PTDS, Memset,                                      \
    (CUdeviceptr dst, unsigned char v, size_t n), (dst, v, n), { set(r, dst, n, nullptr); })   \
  X(cuMemsetD16_v2, "cuMemsetD16", 3020, LEGACY, Memset,                                       \
    (CUdeviceptr dst, unsigned short v, size_t n), (dst, v, n), { set(r, dst, 2 * n, nullptr); }) \
  X(cuMemsetD16_v2_ptds, "cuMemsetD16", 7000, PTDS, Memset,                                    \
    (CUdeviceptr dst, unsigned short v, size_t n), (dst, v, n), { set(r, dst, 2 * n, nullptr); }) \
  X(cuMemsetD32_v2, "cuMemsetD32", 3020, LEGACY, Memset,                                       \
    (CUdeviceptr dst, unsigned int v, size_t n), (dst, v, n), { set(r, dst, 4 * n, nullptr); }) \
  X(cuMemsetD32_v2_ptds, "cuMemsetD32", 7000, PTDS, Memset,                                    \
    (CUdeviceptr dst, unsigned int v, size_t n), (dst, v, n), { set(r, dst, 4 * n, nullptr); }) \
  X(cuMemsetD2D8_v2, "cuMemsetD2D8", 3020, LEGACY, Memset,                                     \
    (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h), (dst, pitch, v, w, h), \
    { set(r, dst, w * h, nullptr); })                                                          \
  X(cuMemsetD2D8_v2_ptds, "cuMemsetD2D8", 7000, PTDS, Memset,                                  \
    (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h), (dst, pitch, v, w, h), \
    { set(r, dst, w * h, nullptr); })                                                          \
  X(cuMemsetD2D16_v2, "cuMemsetD2D16", 3020, LEGACY, Memset,                                   \
    (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h), (dst, pitch, v, w, h), \
    { set(r, dst, 2 * w * h, nullptr); })                                                      \
  X(cuMemsetD2D16_v2_ptds, "cuMemsetD2D16", 7000, PTDS, Memset,                                \
    (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h), (dst, pitch, v, w, h), \
    { set(r, dst, 2 * w * h, nullptr); })                                                      \
  X(cuMemsetD2D32_v2, "cuMemsetD2D32", 3020, LEGACY, Memset,                                   \
    (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h), (dst, pitch, v, w, h), \
    { set(r, dst, 4 * w * h, nullptr); })                                                      \
  X(cuMemsetD2D32_v2_ptds, "cuMemsetD2D32", 7000, PTDS, Memset,                                \
    (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h), (dst, pitch, v, w, h), \
    { set(r, dst, 4 * w * h, nullptr); })                                                      \
  X(cuMemsetD8Async, "cuMemsetD8Async", 3020, LEGACY, Memset,                                  \
    (CUdeviceptr dst, unsigned char v, size_t n, CUstream s), (dst, v, n, s), { set(r, dst, n, s); }) \
  X(cuMemsetD8Async_ptsz, "cuMemsetD8Async", 7000, PTDS, Memset,                               \
    (CUdeviceptr dst, unsigned char v, size_t n, CUstream s), (dst, v, n, s), { set(r, dst, n, s); }) \
  X(cuMemsetD16Async, "cuMemsetD16Async", 3020, LEGACY, Memset,                                \
    (CUdeviceptr dst, unsigned short v, size_t n, CUstream s), (dst, v, n, s), { set(r, dst, 2 * n, s); }) \
  X(cuMemsetD16Async_ptsz, "cuMemsetD16Async", 7000, PTDS, Memset,                             \
    (CUdeviceptr dst, unsigned short v, size_t n, CUstream s), (dst, v, n, s), { set(r, dst, 2 * n, s); }) \
  X(cuMemsetD32Async, "cuMemsetD32Async", 3020, LEGACY, Memset,                                \
    (CUdeviceptr dst, unsigned int v, size_t n, CUstream s), (dst, v, n, s), { set(r, dst, 4 * n, s); }) \
  X(cuMemsetD32Async_ptsz, "cuMemsetD32Async", 7000, PTDS, Memset,                             \
    (CUdeviceptr dst, unsigned int v, size_t n, CUstream s), (dst, v, n, s), { set(r, dst, 4 * n, s); }) \
  X(cuMemsetD2D8Async, "cuMemsetD2D8Async", 3020, LEGACY, Memset,                              \
    (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s),          \
    (dst, pitch, v, w, h, s), { set(r, dst, w * h, s); })                                      \
  X(cuMemsetD2D8Async_ptsz, "cuMemsetD2D8Async", 7000, PTDS, Memset,                           \
    (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s),          \
    (dst, pitch, v, w, h, s), { set(r, dst, w * h, s); })                                      \
  X(cuMemsetD2D16Async, "cuMemsetD2D16Async", 3020, LEGACY, Memset,                            \
    (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s),         \
    (dst, pitch, v, w, h, s), { set(r, dst, 2 * w * h, s); })                                  \
  X(cuMemsetD2D16Async_ptsz, "cuMemsetD2D16Async", 7000, PTDS, Memset,                         \
    (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s),         \
    (dst, pitch, v, w, h, s), { set(r, dst, 2 * w * h, s); })                                  \
  X(cuMemsetD2D32Async, "cuMemsetD2D32Async", 3020, LEGACY, Memset,                            \
    (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s),           \
    (dst, pitch, v, w, h, s), { set(r, dst, 4 * w * h, s); })                                  \
  X(cuMemsetD2D32Async_ptsz, "cuMemsetD2D32Async", 7000, PTDS, Memset,                         \
    (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s),           \
    (dst, pitch, v, w, h, s), { set(r, dst, 4 * w * h, s); })                                  \
  /* ---- synchronisation ---- */                                                              \
  X(cuCtxSynchronize, "cuCtxSynchronize", 2000, ANY, Sync, (), (), {})                         \
  X(cuCtxSynchronize_v2, "cuCtxSynchronize", 13000, ANY, Sync,                                 \
    (CUcontext ctx), (ctx), { r.ptr = handle(ctx); })                                          \
  X(cuStreamSynchronize, "cuStreamSynchronize", 2000, LEGACY, Sync,                            \
    (CUstream hStream), (hStream), { r.stream = handle(hStream); })                            \
  X(cuStreamSynchronize_ptsz, "cuStreamSynchronize", 7000, PTDS, Sync,                         \
    (CUstream hStream), (hStream), { r.stream = handle(hStream); })                            \
  X(cuEventSynchronize, "cuEventSynchronize", 2000, ANY, Sync,                                 \
    (CUevent hEvent), (hEvent), { r.ptr = handle(hEvent); })                                   \
  /* ---- unloads: a function handle may be reused afterwards, so cached ---- */               \
  /* ---- kernel names are forgotten                                     ---- */               \
  X(cuModuleUnload, "cuModuleUnload", 2000, ANY, Module,                                       \
    (CUmodule hmod), (hmod), { r.ptr = handle(hmod); forget_kernel_names(); })                 \
  X(cuLibraryUnload, "cuLibraryUnload", 12000, ANY, Module,                                    \
    (CUlibrary lib), (lib), { r.ptr = handle(lib); forget_kernel_names(); })

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
  X(cudaMallocAsync, "cudaMallocAsync", Alloc,                                                 \
    (void** devPtr, size_t size, cudaStream_t s), (devPtr, size, s),                           \
    { r.bytes = size; r.ptr = rc == 0 ? handle(*devPtr) : 0; r.device = current_device();      \
      r.stream = handle(s); r.flags |= record_flag::kAsync; })                                 \
  X(cudaMallocAsync_ptsz, "cudaMallocAsync_ptsz", Alloc,                                       \
    (void** devPtr, size_t size, cudaStream_t s), (devPtr, size, s),                           \
    { r.bytes = size; r.ptr = rc == 0 ? handle(*devPtr) : 0; r.device = current_device();      \
      r.stream = handle(s); r.flags |= record_flag::kAsync; })                                 \
  X(cudaMallocFromPoolAsync, "cudaMallocFromPoolAsync", Alloc,                                 \
    (void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s),       \
    { r.bytes = size; r.ptr = rc == 0 ? handle(*ptr) : 0; r.device = current_device();         \
      r.ptr2 = handle(pool); r.stream = handle(s); r.flags |= record_flag::kAsync; })          \
  X(cudaMallocFromPoolAsync_ptsz, "cudaMallocFromPoolAsync_ptsz", Alloc,                       \
    (void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t s), (ptr, size, pool, s),       \
    { r.bytes = size; r.ptr = rc == 0 ? handle(*ptr) : 0; r.device = current_device();         \
      r.ptr2 = handle(pool); r.stream = handle(s); r.flags |= record_flag::kAsync; })          \
  X(cudaFreeAsync, "cudaFreeAsync", Free, (void* devPtr, cudaStream_t s), (devPtr, s),         \
    { r.ptr = handle(devPtr); r.stream = handle(s); r.flags |= record_flag::kAsync; })         \
  X(cudaFreeAsync_ptsz, "cudaFreeAsync_ptsz", Free, (void* devPtr, cudaStream_t s), (devPtr, s), \
    { r.ptr = handle(devPtr); r.stream = handle(s); r.flags |= record_flag::kAsync; })         \
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
  X(cudaLaunchKernel, "cudaLaunchKernel", Launch,                                              \
    (const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),              \
    (func, g, b, args, smem, s), NB_RT_LAUNCH_FILL(func, g, b, smem, s))                       \
  X(cudaLaunchKernel_ptsz, "cudaLaunchKernel_ptsz", Launch,                                    \
    (const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),              \
    (func, g, b, args, smem, s), NB_RT_LAUNCH_FILL(func, g, b, smem, s))                       \
  /* CUDA 13 kernel stubs call these instead of cudaLaunchKernel (host_runtime.h). */          \
  X(__cudaLaunchKernel, "cudaLaunchKernel", Launch,                                            \
    (cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),                \
    (k, g, b, args, smem, s),                                                                  \
    { if (r.name == 0) r.name = kernel_name(reinterpret_cast<CUkernel>(k));                    \
      NB_RT_LAUNCH_FILL(k, g, b, smem, s) })                                                   \
  X(__cudaLaunchKernel_ptsz, "cudaLaunchKernel_ptsz", Launch,                                  \
    (cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),                \
    (k, g, b, args, smem, s),                                                                  \
    { if (r.name == 0) r.name = kernel_name(reinterpret_cast<CUkernel>(k));                    \
      NB_RT_LAUNCH_FILL(k, g, b, smem, s) })                                                   \
  X(cudaLaunchKernelExC, "cudaLaunchKernelExC", Launch,                                        \
    (const cudaLaunchConfig_t* config, const void* func, void** args), (config, func, args),   \
    NB_RT_LAUNCH_FILL(func, config->gridDim, config->blockDim, config->dynamicSmemBytes,       \
                      config->stream))                                                         \
  X(cudaLaunchKernelExC_ptsz, "cudaLaunchKernelExC_ptsz", Launch,                              \
    (const cudaLaunchConfig_t* config, const void* func, void** args), (config, func, args),   \
    NB_RT_LAUNCH_FILL(func, config->gridDim, config->blockDim, config->dynamicSmemBytes,       \
                      config->stream))                                                         \
  X(cudaLaunchCooperativeKernel, "cudaLaunchCooperativeKernel", Launch,                        \
    (const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),              \
    (func, g, b, args, smem, s), NB_RT_LAUNCH_FILL(func, g, b, smem, s))                       \
  X(cudaLaunchCooperativeKernel_ptsz, "cudaLaunchCooperativeKernel_ptsz", Launch,              \
    (const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s),              \
    (func, g, b, args, smem, s), NB_RT_LAUNCH_FILL(func, g, b, smem, s))                       \
  X(cudaGraphLaunch, "cudaGraphLaunch", Graph, (cudaGraphExec_t e, cudaStream_t s), (e, s),    \
    { r.ptr = handle(e); r.stream = handle(s); })                                              \
  X(cudaGraphLaunch_ptsz, "cudaGraphLaunch_ptsz", Graph, (cudaGraphExec_t e, cudaStream_t s),  \
    (e, s), { r.ptr = handle(e); r.stream = handle(s); })                                      \
  /* ---- copies and sets ---- */                                                              \
  X(cudaMemcpy, "cudaMemcpy", Memcpy,                                                          \
    (void* dst, const void* src, size_t n, cudaMemcpyKind k), (dst, src, n, k),                \
    { copy(r, handle(dst), handle(src), n, rt_copy_kind(k), nullptr); })                       \
  X(cudaMemcpy_ptds, "cudaMemcpy_ptds", Memcpy,                                                \
    (void* dst, const void* src, size_t n, cudaMemcpyKind k), (dst, src, n, k),                \
    { copy(r, handle(dst), handle(src), n, rt_copy_kind(k), nullptr); })                       \
  X(cudaMemcpyAsync, "cudaMemcpyAsync", Memcpy,                                                \
    (void* dst, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s), (dst, src, n, k, s), \
    { copy(r, handle(dst), handle(src), n, rt_copy_kind(k), s); })                             \
  X(cudaMemcpyAsync_ptsz, "cudaMemcpyAsync_ptsz", Memcpy,                                      \
    (void* dst, const void* src, size_t n, cudaMemcpyKind k, cudaStream_t s), (dst, src, n, k, s), \
    { copy(r, handle(dst), handle(src), n, rt_copy_kind(k), s); })                             \
  X(cudaMemcpy2D, "cudaMemcpy2D", Memcpy,                                                      \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k),  \
    (dst, dp, src, sp, w, h, k), { copy(r, handle(dst), handle(src), w * h, rt_copy_kind(k), nullptr); }) \
  X(cudaMemcpy2D_ptds, "cudaMemcpy2D_ptds", Memcpy,                                            \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k),  \
    (dst, dp, src, sp, w, h, k), { copy(r, handle(dst), handle(src), w * h, rt_copy_kind(k), nullptr); }) \
  X(cudaMemcpy2DAsync, "cudaMemcpy2DAsync", Memcpy,                                            \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k,   \
     cudaStream_t s), (dst, dp, src, sp, w, h, k, s),                                          \
    { copy(r, handle(dst), handle(src), w * h, rt_copy_kind(k), s); })                         \
  X(cudaMemcpy2DAsync_ptsz, "cudaMemcpy2DAsync_ptsz", Memcpy,                                  \
    (void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h, cudaMemcpyKind k,   \
     cudaStream_t s), (dst, dp, src, sp, w, h, k, s),                                          \
    { copy(r, handle(dst), handle(src), w * h, rt_copy_kind(k), s); })                         \
  X(cudaMemcpyPeer, "cudaMemcpyPeer", Memcpy,                                                  \
    (void* dst, int dd, const void* src, int sd, size_t n), (dst, dd, src, sd, n),             \
    { copy(r, handle(dst), handle(src), n, CopyKind::Peer, nullptr); })                        \
  X(cudaMemcpyPeerAsync, "cudaMemcpyPeerAsync", Memcpy,                                        \
    (void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t s), (dst, dd, src, sd, n, s), \
    { copy(r, handle(dst), handle(src), n, CopyKind::Peer, s); })                              \
  X(cudaMemset, "cudaMemset", Memset, (void* p, int v, size_t n), (p, v, n),                   \
    { set(r, handle(p), n, nullptr); })                                                        \
  X(cudaMemset_ptds, "cudaMemset_ptds", Memset, (void* p, int v, size_t n), (p, v, n),         \
    { set(r, handle(p), n, nullptr); })                                                        \
  X(cudaMemsetAsync, "cudaMemsetAsync", Memset, (void* p, int v, size_t n, cudaStream_t s),    \
    (p, v, n, s), { set(r, handle(p), n, s); })                                                \
  X(cudaMemsetAsync_ptsz, "cudaMemsetAsync_ptsz", Memset,                                      \
    (void* p, int v, size_t n, cudaStream_t s), (p, v, n, s), { set(r, handle(p), n, s); })    \
  /* ---- synchronisation ---- */                                                              \
  X(cudaDeviceSynchronize, "cudaDeviceSynchronize", Sync, (), (), {})                          \
  X(cudaStreamSynchronize, "cudaStreamSynchronize", Sync, (cudaStream_t s), (s),               \
    { r.stream = handle(s); })                                                                 \
  X(cudaStreamSynchronize_ptsz, "cudaStreamSynchronize_ptsz", Sync, (cudaStream_t s), (s),     \
    { r.stream = handle(s); })                                                                 \
  X(cudaEventSynchronize, "cudaEventSynchronize", Sync, (cudaEvent_t e), (e),                  \
    { r.ptr = handle(e); })
// clang-format on
