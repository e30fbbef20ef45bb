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

#include "fake_twins.h"

#include <initializer_list>
#include <string>

extern "C" {

// ---------------------------------------------------------------------------
// Per-thread-default-stream exports of the fake driver (libcuda.so.1) and
// runtime (libcudart.so.13), from the table in fake_twins.h. Parameter lists
// are identical to the legacy functions in cuda.h / cuda_runtime_api.h; the
// table in fake_driver_procaddr.cpp checks each driver twin against its
// PFN_*_ptsz/_ptds typedef in cudaTypedefs.h, and ptds_decl_check.cpp every
// twin against the toolkit's own declarations.
// ---------------------------------------------------------------------------
#define FAKE_DECLARE_DRIVER_TWIN(sym, ptsym, base, since, ptsince, pt, params, call) CUresult CUDAAPI ptsym params;
#define FAKE_DECLARE_RUNTIME_TWIN(sym, ptsym, params, call) cudaError_t CUDARTAPI ptsym params;
FAKE_DRIVER_TWINS(FAKE_DECLARE_DRIVER_TWIN)
FAKE_RUNTIME_TWINS(FAKE_DECLARE_RUNTIME_TWIN)
#undef FAKE_DECLARE_DRIVER_TWIN
#undef FAKE_DECLARE_RUNTIME_TWIN

// Test hook of the fake driver: how many times the exported function with this
// exact name (e.g. "cuMemAlloc_v2", "cuLaunchKernel_ptsz") has been entered in
// this process, whatever path reached it (symbol, dlsym, cuGetProcAddress).
// Lets a test check that one runtime call, or one call through an interposer,
// reached the driver exactly once.
unsigned long long fakeCudaCallCount(const char* exportedName);

// nvcc-internal entry points (crt/device_functions.h declares them for nvcc
// only). A CUDA 13 kernel stub does: __cudaGetKernel(&k, stub) once, then
// __cudaLaunchKernel(k, grid, block, args, shmem, stream) per launch (its
// _ptsz twin is declared above).
cudaError_t CUDARTAPI __cudaGetKernel(cudaKernel_t* kernel, const void* hostStub);
cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
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
