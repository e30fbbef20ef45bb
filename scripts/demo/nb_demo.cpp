// nb-demo: a small CUDA program for trying nb without writing one. It reaches
// the driver the way CUDA runtimes do (dlopen libcuda.so.1, then
// cuGetProcAddress), allocates, copies, launches two kernels in a loop,
// frees all but one buffer (a deliberate leak for the memory snapshot), and
// checks the result on a real GPU. On the test doubles (test/fake_cuda) it
// runs the same calls; kernels there do nothing, so nothing is checked.
//
//   nb-demo [ITERATIONS] [--rate CALLS] [--seconds S] [--launches-only]
//
//   ITERATIONS       default 200; each makes 4 calls nb hooks (launch, allocate,
//                    launch, free)
//   --rate CALLS     pace the loop to CALLS hooked calls a second; 0 (default):
//                    flat out
//   --seconds S      loop for S seconds, whatever ITERATIONS says
//   --launches-only  one launch an iteration, nothing allocated: a pure launch
//                    loop
//
// It ends by printing what the loop did (iterations, hooked calls, seconds,
// and the whole run's launches, allocations and frees, which nb's table
// counts too) and, last, the CLOCK_MONOTONIC time at which main returns: nb
// writes its files at exit, and a harness times that from this line
// (bench/nbbench long-run).
#include <cuda.h>
#include <dlfcn.h>
#include <time.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct Options {
  long long iterations = 200;
  double rate = 0;     // hooked calls a second; 0: flat out
  double seconds = 0;  // > 0: loop this long instead of `iterations` times
  bool launches_only = false;
};

[[noreturn]] void usage(int rc) {
  std::fprintf(rc ? stderr : stdout,
               "usage: nb-demo [ITERATIONS] [--rate CALLS] [--seconds S] [--launches-only]\n");
  std::exit(rc);
}

double number(int argc, char** argv, int& i) {
  if (i + 1 >= argc) usage(2);
  char* end = nullptr;
  const double v = std::strtod(argv[++i], &end);
  if (end == argv[i] || *end != '\0' || !(v >= 0)) {
    std::fprintf(stderr, "nb-demo: %s wants a number >= 0, not '%s'\n", argv[i - 1], argv[i]);
    std::exit(2);
  }
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rate") == 0) {
      o.rate = number(argc, argv, i);
    } else if (std::strcmp(argv[i], "--seconds") == 0) {
      o.seconds = number(argc, argv, i);
    } else if (std::strcmp(argv[i], "--launches-only") == 0) {
      o.launches_only = true;
    } else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      usage(0);
    } else if (argv[i][0] == '-') {
      usage(2);
    } else {
      o.iterations = std::atoll(argv[i]);
    }
  }
  return o;
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
  const Options opt = parse(argc, argv);
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
  const uint64_t per_iteration = opt.launches_only ? 1 : 4;
  const double ns_per_iteration = opt.rate > 0 ? 1e9 * static_cast<double>(per_iteration) / opt.rate : 0;
  const uint64_t start = now_ns();
  const uint64_t stop = start + static_cast<uint64_t>(opt.seconds * 1e9);
  uint64_t done = 0;
  while (opt.seconds > 0 || done < static_cast<uint64_t>(opt.iterations)) {
    if (opt.seconds > 0 || opt.rate > 0) {
      // Each iteration has its own start on a fixed schedule, so a loop that
      // fell behind (a slow call) catches up instead of drifting. A busy
      // wait, because a sleep wakes tens of microseconds late, more than the
      // 4 us an iteration has at a million calls a second.
      const uint64_t due = start + static_cast<uint64_t>(static_cast<double>(done) * ns_per_iteration);
      uint64_t now = now_ns();
      if (opt.seconds > 0 && (now >= stop || due >= stop)) break;
      while (now < due) now = now_ns();
    }
    void* add_args[] = {&da, &db, &dc, &n};
    CU(launch(add, grid, 1, 1, block, 1, 1, 0, nullptr, add_args, nullptr));
    if (!opt.launches_only) {
      CUdeviceptr tmp;  // a short-lived buffer per iteration: the sawtooth
      CU(alloc(&tmp, bytes / 4));
      void* scale_args[] = {&dc, &s, &n};
      CU(launch(scale, grid, 1, 1, block, 1, 1, 0, nullptr, scale_args, nullptr));
      CU(free_(tmp));
    }
    ++done;
  }
  const double loop_s = static_cast<double>(now_ns() - start) / 1e9;
  CU(sync());
  CU(dtoh(c.data(), dc, bytes));
  CU(free_(da));
  CU(free_(db));
  CU(free_(dc));

  if (!fake) {
    for (int i = 0; i < n; ++i) {
      if (std::fabs(c[i] - 3.0f) > 1e-6f) {
        std::fprintf(stderr, "nb-demo: wrong result at %d: %f\n", i, c[i]);
        return 1;
      }
    }
  }
  const auto iterations = static_cast<unsigned long long>(done);
  if (fake) {
    std::printf("nb-demo: %llu iterations on the CUDA test doubles (no GPU): calls made, results not computed\n",
                iterations);
  } else {
    std::printf("nb-demo: %llu iterations on the GPU, result checked\n", iterations);
  }
  // The whole run's counts, set-up included (4 allocations, 3 frees), in the
  // names of nb's table rows.
  std::printf("nb-demo: %llu iterations, %llu hooked calls, loop %.4f s (whole run: cuLaunchKernel %llu, "
              "cuMemAlloc %llu, cuMemFree %llu)\n",
              iterations, iterations * per_iteration, loop_s, opt.launches_only ? iterations : 2 * iterations,
              (opt.launches_only ? 0 : iterations) + 4, (opt.launches_only ? 0 : iterations) + 3);
  // Flushed, so that the line is there even when the exit after it fails.
  std::printf("nb-demo: main returns at %llu\n", static_cast<unsigned long long>(now_ns()));
  std::fflush(stdout);
  return 0;
}
