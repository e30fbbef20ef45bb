// The driver half of hook_table.h as data, for answering cuGetProcAddress
// (by base name, version and per-thread flag) and dlsym (by symbol).
#pragma once
#include <cstddef>
#include <cstdint>

namespace nb::shim {

enum class Variant : uint8_t { ANY, LEGACY, PTDS };

struct HookEntry {
  uint16_t id;
  const char* symbol;
  const char* base;
  int since;
  Variant variant;
};

extern const HookEntry kDriverEntries[];
extern const size_t kDriverEntryCount;

}  // namespace nb::shim
