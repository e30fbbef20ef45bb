// C++ exceptions in a program whose allocations nb takes stacks of: the
// unwinder nb loads for stacks (libunwind, privately) must not become the
// program's. Prints how many exceptions were caught and which library
// answers for _Unwind_RaiseException and unw_backtrace in the global scope.
// Then the same inside a library it dlopens (libthrowing_lib.so): caught in
// the library, and thrown out of it into the program.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <stdexcept>

int main() {
  void* p = nullptr;
  if (cudaMalloc(&p, 1 << 20) != cudaSuccess) return 1;  // nb starts, takes a stack
  int caught = 0;
  for (int i = 0; i < 1000; ++i) {
    try {
      throw std::runtime_error("expected");
    } catch (const std::exception&) {
      ++caught;
    }
  }
  Dl_info info{};
  void* raise = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
  std::printf("caught %d\n", caught);
  if (void* lib = dlopen("libthrowing_lib.so", RTLD_NOW | RTLD_LOCAL)) {
    auto inside = reinterpret_cast<int (*)(int)>(dlsym(lib, "throwing_lib_catch_inside"));
    auto out = reinterpret_cast<void (*)()>(dlsym(lib, "_Z22throwing_lib_throw_outv"));
    int from_lib = 0;
    for (int i = 0; out && i < 100; ++i) {
      try {
        out();
      } catch (const std::logic_error&) {
        ++from_lib;
      }
    }
    std::printf("library caught %d, program caught %d from it\n", inside ? inside(1000) : -1, from_lib);
  } else {
    std::printf("library not loaded: %s\n", dlerror());
  }
  std::printf("unwinder %s\n", raise && dladdr(raise, &info) && info.dli_fname ? info.dli_fname : "none");
  std::printf("unw_backtrace %s\n", dlsym(RTLD_DEFAULT, "unw_backtrace") ? "global" : "hidden");
  cudaFree(p);
  return 0;
}
