// A program that never touches CUDA: with the shim preloaded it must behave
// exactly as without it (no files, no output, same exit status).
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

int main(int argc, char** argv) {
  // dlsym with every pseudo-handle goes through the shim's entry point.
  void* p = dlsym(RTLD_DEFAULT, "printf");
  void* q = dlsym(RTLD_NEXT, "puts");
  std::printf("no cuda here %d %d\n", p != nullptr, q != nullptr);
  return argc > 1 ? std::atoi(argv[1]) : 0;
}
