// NVTX ranges without touching the program: NVTX v3 (header-only, compiled
// into each library that uses it) looks for a tool on its first call by
// dlopen'ing the library named in NVTX_INJECTION64_PATH and calling its
// InitializeInjectionNvtx2. The shim is that library: it fills NVTX's
// function slots with callbacks that hand ranges to shim/nvtx_ranges.h.
#pragma once

namespace nb::shim {

// Points NVTX_INJECTION64_PATH at libnb_shim.so itself, unless it is set
// already (nsys or another tool injecting: NVTX loads one tool only, so nb
// then sees no ranges). Calls setenv: only while the process is still
// single-threaded (the shim's constructor). NVTX instances that made their
// first call before this (in an earlier library constructor) stay no-ops.
void offer_nvtx_injection();

// The library NVTX_INJECTION64_PATH named when the shim loaded, if it is
// another tool's (not a libnb_shim of a parent process); null otherwise.
const char* other_nvtx_tool();

}  // namespace nb::shim
