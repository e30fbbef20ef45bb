// Join exactness with many threads on a real GPU: THREADS threads launch at
// once, each ITERS times, half of the time on its own stream and half on the
// legacy default stream that all threads share. Every call says where it
// came from: launch i of thread t has grid (i + 1, t + 1); its memset sets
// 4 * (t * ITERS + i + 1) bytes, its device-to-device copy as many. So a
// device record joined to the wrong host call shows it
// (nbb/checks.py threads_joined).
//
//   nvcc -O2 -arch=sm_90 -o threads_join threads_join.cu    (bench/nbbench carry)
//   ./threads_join [THREADS] [ITERS]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

__global__ void tagged(int* out) {
  if (threadIdx.x == 0 && out) out[blockIdx.x % 64] = blockIdx.y;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 8;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 200;
  const size_t max_bytes = 4ull * (static_cast<size_t>(threads) * iters + 1);
  int* scratch = nullptr;
  if (cudaMalloc(&scratch, 64 * sizeof(int)) != cudaSuccess) return 1;
  std::vector<std::thread> pool;
  std::vector<int> failed(threads, 0);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      cudaStream_t own;
      void *a = nullptr, *b = nullptr;
      if (cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess ||
          cudaMalloc(&a, max_bytes) != cudaSuccess || cudaMalloc(&b, max_bytes) != cudaSuccess) {
        failed[t] = 1;
        return;
      }
      for (int i = 0; i < iters; ++i) {
        cudaStream_t s = i % 2 ? own : cudaStream_t(0);
        const size_t bytes = 4ull * (static_cast<size_t>(t) * iters + i + 1);
        tagged<<<dim3(i + 1, t + 1), 32, 0, s>>>(scratch);
        cudaMemsetAsync(a, t, bytes, s);
        cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s);
      }
      if (cudaStreamSynchronize(own) != cudaSuccess) failed[t] = 1;
      cudaFree(a);
      cudaFree(b);
      cudaStreamDestroy(own);
    });
  }
  for (auto& th : pool) th.join();
  cudaDeviceSynchronize();
  int bad = 0;
  for (int f : failed) bad += f;
  const cudaError_t e = cudaGetLastError();
  std::printf("threads_join threads %d iters %d calls %d failed %d %s\n", threads, iters, threads * iters * 3, bad,
              cudaGetErrorString(e));
  return bad || e != cudaSuccess ? 2 : 0;
}
