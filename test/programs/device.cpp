// Device work of every kind the device tracer must see, each joined to the
// host call that caused it: kernels on two streams and the per-thread
// stream, a launch with cuLaunchKernelEx, a graph of three kernel nodes,
// copies and sets through the driver and the runtime, runtime launches.
// Writes one "device" line per expected device record to the manifest:
//   device  KIND  NAME  HOSTCALL       (KIND = kernel | memcpy | memset)
#include <cstring>
#include <vector>

#include "fake_cuda.h"
#include "manifest.h"

namespace {

void device(const char* kind, const std::string& name, const char* host_call) {
  std::lock_guard<std::mutex> lock(manifest::mu());
  std::fprintf(manifest::file(), "device\t%s\t%s\t%s\n", kind, name.c_str(), host_call);
}

void stub_r() {}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  manifest::open(argv[1]);
  CHECK_CU(fake_cuda::use_primary_context());
  CUmodule mod;
  // Mangled, as real modules name them: the trace shows them demangled.
  const std::string image = fake_cuda::module_image({"_Z7kernelAPf", "_Z7kernelBPfi", "node_kernel"});
  CHECK_CU(cuModuleLoadData(&mod, image.c_str()));
  CUfunction a, b, n;
  CHECK_CU(cuModuleGetFunction(&a, mod, "_Z7kernelAPf"));
  CHECK_CU(cuModuleGetFunction(&b, mod, "_Z7kernelBPfi"));
  CHECK_CU(cuModuleGetFunction(&n, mod, "node_kernel"));
  CUstream s1, s2;
  CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));

  for (int i = 0; i < 3; ++i) {
    CHECK_CU(cuLaunchKernel(a, 8, 1, 1, 128, 1, 1, 0, s1, nullptr, nullptr));
    device("kernel", "kernelA(float*)", "cuLaunchKernel");
  }
  for (int i = 0; i < 2; ++i) {
    CHECK_CU(cuLaunchKernel(b, 4, 4, 1, 32, 4, 1, 1024, s2, nullptr, nullptr));
    device("kernel", "kernelB(float*, int)", "cuLaunchKernel");
  }
  CHECK_CU(cuLaunchKernel_ptsz(a, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr));
  device("kernel", "kernelA(float*)", "cuLaunchKernel_ptsz");
  CUlaunchConfig cfg = {};
  cfg.gridDimX = 2;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 256;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s1;
  CHECK_CU(cuLaunchKernelEx(&cfg, b, nullptr, nullptr));
  device("kernel", "kernelB(float*, int)", "cuLaunchKernelEx");

  // A graph of three kernel nodes in a chain: three kernel records, all
  // caused by the one cuGraphLaunch.
  CUgraph g;
  CHECK_CU(cuGraphCreate(&g, 0));
  CUgraphNode prev = nullptr;
  for (int i = 0; i < 3; ++i) {
    CUDA_KERNEL_NODE_PARAMS p = {};
    p.func = n;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 32;
    p.blockDimY = p.blockDimZ = 1;
    CUgraphNode node;
    CHECK_CU(cuGraphAddKernelNode_v2(&node, g, prev ? &prev : nullptr, prev ? 1 : 0, &p));
    prev = node;
    device("kernel", "node_kernel", "cuGraphLaunch");
  }
  CUgraphExec exec;
  CHECK_CU(cuGraphInstantiateWithFlags(&exec, g, 0));
  CHECK_CU(cuGraphLaunch(exec, s1));

  // Copies and sets through the driver.
  const size_t bytes = 1 << 20;
  std::vector<char> host(bytes, 1);
  CUdeviceptr d1, d2;
  CHECK_CU(cuMemAlloc_v2(&d1, bytes));
  CHECK_CU(cuMemAlloc_v2(&d2, bytes));
  CHECK_CU(cuMemcpyHtoD_v2(d1, host.data(), bytes));
  device("memcpy", "Memcpy HtoD (Pageable -> Device)", "cuMemcpyHtoD_v2");
  CHECK_CU(cuMemcpyDtoDAsync_v2(d2, d1, bytes, s2));
  device("memcpy", "Memcpy DtoD (Device -> Device)", "cuMemcpyDtoDAsync_v2");
  CHECK_CU(cuMemsetD32Async(d2, 0, bytes / 4, s1));
  device("memset", "Memset (Device)", "cuMemsetD32Async");
  CHECK_CU(cuMemcpyDtoH_v2(host.data(), d2, bytes));
  device("memcpy", "Memcpy DtoH (Device -> Pageable)", "cuMemcpyDtoH_v2");

  // Through the runtime: recorded once, at the runtime level.
  CHECK_CU(fakeRegisterKernel(reinterpret_cast<const void*>(&stub_r), "_Z7kernelRv"));
  for (int i = 0; i < 2; ++i) {
    CHECK_CU(cudaLaunchKernel(reinterpret_cast<const void*>(&stub_r), dim3(1), dim3(32), nullptr, 0, nullptr));
    device("kernel", "kernelR()", "cudaLaunchKernel");
  }
  CHECK_CU(cudaMemsetAsync(reinterpret_cast<void*>(d1), 0, 4096, nullptr));
  device("memset", "Memset (Device)", "cudaMemsetAsync");
  CHECK_CU(cudaMemcpyAsync(host.data(), reinterpret_cast<void*>(d1), 4096, cudaMemcpyDeviceToHost, nullptr));
  device("memcpy", "Memcpy DtoH (Device -> Pageable)", "cudaMemcpyAsync");
  CHECK_CU(cudaDeviceSynchronize());

  CHECK_CU(cuMemFree_v2(d1));
  CHECK_CU(cuMemFree_v2(d2));
  manifest::close();
  return 0;
}
