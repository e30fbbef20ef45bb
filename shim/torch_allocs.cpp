#include "shim/torch_allocs.h"

namespace nb::shim {

AllocConfChange torch_alloc_conf(const char* alloc_conf, const char* cuda_alloc_conf) {
  AllocConfChange c;
  // PyTorch 2.9 renamed the variable; both are still read, the new one first.
  const bool use_new = alloc_conf != nullptr && *alloc_conf != 0;
  c.variable = use_new ? "PYTORCH_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
  const std::string current = use_new ? alloc_conf : (cuda_alloc_conf ? cuda_alloc_conf : "");
  if (current.find("backend:") != std::string::npos) {
    if (current.find("backend:cudaMallocAsync") == std::string::npos) {
      c.note = "NB_TORCH_ALLOCS: " + c.variable + " already chooses an allocator backend (" + current +
               "); left as it is, so tensors are not seen one by one";
    }
    c.variable.clear();
    return c;
  }
  c.value = current.empty() ? "backend:cudaMallocAsync" : current + ",backend:cudaMallocAsync";
  return c;
}

}  // namespace nb::shim
