// The two look-up paths that LD_PRELOAD alone does not catch:
//  - dlsym(handle, "cu…") on a libcuda handle the runtime opened itself;
//  - cuGetProcAddress[_v2], which CUDA 11.3+ runtimes use for nearly every
//    driver function, after first asking it for cuGetProcAddress itself.
// Both answer with our wrapper for the same ABI, remembering the real
// function in that wrapper's slot.
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "core/api.h"
#include "shim/hook_entries.h"
#include "shim/real_functions.h"
#include "shim/state.h"

#define NB_EXPORT __attribute__((visibility("default")))

// cuda.h makes cuGetProcAddress mean cuGetProcAddress_v2; we define both.
#undef cuGetProcAddress

extern "C" NB_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                                       cuuint64_t flags);
extern "C" NB_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                                          cuuint64_t flags,
                                                          CUdriverProcAddressQueryResult* status);

namespace nb::shim {
namespace {

// Real cuGetProcAddress (v1 ABI, CUDA 11.3) and cuGetProcAddress_v2 (12.0),
// and the copy of the driver they are from (driver_generation).
std::atomic<void*> g_real_gpa_v1{nullptr};
std::atomic<void*> g_real_gpa_v2{nullptr};
std::atomic<uint32_t> g_gpa_generation{0};

// Forgets both when the driver was loaded again since they were found.
void check_gpa_generation() {
  const uint32_t gen = driver_generation();
  uint32_t seen = g_gpa_generation.load(std::memory_order_acquire);
  if (seen == gen || !g_gpa_generation.compare_exchange_strong(seen, gen)) return;
  g_real_gpa_v1.store(nullptr, std::memory_order_release);
  g_real_gpa_v2.store(nullptr, std::memory_order_release);
}

void* own_gpa_v1() { return reinterpret_cast<void*>(&::cuGetProcAddress); }
void* own_gpa_v2() { return reinterpret_cast<void*>(&::cuGetProcAddress_v2); }

void remember(std::atomic<void*>& slot, void* real, void* own) {
  if (real == nullptr || real == own) return;
  note_driver_function(real);
  check_gpa_generation();
  void* expected = nullptr;
  slot.compare_exchange_strong(expected, real);
}

void* real_gpa(std::atomic<void*>& slot, const char* symbol, void* own) {
  check_gpa_generation();
  void* p = slot.load(std::memory_order_acquire);
  if (p != nullptr) return p;
  p = real_dlsym(RTLD_NEXT, symbol);
  if (p == nullptr || p == own) p = driver_symbol(symbol);
  remember(slot, p, own);
  return slot.load(std::memory_order_acquire);
}

// Basename of the object that defines `fn` starts with `prefix`?
bool defined_in(void* fn, const char* prefix) {
  Dl_info info;
  if (fn == nullptr || dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return false;
  const char* base = std::strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  return std::strncmp(base, prefix, std::strlen(prefix)) == 0;
}

// The answer for (symbol, version, per-thread flag), from the same table the
// wrappers come from: the entry with this base name and the right
// per-thread variant whose ABI is the newest not newer than `version`. No
// entry (an older ABI than ours, or a name we do not hook): the real answer
// goes back unchanged.
void* answer_proc(const char* symbol, void* real, int version, cuuint64_t flags) {
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    if (version >= 12000) {
      remember(g_real_gpa_v2, real, own_gpa_v2());
      return own_gpa_v2();
    }
    if (version >= 11030) {
      remember(g_real_gpa_v1, real, own_gpa_v1());
      return own_gpa_v1();
    }
    return real;
  }
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const HookEntry* best = nullptr;
  for (size_t i = 0; i < kDriverEntryCount; ++i) {
    const HookEntry& e = kDriverEntries[i];
    if (e.since > version || std::strcmp(e.base, symbol) != 0) continue;
    if (e.variant != Variant::ANY && (e.variant == Variant::PTDS) != per_thread) continue;
    if (best == nullptr || e.since > best->since) best = &e;
  }
  if (best == nullptr) return real;
  store_real(best->id, real);
  return g_wrapper[best->id];
}

// dlsym on an explicit handle: wrap what the real dlsym found when it is one
// of our hooks and it lives in libcuda (driver) or libcudart (runtime).
void* answer_symbol(const char* name, void* real) {
  if (std::strcmp(name, "cuGetProcAddress_v2") == 0) {
    if (!defined_in(real, "libcuda.so")) return real;
    remember(g_real_gpa_v2, real, own_gpa_v2());
    return own_gpa_v2();
  }
  if (std::strcmp(name, "cuGetProcAddress") == 0) {
    if (!defined_in(real, "libcuda.so")) return real;
    remember(g_real_gpa_v1, real, own_gpa_v1());
    return own_gpa_v1();
  }
  for (uint16_t id = 0; id < kApiCount; ++id) {
    const ApiInfo& info = api_info(id);
    if (std::strcmp(info.symbol, name) != 0) continue;
    if (real == g_wrapper[id]) return real;
    if (!defined_in(real, info.runtime ? kRuntimeSoname : "libcuda.so")) return real;
    store_real(id, real);
    return g_wrapper[id];
  }
  return real;
}

}  // namespace
}  // namespace nb::shim

extern "C" {

// Called by the assembly entry point `dlsym` for explicit handles (a handle
// lookup does not depend on the caller, so going through here is safe;
// RTLD_DEFAULT / RTLD_NEXT jump straight to the real dlsym).
__attribute__((visibility("hidden"))) void* nb_dlsym_explicit(void* handle, const char* name) {
  void* real = nb::shim::real_dlsym(handle, name);
  if (real == nullptr || name == nullptr || nb::shim::disabled()) return real;
  // Cheap filter first: our hooks are cu*, cuda* and __cuda*.
  if (!(name[0] == 'c' && name[1] == 'u') && std::strncmp(name, "__cuda", 6) != 0) return real;
  return nb::shim::answer_symbol(name, real);
}

NB_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                               cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  using Fn = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  const auto real = reinterpret_cast<Fn>(
      nb::shim::real_gpa(nb::shim::g_real_gpa_v2, "cuGetProcAddress_v2", nb::shim::own_gpa_v2()));
  if (real == nullptr) {
    if (pfn) *pfn = nullptr;
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  const CUresult rc = real(symbol, pfn, cudaVersion, flags, status);
  if (rc == CUDA_SUCCESS && symbol && pfn && *pfn && !nb::shim::disabled() &&
      (status == nullptr || *status == CU_GET_PROC_ADDRESS_SUCCESS)) {
    *pfn = nb::shim::answer_proc(symbol, *pfn, cudaVersion, flags);
  }
  return rc;
}

NB_EXPORT CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  using Fn = CUresult(CUDAAPI*)(const char*, void**, int, cuuint64_t);
  const auto real = reinterpret_cast<Fn>(
      nb::shim::real_gpa(nb::shim::g_real_gpa_v1, "cuGetProcAddress", nb::shim::own_gpa_v1()));
  if (real == nullptr) {
    if (pfn) *pfn = nullptr;
    return CUDA_ERROR_NOT_FOUND;
  }
  const CUresult rc = real(symbol, pfn, cudaVersion, flags);
  if (rc == CUDA_SUCCESS && symbol && pfn && *pfn && !nb::shim::disabled()) {
    *pfn = nb::shim::answer_proc(symbol, *pfn, cudaVersion, flags);
  }
  return rc;
}

}  // extern "C"
