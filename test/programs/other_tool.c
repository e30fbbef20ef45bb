/* Another LD_PRELOAD tool in the same process as nb: it
 * interposes cuLaunchKernel and cuMemAlloc_v2 the way simple CUDA
 * interposers do (unversioned, forwarding through RTLD_NEXT), counts them,
 * and prints "other tool: launches L allocs A" at exit. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>

static atomic_long g_launches, g_allocs;

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void** params, void** extra) {
  atomic_fetch_add(&g_launches, 1);
  CUresult (*next)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                   void**) = dlsym(RTLD_NEXT, "cuLaunchKernel");
  return next ? next(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t size) {
  atomic_fetch_add(&g_allocs, 1);
  CUresult (*next)(CUdeviceptr*, size_t) = dlsym(RTLD_NEXT, "cuMemAlloc_v2");
  return next ? next(p, size) : CUDA_ERROR_NOT_INITIALIZED;
}

__attribute__((destructor)) static void report(void) {
  fprintf(stderr, "other tool: launches %ld allocs %ld\n", atomic_load(&g_launches), atomic_load(&g_allocs));
}
