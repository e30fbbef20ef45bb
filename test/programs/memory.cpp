// Allocates and frees device memory through the driver and the runtime, leaks
// one allocation on purpose, provokes one out-of-memory failure, maps virtual
// memory, and writes what it did to the manifest (argv[1]). Run with
// FAKE_CUDA_MEM_BYTES small enough for the OOM request to fail.
#include <cstring>
#include <vector>

#include "fake_cuda.h"
#include "manifest.h"

namespace {

void* g_leak = nullptr;

void leak_one() {
  // The line a leak report must point at.
  CHECK_CU(cudaMalloc(&g_leak, 3 << 20));
  manifest::call("cudaMalloc");
  manifest::alloc(reinterpret_cast<unsigned long long>(g_leak), 3 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  manifest::open(argv[1]);

  // Runtime allocations, several sizes; all but one freed.
  std::vector<void*> ptrs;
  for (size_t size : {256u, 4096u, 1u << 20, 5u << 20}) {
    void* p = nullptr;
    CHECK_CU(cudaMalloc(&p, size));
    manifest::call("cudaMalloc");
    manifest::alloc(reinterpret_cast<unsigned long long>(p), size);
    ptrs.push_back(p);
  }
  leak_one();
  for (void* p : ptrs) {
    CHECK_CU(cudaFree(p));
    manifest::call("cudaFree");
    manifest::free(reinterpret_cast<unsigned long long>(p));
  }

  // Stream-ordered allocations.
  cudaStream_t s;
  CHECK_CU(cudaStreamCreate(&s));
  void* a = nullptr;
  CHECK_CU(cudaMallocAsync(&a, 65536, s));
  manifest::call("cudaMallocAsync");
  manifest::alloc(reinterpret_cast<unsigned long long>(a), 65536);
  CHECK_CU(cudaFreeAsync(a, s));
  manifest::call("cudaFreeAsync");
  manifest::free(reinterpret_cast<unsigned long long>(a));
  CHECK_CU(cudaStreamSynchronize(s));
  manifest::call("cudaStreamSynchronize");

  // Driver allocations: plain, pitched, managed, async.
  CUdeviceptr d1, d2, d3, d4;
  size_t pitch = 0;
  CHECK_CU(cuMemAlloc_v2(&d1, 12345));
  manifest::call("cuMemAlloc_v2");
  manifest::alloc(d1, 12345);
  CHECK_CU(cuMemAllocPitch_v2(&d2, &pitch, 1000, 10, 4));
  manifest::call("cuMemAllocPitch_v2");
  manifest::alloc(d2, pitch * 10);
  CHECK_CU(cuMemAllocManaged(&d3, 2048, CU_MEM_ATTACH_GLOBAL));
  manifest::call("cuMemAllocManaged");
  manifest::alloc(d3, 2048);
  CHECK_CU(cuMemAllocAsync(&d4, 777, nullptr));
  manifest::call("cuMemAllocAsync");
  manifest::alloc(d4, 777);
  for (CUdeviceptr d : {d1, d2, d3}) {
    CHECK_CU(cuMemFree_v2(d));
    manifest::call("cuMemFree_v2");
    manifest::free(d);
  }
  CHECK_CU(cuMemFreeAsync(d4, nullptr));
  manifest::call("cuMemFreeAsync");
  manifest::free(d4);

  // Virtual memory: create, reserve, map, unmap, release.
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUmemGenericAllocationHandle h;
  CHECK_CU(cuMemCreate(&h, gran, &prop, 0));
  manifest::call("cuMemCreate");
  CUdeviceptr va;
  CHECK_CU(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
  CHECK_CU(cuMemMap(va, gran, 0, h, 0));
  manifest::call("cuMemMap");
  CHECK_CU(cuMemUnmap(va, gran));
  manifest::call("cuMemUnmap");
  CHECK_CU(cuMemRelease(h));
  manifest::call("cuMemRelease");
  CHECK_CU(cuMemAddressFree(va, 4 * gran));

  // Out of memory: more than the fake device has.
  void* huge = nullptr;
  const size_t too_much = size_t(1) << 40;
  if (cudaMalloc(&huge, too_much) != cudaErrorMemoryAllocation) {
    std::fprintf(stderr, "expected an out-of-memory failure\n");
    return 3;
  }
  manifest::call("cudaMalloc");
  manifest::oom(too_much);

  manifest::close();
  return 0;  // g_leak stays allocated
}
