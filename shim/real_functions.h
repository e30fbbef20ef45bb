// Where the real CUDA functions are. Each hook has one slot holding the
// function it forwards to; the slot is filled by whichever path reached the
// hook first (dlsym on libcuda's handle, a cuGetProcAddress answer, or our
// own lookup for plain-symbol callers).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "core/api.h"

extern "C" {
// The real dlsym, read by the assembly entry point (dlsym_entry.S).
extern void* (*nb_real_dlsym)(void*, const char*) __attribute__((visibility("hidden")));
void* nb_resolve_real_dlsym() __attribute__((visibility("hidden")));
}

namespace nb::shim {

extern std::atomic<void*> g_real[kApiCount];
extern const char* const kRuntimeSoname;  // the runtime ABI the runtime hooks are written for
extern void* const g_wrapper[kApiCount];  // our hook for each id (hooks.cpp)

void* resolve_real(uint16_t id);  // slow path: RTLD_NEXT, then the loaded libcuda / libcudart

inline void* real_fn(uint16_t id) {
  void* p = g_real[id].load(std::memory_order_acquire);
  return __builtin_expect(p != nullptr, 1) ? p : resolve_real(id);
}

// Records `p` as the real function of `id`, unless one is known already or
// `p` is our own wrapper (which would make the hook call itself).
void store_real(uint16_t id, void* p);

void* real_dlsym(void* handle, const char* name);

// ncclGetVersion of the libnccl loaded in the process as "2.21.5", or ""
// when none is loaded (nb never loads it).
std::string loaded_nccl_version();

// Learns where libcuda is from any real driver function we are handed; used
// to find the driver functions the shim calls itself (cuCtxGetDevice, ...).
// A driver found at a new base (the program dlclosed libcuda and loaded it
// again) clears the hook slots and bumps driver_generation(), so pointers
// cached elsewhere are looked up again.
void note_driver_function(void* fn);
uint32_t driver_generation();
void* driver_symbol(const char* name);  // null when libcuda is not loaded

}  // namespace nb::shim
