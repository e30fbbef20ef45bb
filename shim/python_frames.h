// The Python stack of the calling thread, for a CUDA call made from Python
// code: (code object, line) per frame, captured through CPython's public C
// API (3.9–3.13), which is found at run time (nb never links libpython).
//
// Capture happens only on a thread that holds the main interpreter's GIL;
// a thread without it (a native thread, or one inside a call that released
// the GIL) gets nothing, and the GIL is never taken. A code object seen for
// the first time gets an id, its file and function name are copied out for
// the collector, and a reference to it is kept so that its address is never
// reused by another code object. Everything else is a few calls into the
// interpreter per frame; no lock, and no allocation of ours after the first
// sight of each code object.
//
// Not covered: free-threaded builds (3.13t: no GIL to stand on) and
// sub-interpreters (frames of an interpreter other than the main one are not
// captured).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace nb::shim {

// Hot path, called inside an intercepted CUDA call. Writes up to `max` entries, innermost
// Python frame first, each encoded as kPythonFrameBit | (uint64_t(code_id) << 32) | line
// (code_id < 2^31, line < 2^32). Returns how many were written; 0 when no interpreter is
// loaded/initialized, it is finalizing, or this thread does not hold the GIL.
constexpr uint64_t kPythonFrameBit = 1ull << 63;
size_t capture_python_frames(uint64_t* out, size_t max);

// Collector side, any thread, thread-safe: file and function of a code id handed out above.
bool python_code_info(uint32_t code_id, std::string& file, std::string& function);

// True if `pc` lies inside the interpreter's frame-evaluation function
// (_PyEval_EvalFrameDefault), so native stacks can be interleaved with Python frames there.
bool is_python_eval_pc(uint64_t pc);

// The id a frame gets when its code object cannot be given one (the table of
// code objects is full, or its names could not be read); python_code_info
// answers false for it.
constexpr uint32_t kUnknownPythonCode = 0;
// How many frames were given kUnknownPythonCode so far (for the table's footer).
uint64_t python_unknown_frames();

}  // namespace nb::shim
