/* A toy CUDA runtime of major RUNTIME_MAJOR: cudaMalloc hands back an
 * address that says which runtime answered. Built twice (soname
 * libcudart.so.12 with version node libcudart.so.12, and .13), to check that
 * a library linked against one runtime major still reaches that runtime
 * with the shim preloaded. */
#include <stddef.h>

int cudaMalloc(void** p, size_t n) {
  (void)n;
  *p = (void*)(0x100 * RUNTIME_MAJOR);
  return 0;
}
