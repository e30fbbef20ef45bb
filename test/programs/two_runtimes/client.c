/* A library linked against one runtime major (CLIENT_NAME returns what its
 * cudaMalloc answered). */
#include <stddef.h>

int cudaMalloc(void** p, size_t n);

void* CLIENT_NAME(void) {
  void* p = NULL;
  cudaMalloc(&p, 64);
  return p;
}
