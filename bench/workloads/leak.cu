// A real-CUDA leak for the memory check (bench/nbbench memory-check):
// allocates and frees in a loop, keeps one allocation made in leak_one().
// Built with -g so the snapshot's surviving segment can name this file's
// line.
#include <cuda_runtime.h>
#include <cstdio>

static void* g_kept = nullptr;

__attribute__((noinline)) static void leak_one() {
  cudaMalloc(&g_kept, 7 << 20);  // LEAK LINE
}

int main() {
  for (int i = 0; i < 8; ++i) {
    void* p = nullptr;
    cudaMalloc(&p, (1 + i) << 20);
    if (i == 3) leak_one();
    cudaFree(p);
  }
  cudaDeviceSynchronize();
  std::printf("kept %p\n", g_kept);
  return 0;
}
