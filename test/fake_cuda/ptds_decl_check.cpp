// Compile-time check, no code: with CUDA_API_PER_THREAD_DEFAULT_STREAM the
// toolkit headers declare the _ptsz / _ptds entry points themselves (through
// their macros), so including fake_cuda.h after them makes the compiler
// compare our hand-written declarations with NVIDIA's. Any difference is a
// "conflicting declaration of C function" error.
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "fake_cuda.h"
