// A program that never touches CUDA: with the shim preloaded it must behave
// exactly as without it (no files, no output, same exit status).
//
//   nocuda [STATUS]       exits with STATUS
//   nocuda nodriver       no libcuda or libcudart is loaded, yet it looks
//                         cuInit and cudaMalloc up in the global scope (as
//                         code probing for CUDA does) and calls them if found:
//                         with nb they are nb's hooks, which must fail the
//                         way a missing driver does, not crash
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "nodriver") == 0) {
    auto init = reinterpret_cast<decltype(&cuInit)>(dlsym(RTLD_DEFAULT, "cuInit"));
    auto alloc = reinterpret_cast<decltype(&cudaMalloc)>(dlsym(RTLD_DEFAULT, "cudaMalloc"));
    void* p = nullptr;
    const int init_rc = init ? init(0) : -1;
    const int alloc_rc = alloc ? alloc(&p, 1 << 20) : -1;
    std::printf("cuInit %d cudaMalloc %d\n", init_rc, alloc_rc);
    return 0;
  }
  // dlsym with every pseudo-handle goes through the shim's entry point.
  void* p = dlsym(RTLD_DEFAULT, "printf");
  void* q = dlsym(RTLD_NEXT, "puts");
  std::printf("no cuda here %d %d\n", p != nullptr, q != nullptr);
  return argc > 1 ? std::atoi(argv[1]) : 0;
}
