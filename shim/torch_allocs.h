// NB_TORCH_ALLOCS=1: make PyTorch allocate every tensor through
// cudaMallocAsync / cudaFreeAsync (its "cudaMallocAsync" allocator backend),
// which nb intercepts, instead of carving tensors out of large cached
// segments where no CUDA call shows them.
#pragma once
#include <string>

namespace nb::shim {

// Merges backend:cudaMallocAsync into the allocator configuration variable
// PyTorch reads (PYTORCH_ALLOC_CONF if set, else PYTORCH_CUDA_ALLOC_CONF),
// keeping what is there. A backend the user chose is left alone. Returns
// the value now in effect, or why nothing was changed. Pure: the caller
// reads and sets the environment.
struct AllocConfChange {
  std::string variable;  // which variable to set ("" = leave the environment alone)
  std::string value;
  std::string note;      // one line for the log, if something is worth saying
};
AllocConfChange torch_alloc_conf(const char* alloc_conf, const char* cuda_alloc_conf);

}  // namespace nb::shim
