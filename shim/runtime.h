// The shim's process-wide objects, created on the first CUDA call (never in
// a program that does not use CUDA) and never destroyed: hooks and the
// collector may still run while the process exits.
#pragma once
#include <cstdint>

#include "collector/options.h"

namespace nb::shim {

// Interns a kernel name into the table the collector reads (0 for null).
uint32_t intern_name(const char* name);

}  // namespace nb::shim
