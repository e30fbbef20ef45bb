// nb-demo: a small CUDA program for trying nb without writing one. It reaches
// the driver the way CUDA runtimes do (dlopen libcuda.so.1, then
// cuGetProcAddress), allocates, copies, launches two kernels in a loop,
// frees all but one buffer (a deliberate leak for the memory snapshot), and
// checks the result on a real GPU. On the test doubles (test/fake_cuda) it
// runs the same calls; kernels there do nothing, so nothing is checked.
//
//   nb-demo [ITERATIONS]      default 200
#include <cuda.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// PTX of two kernels (nvcc -ptx -arch=compute_75 of vector_add and scale;
// the driver compiles it for whatever GPU is there).
const char* const kPtx =
    ".version 9.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    "	// .globl	vector_add\n"
    "\n"
    ".visible .entry vector_add(\n"
    "	.param .u64 vector_add_param_0,\n"
    "	.param .u64 vector_add_param_1,\n"
    "	.param .u64 vector_add_param_2,\n"
    "	.param .u32 vector_add_param_3\n"
    ")\n"
    "{\n"
    "	.reg .pred 	%p<2>;\n"
    "	.reg .f32 	%f<4>;\n"
    "	.reg .b32 	%r<6>;\n"
    "	.reg .b64 	%rd<11>;\n"
    "\n"
    "\n"
    "	ld.param.u64 	%rd1, [vector_add_param_0];\n"
    "	ld.param.u64 	%rd2, [vector_add_param_1];\n"
    "	ld.param.u64 	%rd3, [vector_add_param_2];\n"
    "	ld.param.u32 	%r2, [vector_add_param_3];\n"
    "	mov.u32 	%r3, %ctaid.x;\n"
    "	mov.u32 	%r4, %ntid.x;\n"
    "	mov.u32 	%r5, %tid.x;\n"
    "	mad.lo.s32 	%r1, %r3, %r4, %r5;\n"
    "	setp.ge.s32 	%p1, %r1, %r2;\n"
    "	@%p1 bra 	$L__BB0_2;\n"
    "\n"
    "	cvta.to.global.u64 	%rd4, %rd1;\n"
    "	mul.wide.s32 	%rd5, %r1, 4;\n"
    "	add.s64 	%rd6, %rd4, %rd5;\n"
    "	cvta.to.global.u64 	%rd7, %rd2;\n"
    "	add.s64 	%rd8, %rd7, %rd5;\n"
    "	ld.global.f32 	%f1, [%rd8];\n"
    "	ld.global.f32 	%f2, [%rd6];\n"
    "	add.f32 	%f3, %f2, %f1;\n"
    "	cvta.to.global.u64 	%rd9, %rd3;\n"
    "	add.s64 	%rd10, %rd9, %rd5;\n"
    "	st.global.f32 	[%rd10], %f3;\n"
    "\n"
    "$L__BB0_2:\n"
    "	ret;\n"
    "\n"
    "}\n"
    "	// .globl	scale\n"
    ".visible .entry scale(\n"
    "	.param .u64 scale_param_0,\n"
    "	.param .f32 scale_param_1,\n"
    "	.param .u32 scale_param_2\n"
    ")\n"
    "{\n"
    "	.reg .pred 	%p<2>;\n"
    "	.reg .f32 	%f<4>;\n"
    "	.reg .b32 	%r<6>;\n"
    "	.reg .b64 	%rd<5>;\n"
    "\n"
    "\n"
    "	ld.param.u64 	%rd1, [scale_param_0];\n"
    "	ld.param.f32 	%f1, [scale_param_1];\n"
    "	ld.param.u32 	%r2, [scale_param_2];\n"
    "	mov.u32 	%r3, %ctaid.x;\n"
    "	mov.u32 	%r4, %ntid.x;\n"
    "	mov.u32 	%r5, %tid.x;\n"
    "	mad.lo.s32 	%r1, %r3, %r4, %r5;\n"
    "	setp.ge.s32 	%p1, %r1, %r2;\n"
    "	@%p1 bra 	$L__BB1_2;\n"
    "\n"
    "	cvta.to.global.u64 	%rd2, %rd1;\n"
    "	mul.wide.s32 	%rd3, %r1, 4;\n"
    "	add.s64 	%rd4, %rd2, %rd3;\n"
    "	ld.global.f32 	%f2, [%rd4];\n"
    "	mul.f32 	%f3, %f2, %f1;\n"
    "	st.global.f32 	[%rd4], %f3;\n"
    "\n"
    "$L__BB1_2:\n"
    "	ret;\n"
    "\n"
    "}\n"
;

const char* const kFakeImage = "fake-module\nvector_add\nscale\n";

