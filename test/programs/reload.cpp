// dlopen / dlclose cycles, in a program that links no CUDA library:
//
//   reload driver N   N rounds of: dlopen libcuda.so.1, a context, an
//                     allocation, a memset and a free through dlsym'ed
//                     pointers, dlclose. Between rounds, the address range
//                     libcuda had is taken (when it was unloaded), so the
//                     next dlopen puts it elsewhere: pointers kept from the
//                     last round would point at nothing.
//   reload lib N      N rounds of dlopen / call / dlclose of libreload_lib.so,
//                     a library with its own runtime (cuGetProcAddress).
//
// Prints one line per round: "round R unloaded U moved M".
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

template <typename Fn>
Fn sym(void* h, const char* name) {
  auto f = reinterpret_cast<Fn>(dlsym(h, name));
  if (f == nullptr) {
    std::fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
    std::exit(3);
  }
  return f;
}

#define CALL(expr)                                               \
  do {                                                           \
    if ((expr) != CUDA_SUCCESS) {                                \
      std::fprintf(stderr, "%s failed\n", #expr);                \
      std::exit(4);                                              \
    }                                                            \
  } while (0)

// One round on the driver; returns libcuda's base address.
void* driver_round() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    std::exit(3);
  }
  auto init = sym<decltype(&cuInit)>(h, "cuInit");
  CALL(init(0));
  CUdevice dev;
  CALL(sym<decltype(&cuDeviceGet)>(h, "cuDeviceGet")(&dev, 0));
  CUcontext ctx;
  CALL(sym<decltype(&cuDevicePrimaryCtxRetain)>(h, "cuDevicePrimaryCtxRetain")(&ctx, dev));
  CALL(sym<decltype(&cuCtxSetCurrent)>(h, "cuCtxSetCurrent")(ctx));
  CUdeviceptr p;
  CALL(sym<decltype(&cuMemAlloc_v2)>(h, "cuMemAlloc_v2")(&p, 1 << 20));
  CALL(sym<decltype(&cuMemsetD8_v2)>(h, "cuMemsetD8_v2")(p, 1, 1 << 20));
  CALL(sym<decltype(&cuMemFree_v2)>(h, "cuMemFree_v2")(p));
  CALL(sym<decltype(&cuCtxSetCurrent)>(h, "cuCtxSetCurrent")(nullptr));
  CALL(sym<decltype(&cuDevicePrimaryCtxRelease_v2)>(h, "cuDevicePrimaryCtxRelease_v2")(dev));
  // From the handle: with nb preloaded, dlsym's answers are nb's.
  link_map* lm = nullptr;
  void* base = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr ? reinterpret_cast<void*>(lm->l_addr) : nullptr;
  dlclose(h);
  return base;
}

bool loaded(const char* name) {
  void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string mode = argv[1];
  const int rounds = std::atoi(argv[2]);
  void* last_base = nullptr;
  for (int r = 0; r < rounds; ++r) {
    void* base = nullptr;
    if (mode == "driver") {
      base = driver_round();
    } else {
      void* lib = dlopen("libreload_lib.so", RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) {
        std::fprintf(stderr, "dlopen: %s\n", dlerror());
        return 3;
      }
      const int rc = sym<int (*)(void**)>(lib, "reload_lib_work")(&base);
      if (rc != 0) {
        std::fprintf(stderr, "reload_lib_work: %d\n", rc);
        return 4;
      }
      dlclose(lib);
    }
    const bool unloaded = !loaded("libcuda.so.1");
    // Take the range the driver had, so that it loads elsewhere next time.
    if (unloaded && base != nullptr) {
      // Another thread's passing mapping (nb's collector and writer allocate
      // too) may lie there for a moment: try again for up to 2 s.
      void* got = MAP_FAILED;
      for (int tries = 0; tries < 400; ++tries) {
        got = mmap(base, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (got != MAP_FAILED && got != base) munmap(got, 4096);  // a kernel that took it as a hint
        if (got != MAP_FAILED || errno != EEXIST) break;
        usleep(5000);
      }
      if (got != base) {
        std::fprintf(stderr, "could not take %p (%s)\n", base, std::strerror(errno));
        if (std::getenv("RELOAD_MAPS")) std::system(("grep 7f /proc/" + std::to_string(getpid()) + "/maps >&2").c_str());
      }
    }
    std::printf("round %d unloaded %d moved %d\n", r, unloaded ? 1 : 0,
                last_base != nullptr && base != nullptr && base != last_base ? 1 : 0);
    last_base = base;
  }
  return 0;
}
