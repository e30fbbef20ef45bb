// What NVTX's injection interface (shim/nvtx_injection.cpp) hands to the
// recorder: the ranges a program opens and closes, on the calling thread.
// The recorder keeps them as `user_annotation` spans and, with
// NB_STEP=nvtx:NAME, ends a step at each end of a range named NAME.
//
// Called on the program's threads, from inside its nvtx* calls: no lock on
// the common path, nothing that can throw out.
#pragma once
#include <cstdint>

namespace nb::shim {

// Thread ranges (nvtxRangePush* / nvtxRangePop, and the domain variants).
// `name` may be null (a range without a message); the pointer is only read
// during the call.
// `domain`: the range's NVTX domain's name, null for the global domain; the
// table's row of a domain's range is "domain:name".
void nvtx_push(const char* name, const char* domain = nullptr);
void nvtx_pop();
// Process ranges (nvtxRangeStart* / nvtxRangeEnd, and the domain variants):
// may end on another thread than the one that started them. Returns the id
// that nvtxRangeStart* must return to the program.
uint64_t nvtx_start(const char* name);
void nvtx_end(uint64_t id);

}  // namespace nb::shim