void* g_driver = nullptr;
decltype(&cuGetProcAddress_v2) g_get = nullptr;

template <typename Fn>
Fn get(const char* name, int version = 12000) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status;
  if (g_get(name, &p, version, 0, &status) != CUDA_SUCCESS || p == nullptr) {
    std::fprintf(stderr, "nb-demo: the driver has no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<Fn>(p);
}

#define CU(call)                                                                \
  do {                                                                          \
    const CUresult rc_ = (call);                                                \
    if (rc_ != CUDA_SUCCESS) {                                                  \
      std::fprintf(stderr, "nb-demo: %s failed with %d\n", #call, int(rc_));    \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  g_driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (g_driver == nullptr) {
    std::fprintf(stderr, "nb-demo: no CUDA driver (libcuda.so.1): %s\n", dlerror());
    return 1;
  }
  const bool fake = dlsym(g_driver, "fakeCudaCallCount") != nullptr;
  g_get = reinterpret_cast<decltype(g_get)>(dlsym(g_driver, "cuGetProcAddress_v2"));
  if (g_get == nullptr) {
    std::fprintf(stderr, "nb-demo: the driver is older than CUDA 12\n");
    return 1;
  }
  CU(get<decltype(&cuInit)>("cuInit")(0));
  CUdevice dev;
  CU(get<decltype(&cuDeviceGet)>("cuDeviceGet")(&dev, 0));
  CUcontext ctx;
  CU(get<decltype(&cuDevicePrimaryCtxRetain)>("cuDevicePrimaryCtxRetain")(&ctx, dev));
  CU(get<decltype(&cuCtxSetCurrent)>("cuCtxSetCurrent")(ctx));

  CUmodule mod;
  CU(get<decltype(&cuModuleLoadData)>("cuModuleLoadData")(&mod, fake ? kFakeImage : kPtx));
  CUfunction add, scale;
  const auto get_function = get<decltype(&cuModuleGetFunction)>("cuModuleGetFunction");
  CU(get_function(&add, mod, "vector_add"));
  CU(get_function(&scale, mod, "scale"));

  const auto alloc = get<decltype(&cuMemAlloc_v2)>("cuMemAlloc");
  const auto free_ = get<decltype(&cuMemFree_v2)>("cuMemFree");
  const auto htod = get<decltype(&cuMemcpyHtoD_v2)>("cuMemcpyHtoD");
  const auto dtoh = get<decltype(&cuMemcpyDtoH_v2)>("cuMemcpyDtoH");
  const auto memset32 = get<decltype(&cuMemsetD32Async)>("cuMemsetD32Async");
  const auto launch = get<decltype(&cuLaunchKernel)>("cuLaunchKernel");
  const auto sync = get<decltype(&cuCtxSynchronize)>("cuCtxSynchronize", 2000);

  int n = 1 << 20;
  const size_t bytes = sizeof(float) * static_cast<size_t>(n);
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 0.0f);
  CUdeviceptr da, db, dc, scratch;
  CU(alloc(&da, bytes));
  CU(alloc(&db, bytes));
  CU(alloc(&dc, bytes));
  CU(alloc(&scratch, 4 << 20));  // never freed: the leak the snapshot shows
  CU(htod(da, a.data(), bytes));
  CU(htod(db, b.data(), bytes));
  CU(memset32(dc, 0, static_cast<size_t>(n), nullptr));

  const unsigned block = 256, grid = (static_cast<unsigned>(n) + block - 1) / block;
  float s = 1.0f;
  for (int i = 0; i < iterations; ++i) {
    void* add_args[] = {&da, &db, &dc, &n};
    CU(launch(add, grid, 1, 1, block, 1, 1, 0, nullptr, add_args, nullptr));
    CUdeviceptr tmp;  // a short-lived buffer per iteration: the sawtooth
    CU(alloc(&tmp, bytes / 4));
    void* scale_args[] = {&dc, &s, &n};
    CU(launch(scale, grid, 1, 1, block, 1, 1, 0, nullptr, scale_args, nullptr));
    CU(free_(tmp));
  }
  CU(sync());
  CU(dtoh(c.data(), dc, bytes));
  CU(free_(da));
  CU(free_(db));
  CU(free_(dc));

  if (fake) {
    std::printf("nb-demo: %d iterations on the CUDA test doubles (no GPU): calls made, results not computed\n",
                iterations);
    return 0;
  }
  for (int i = 0; i < n; ++i) {
    if (std::fabs(c[i] - 3.0f) > 1e-6f) {
      std::fprintf(stderr, "nb-demo: wrong result at %d: %f\n", i, c[i]);
      return 1;
    }
  }
  std::printf("nb-demo: %d iterations on the GPU, result checked\n", iterations);
  return 0;
}
