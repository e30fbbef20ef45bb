/* The three memory behaviours `nbprof report` tells apart, natively on the
 * fake CUDA runtime, for test/integration/test_report.cpp (mem_patterns.py
 * does the same in Python):
 *
 *   mem_patterns leak           each step keeps one more buffer, never freed
 *                               by the program itself
 *   mem_patterns sawtooth       each step allocates its buffers and frees
 *                               them before it ends: a steady baseline
 *   mem_patterns fragmentation  steps draw from a memory pool that keeps
 *                               what is freed; then a request larger than
 *                               the device's free bytes fails (run it with
 *                               FAKE_CUDA_MEM_BYTES=67108864, 64 MiB)
 *
 * Every step ends with cudaDeviceSynchronize, so NB_STEP=sync cuts the run
 * into steps there. The weights are allocated before the first step. What
 * the program still holds when main returns (the weights; the kept
 * buffers) is freed by an atexit handler, after the program's end, as a
 * C++ program's static destructors would. Lines the test looks for are
 * marked with "@name". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#define MiB ((size_t)1 << 20)
enum { STEPS = 8, POOL_BLOCKS = 6 };
static const size_t kWeights = 8 * MiB, kActivations = 4 * MiB, kLeaked = 1 * MiB, kBigRequest = 60 * MiB;

static void* weights;
static void* kept[STEPS]; /* the leak: one buffer per step */
static int kept_count;

static void check(cudaError_t rc, cudaError_t expected, int line) {
  if (rc != expected) {
    fprintf(stderr, "mem_patterns.c:%d: CUDA error %d (expected %d)\n", line, (int)rc, (int)expected);
    exit(1);
  }
}
#define CHECK(call) check((call), cudaSuccess, __LINE__)

static void release_at_exit(void) {
  for (int i = 0; i < kept_count; ++i) CHECK(cudaFree(kept[i]));
  CHECK(cudaFree(weights));
}

__attribute__((noinline)) static void leak_step(void) {
  void* act = NULL;
  CHECK(cudaMalloc(&act, kActivations)); /* @activations */
  CHECK(cudaMalloc(&kept[kept_count], kLeaked)); /* @leak */
  ++kept_count;
  CHECK(cudaFree(act));
}

__attribute__((noinline)) static void sawtooth_step(void) {
  void* bufs[3];
  for (int i = 0; i < 3; ++i) CHECK(cudaMalloc(&bufs[i], kActivations + (size_t)i * MiB)); /* @sawtooth */
  for (int i = 2; i >= 0; --i) CHECK(cudaFree(bufs[i]));
}

/* The device's default pool keeps every freed byte (release threshold at its
 * maximum), as PyTorch's cudaMallocAsync backend sets it. */
static void keep_freed_memory(void) {
  cudaMemPool_t pool;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  cuuint64_t threshold = UINT64_MAX;
  if (cuMemPoolSetAttribute((CUmemoryPool)pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) != CUDA_SUCCESS) {
    fprintf(stderr, "mem_patterns.c: cuMemPoolSetAttribute failed\n");
    exit(1);
  }
}

__attribute__((noinline)) static void pool_step(void) {
  void* blocks[POOL_BLOCKS];
  for (int i = 0; i < POOL_BLOCKS; ++i) CHECK(cudaMallocAsync(&blocks[i], 4 * MiB, 0)); /* @pool */
  for (int i = 0; i < POOL_BLOCKS; ++i) CHECK(cudaFreeAsync(blocks[i], 0));
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "sawtooth";
  const int leak = strcmp(mode, "leak") == 0, frag = strcmp(mode, "fragmentation") == 0;
  if (!leak && !frag && strcmp(mode, "sawtooth") != 0) {
    fprintf(stderr, "usage: mem_patterns leak|sawtooth|fragmentation\n");
    return 2;
  }
  CHECK(cudaMalloc(&weights, kWeights)); /* @weights */
  atexit(release_at_exit);
  if (frag) keep_freed_memory();
  for (int step = 0; step < STEPS; ++step) {
    if (leak) leak_step();
    else if (frag) pool_step();
    else sawtooth_step();
    CHECK(cudaDeviceSynchronize());
  }
  if (frag) {
    void* big = NULL;
    check(cudaMallocAsync(&big, kBigRequest, 0), cudaErrorMemoryAllocation, __LINE__); /* @oom */
    CHECK(cudaDeviceSynchronize());
  }
  return 0;
}
