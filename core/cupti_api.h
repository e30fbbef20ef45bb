// CUPTI, loaded at run time. The shim never links libcupti: a process that
// already has one (PyTorch's wheel ships its own) must keep using that copy,
// and a process without one must still run. This table holds the functions
// nb calls, found with dlsym on whichever copy was loaded.
#pragma once
#include <cupti.h>

#include <string>
#include <vector>

namespace nb {

struct CuptiApi {
  void* handle = nullptr;
  std::string path;  // where it was found (for the log)
  uint32_t version = 0;

#define NB_CUPTI_FUNCTIONS(X)                  \
  X(cuptiGetVersion)                           \
  X(cuptiGetResultString)                      \
  X(cuptiActivityEnable)                       \
  X(cuptiActivityDisable)                      \
  X(cuptiActivityRegisterCallbacks)            \
  X(cuptiActivityRegisterTimestampCallback)    \
  X(cuptiActivityFlushAll)                     \
  X(cuptiActivityGetNextRecord)                \
  X(cuptiActivityGetNumDroppedRecords)         \
  X(cuptiSubscribe)                            \
  X(cuptiUnsubscribe)                          \
  X(cuptiEnableCallback)                       \
  X(cuptiGetCallbackName)
#define NB_CUPTI_MEMBER(name) decltype(&::name) name = nullptr;
  NB_CUPTI_FUNCTIONS(NB_CUPTI_MEMBER)
#undef NB_CUPTI_MEMBER

  // Text of a CUPTI result code.
  std::string error(CUptiResult r) const;
};

// Finds and loads libcupti (a copy already in the process first, then
// `explicit_path` if set — and nothing else then —, then the soname, then the
// toolkit's and the Python wheel's usual places). Fills `api` and returns
// true, or returns false with `why` set.
bool load_cupti(const std::string& explicit_path, CuptiApi& api, std::string& why);

}  // namespace nb

namespace nb {

// The CUPTI callback ids (driver and runtime domains) whose names are in
// `names` — CUPTI's runtime names carry a version suffix ("cudaMemcpy_v3020")
// that is ignored. nb takes the ids from CUPTI by name so that the hook
// table stays the only list of functions.
struct CuptiCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
};
std::vector<CuptiCallback> match_callbacks(const CuptiApi& api, const std::vector<std::string>& names);

// "cudaMemcpy_v3020" → "cudaMemcpy"; "cuMemcpyHtoD_v2" stays (only suffixes
// of four or more digits are versions).
std::string strip_cupti_version(const std::string& name);

}  // namespace nb
