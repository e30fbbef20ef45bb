// Ids and names of the intercepted APIs, generated from hook_table.h. Needs no
// CUDA header: the table's parameter lists are dropped unexpanded here, so the
// collector can name records without knowing CUDA types.
#pragma once
#include <cstdint>

#include "core/record.h"
#include "core/hook_table.h"

namespace nb {

enum ApiId : uint16_t {
#define NB_API_ID(sym, ...) kApi_##sym,
  NB_DRIVER_HOOKS(NB_API_ID)
  kApiFirstRuntime,
  kApiRuntimeBase = kApiFirstRuntime - 1,
  NB_RUNTIME_HOOKS(NB_API_ID)
#undef NB_API_ID
  kApiCount
};

struct ApiInfo {
  const char* symbol;  // exported symbol
  const char* name;    // shown in outputs
  bool runtime;        // cuda_runtime (true) or cuda_driver (false)
  Kind kind;
};

// Info for an id; ids out of range get a placeholder (records are read by
// another thread and must never index out of bounds).
const ApiInfo& api_info(uint16_t id);

}  // namespace nb
