// The exported wrappers, generated from hook_table.h. Each one: find the real
// function, let HookScope decide whether and where to record, call through,
// fill the record from the arguments, return the real result unchanged.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "core/record.h"
#include "core/api.h"
#include "shim/fill_helpers.h"
#include "shim/hook_entries.h"
#include "shim/hook_scope.h"
#include "shim/real_functions.h"
#include "shim/steps.h"

#define NB_EXPORT __attribute__((visibility("default")))

namespace nb::shim {
namespace {
constexpr int32_t kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY == cudaErrorMemoryAllocation

// After the fill: an allocation that failed for lack of memory carries the
// free memory the device reports, for the snapshot's `oom` entry.
inline void note_oom(const HookScope& scope, int32_t rc) {
  Record* own = scope.own();
  if (own != nullptr && rc == kOutOfMemory && (own->kind == Kind::Alloc || own->kind == Kind::VmmCreate)) {
    own->aux = device_free_bytes();
  }
}
}  // namespace
}  // namespace nb::shim

// The _ptsz/_ptds twins are declared by cuda.h only when a program is built
// for the per-thread default stream; declare them here with the same ABI.
// (Redeclaring those that cuda.h does declare is harmless.)
#define NB_DECLARE_DRIVER(sym, base, since, variant, kind, params, args, fill) \
  extern "C" CUresult CUDAAPI sym params;
#define NB_DECLARE_RUNTIME(sym, display, kind, params, args, fill) \
  extern "C" cudaError_t CUDARTAPI sym params;
NB_DRIVER_HOOKS(NB_DECLARE_DRIVER)
NB_RUNTIME_HOOKS(NB_DECLARE_RUNTIME)
#undef NB_DECLARE_DRIVER
#undef NB_DECLARE_RUNTIME

// One wrapper. `Ret`/`error` are the API's result type and what it returns
// when the real function cannot be found; `level` tells a runtime hook from a
// driver hook (a driver call inside a runtime call annotates the latter).
#define NB_DEFINE_HOOK(Ret, CALLCONV, error, level, sym, kind, params, args, fill)           \
  extern "C" NB_EXPORT Ret CALLCONV sym params {                                           \
    using namespace nb;                                                                    \
    using namespace nb::shim;                                                              \
    using Fn = Ret(CALLCONV*) params;                                                      \
    const auto real = reinterpret_cast<Fn>(real_fn(kApi_##sym));                           \
    if (real == nullptr) return error;                                                     \
    HookScope scope(kApi_##sym, Kind::kind, level);                                        \
    if (!scope.active()) {                                                                 \
      if constexpr (Kind::kind != Kind::Capture) return real args;                        \
      /* Captures are counted whether or not nb records (fill_helpers.h). */              \
      const Ret rc = real args;                                                            \
      Record scratch{};                                                                    \
      Record& r = scratch;                                                                 \
      (void)r;                                                                             \
      fill;                                                                                \
      return rc;                                                                           \
    }                                                                                      \
    const Ret rc = real args;                                                              \
    scope.finish(rc);                                                                      \
    if (Record* target = scope.target()) {                                                 \
      Record& r = *target;                                                                 \
      (void)r;                                                                             \
      fill;                                                                                \
      note_oom(scope, rc);                                                                 \
      note_captured_if_capturing(scope.own(), rc);                                         \
    } else if constexpr (Kind::kind == Kind::Capture) {                                    \
      Record scratch{}; /* the record was dropped (full ring): still count the capture */  \
      Record& r = scratch;                                                                 \
      (void)r;                                                                             \
      fill;                                                                                \
    }                                                                                      \
    if (Record* own = scope.own()) after_call(*own);                                       \
    return rc;                                                                             \
  }
#define NB_DEFINE_DRIVER(sym, base, since, variant, kind, params, args, fill) \
  NB_DEFINE_HOOK(CUresult, CUDAAPI, CUDA_ERROR_NOT_INITIALIZED, Level::Driver, sym, kind, params, args, fill)
#define NB_DEFINE_RUNTIME(sym, display, kind, params, args, fill)                                           \
  NB_DEFINE_HOOK(cudaError_t, CUDARTAPI, cudaErrorInitializationError, Level::Runtime, sym, kind, params, args, \
                 fill)

NB_DRIVER_HOOKS(NB_DEFINE_DRIVER)
NB_RUNTIME_HOOKS(NB_DEFINE_RUNTIME)

namespace nb::shim {

#define NB_WRAPPER_ADDRESS(sym, ...) reinterpret_cast<void*>(&::sym),
void* const g_wrapper[kApiCount] = {NB_DRIVER_HOOKS(NB_WRAPPER_ADDRESS) NB_RUNTIME_HOOKS(NB_WRAPPER_ADDRESS)};
#undef NB_WRAPPER_ADDRESS

#define NB_DRIVER_ENTRY(sym, base, since, variant, kind, params, args, fill) \
  {kApi_##sym, #sym, base, since, Variant::variant},
const HookEntry kDriverEntries[] = {NB_DRIVER_HOOKS(NB_DRIVER_ENTRY)};
const size_t kDriverEntryCount = sizeof(kDriverEntries) / sizeof(kDriverEntries[0]);
#undef NB_DRIVER_ENTRY

}  // namespace nb::shim
