// A plain CUDA C++ program as nvcc builds it by default (static CUDA
// runtime: no cudaMalloc or launch symbol for LD_PRELOAD to catch) that uses
// cuBLAS (its own static runtime, launching through the driver): nb must see
// and join every kernel anyway. Prints how many kernels it launched itself
// and how many GEMMs it asked cuBLAS for.
//
//   nvcc -O2 -arch=sm_90 -o cublas_static cublas_static.cu -lcublas    (bench/nbbench carry)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

__global__ void fill(float* x, float v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

__global__ void relu(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] < 0) x[i] = 0;
}

int main() {
  const int n = 1024;
  const size_t bytes = sizeof(float) * n * n;
  float *a, *b, *c;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  cudaMalloc(&c, bytes);
  cublasHandle_t h;
  cublasCreate(&h);
  const int blocks = (n * n + 255) / 256;
  int own = 0, gemms = 0;
  fill<<<blocks, 256>>>(a, 1.0f, n * n); ++own;
  fill<<<blocks, 256>>>(b, 0.5f, n * n); ++own;
  const float alpha = 1.0f, beta = 0.0f;
  for (int i = 0; i < 20; ++i) {
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n); ++gemms;
    relu<<<blocks, 256>>>(c, n * n); ++own;
  }
  std::vector<float> host(n * n);
  cudaMemcpy(host.data(), c, bytes, cudaMemcpyDeviceToHost);
  cudaDeviceSynchronize();
  std::printf("own_kernels %d gemms %d c[0] %.1f\n", own, gemms, host[0]);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return host[0] == 512.0f ? 0 : 1;
}
