// The shim's process-wide objects: made once (startup.cpp), never destroyed,
// since hooks and the collector may still run while the process exits.
#pragma once
#include <cstdint>
#include <string>

#include "core/name_table.h"
#include "core/settings.h"
#include "core/thread_registry.h"

namespace nb::shim {

// Read once, in the library's constructor or at the first hooked call,
// whichever comes first.
const Settings& settings();

// Made by init_once(); null before (and in a shim that never started).
NameTable* name_table();
ThreadRegistry* thread_registry();

// Interns a kernel name into the table the collector reads (0 for null).
uint32_t intern_name(const char* name);
// The text of an interned name ("" if unknown).
std::string kernel_name_text(uint32_t id);

}  // namespace nb::shim
