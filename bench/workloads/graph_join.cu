// CUDA graph launches on a real GPU: a graph of two kernels and a set,
// captured from a stream, then the same work once eagerly, then the graph
// launched LAUNCHES times with a plain kernel launch between launches. Each
// node's work should appear on its stream, joined to the cudaGraphLaunch that
// ran it (bench/nbbench device-check; nbb/checks.py graph_joined).
//
//   nvcc -O2 -arch=sm_90 -o graph_join graph_join.cu    (bench/nbbench carry)
//   ./graph_join [LAUNCHES]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void node_a(float* x) { x[threadIdx.x] += 1.0f; }
__global__ void node_b(float* x) { x[threadIdx.x] *= 2.0f; }
__global__ void between(float* x) { x[threadIdx.x] -= 1.0f; }

int main(int argc, char** argv) {
  const int launches = argc > 1 ? std::atoi(argv[1]) : 100;
  float* x = nullptr;
  cudaStream_t s;
  if (cudaMalloc(&x, 1024 * sizeof(float)) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess) return 1;
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  node_a<<<1, 256, 0, s>>>(x);
  cudaMemsetAsync(x + 512, 0, 256 * sizeof(float), s);
  node_b<<<2, 128, 0, s>>>(x);
  cudaStreamEndCapture(s, &g);
  // The captured work once more, eagerly: the same kernels, grids and bytes
  // as the capture's calls, which made no device work themselves.
  node_a<<<1, 256, 0, s>>>(x);
  cudaMemsetAsync(x + 512, 0, 256 * sizeof(float), s);
  node_b<<<2, 128, 0, s>>>(x);
  if (cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) return 2;
  for (int i = 0; i < launches; ++i) {
    cudaGraphLaunch(exec, s);
    between<<<1, 64, 0, s>>>(x);
  }
  cudaStreamSynchronize(s);
  const cudaError_t e = cudaGetLastError();
  std::printf("graph_join launches %d %s\n", launches, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 3;
}
