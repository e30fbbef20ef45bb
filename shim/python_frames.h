// The Python stack of the calling thread, for a CUDA call made from Python
// code: (code object, line) per frame (3.9–3.13; nb never links libpython,
// the interpreter is found at run time).
//
// Two ways, by whether the calling thread holds the main interpreter's GIL:
//  - It does (a C extension that kept the GIL, ctypes.PyDLL): through the
//    public C API. A code object seen for the first time gets an id, its file
//    and function name are copied out, and a reference to it is kept so that
//    its address is never reused by another code object.
//  - It released it (every PyTorch op, ctypes.CDLL, Py_BEGIN_ALLOW_THREADS):
//    the thread's own frames cannot change until it takes the GIL back, so
//    its frame chain is read in place, with each version's struct layout (as
//    py-spy and austin read it from outside), without the GIL, without a
//    reference or an allocation (after the first sight of a code object,
//    which copies its names and line table out). The GIL is never taken.
// Either way no lock on a cache hit.
//
// Nothing is captured on a thread Python never saw (no thread state), or
// while the interpreter is not initialized or finalizing; a sub-interpreter's
// frames never are (up to 3.11, a call made inside one without the GIL, on a
// thread that entered it from the main interpreter, gets that thread's main
// interpreter frames below it). Not covered: free-threaded builds (3.13t);
// without the GIL also 3.14+ and debug builds (Py_REF_DEBUG, Py_TRACE_REFS),
// whose layouts nb does not know; and on 3.9–3.11, once a sub-interpreter was
// created, a call made without the GIL while another thread holds it (it
// cannot be told from one made inside the sub-interpreter).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/python_codes.h"

namespace nb::shim {

// Hot path, called inside an intercepted CUDA call. Writes up to `max` entries, innermost
// Python frame first, each encoded as kPythonFrameBit | (uint64_t(code_id) << 32) | line
// (code_id < 2^31, line < 2^32; line 0: not known). Returns how many were written; 0 when
// no interpreter is loaded/initialized, it is finalizing, or this thread has no Python frames
// it can read (see above).
constexpr uint64_t kPythonFrameBit = 1ull << 63;
size_t capture_python_frames(uint64_t* out, size_t max);

// The names of the code ids handed out above, and where the interpreter's
// frame-evaluation function is (so that native stacks can be interleaved
// with Python frames there): what the collector names Python frames with.
const PythonCodes& python_codes();

// Whether the interpreter (once found) is finalizing: the program's Python
// code has finished and teardown has begun.
bool python_finalizing();

// Whether the interpreter's flags and this thread's state are read in place
// from _PyRuntime (3.12, once checked against the calls that return them)
// rather than asked through those calls.
bool python_flags_in_place();

// The id a frame gets when its code object cannot be given one (the table of
// code objects is full, or its names could not be read); python_code_info
// answers false for it.
constexpr uint32_t kUnknownPythonCode = 0;
// How many frames were given kUnknownPythonCode so far (for the table's footer).
uint64_t python_unknown_frames();

}  // namespace nb::shim
