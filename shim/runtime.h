// The shim's process-wide objects, created on the first CUDA call (never in
// a program that does not use CUDA) and never destroyed: hooks and the
// collector may still run while the process exits.
#pragma once
#include <cstdint>
#include <string>

#include "collector/options.h"

namespace nb::shim {

// Interns a kernel name into the table the collector reads (0 for null).
uint32_t intern_name(const char* name);
// The text of an interned name ("" if unknown).
std::string kernel_name_text(uint32_t id);

}  // namespace nb::shim
