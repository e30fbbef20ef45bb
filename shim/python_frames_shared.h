// What the files of shim/python_frames.h share (python_frames*.cpp; hidden,
// never exported): the interpreter's C API as looked up at run time, the
// table of code names both ways of capturing hand ids from, and the entry
// points of those two ways, which capture_python_frames chooses between.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/python_codes.h"

namespace nb::shim::python {

struct Layout;  // the interpreter's structures, for the path without the GIL (python_frames_layouts.h)

// CPython's public C API, 3.9–3.13, looked up at run time. Objects are opaque
// here (PyObject*, PyFrameObject*, PyThreadState*, PyInterpreterState*).
struct PyApi {
  int (*is_initialized)();                 // Py_IsInitialized
  int (*is_finalizing)();                  // Py_IsFinalizing (3.13) / _Py_IsFinalizing; may be null
  int (*gil_check)();                      // PyGILState_Check
  void* (*gilstate_tstate)();              // PyGILState_GetThisThreadState
  void* (*current_tstate)();               // PyThreadState_GetUnchecked / _PyThreadState_UncheckedGet
  void* (*tstate_interp)(void*);           // PyThreadState_GetInterpreter
  void* (*main_interp)();                  // PyInterpreterState_Main
  void* (*get_frame)();                    // PyEval_GetFrame: borrowed
  void* (*frame_code)(void*);              // PyFrame_GetCode: new reference
  void* (*frame_back)(void*);              // PyFrame_GetBack: new reference
  int (*frame_line)(void*);                // PyFrame_GetLineNumber
  int (*frame_lasti)(void*);               // PyFrame_GetLasti (3.11+); may be null
  void (*decref)(void*);                   // Py_DecRef
  void* (*getattr)(void*, const char*);    // PyObject_GetAttrString: new reference
  const char* (*as_utf8)(void*);           // PyUnicode_AsUTF8: owned by the string
  void (*err_fetch)(void**, void**, void**);    // PyErr_Fetch
  void (*err_restore)(void*, void*, void*);     // PyErr_Restore
  void* (*err_get_raised)();               // PyErr_GetRaisedException (3.12+); may be null
  void (*err_set_raised)(void*);           // PyErr_SetRaisedException (3.12+); may be null
  int (*gc_disable)();                     // PyGC_Disable (3.10+); may be null
  int (*gc_enable)();                      // PyGC_Enable (3.10+); may be null
  // Without the GIL: null when this interpreter's layout is not known.
  const Layout* layout;
  const void* code_type;                   // &PyCode_Type
  const void* frame_type;                  // &PyFrame_Type
  const void* unicode_type;                // &PyUnicode_Type
  const void* bytes_type;                  // &PyBytes_Type
  // 3.12: &_PyRuntime, whose flags the hot path reads in place instead of
  // calling the functions above that return them (each call runs code of
  // the interpreter's that the program's own work has pushed out of the
  // caches since the last CUDA call); null otherwise. Set only once the
  // fields agreed with those functions (find_runtime, python_frames_layouts.cpp).
  const char* runtime;
};

// ---- Code names (python_frames.cpp) ------------------------------------------
//
// Both ways give a code object an id, 1-based, into one table of names that
// the collector reads (python_codes(), core/python_codes.h).

// How many code objects get an id; past it, frames are kUnknownPythonCode.
constexpr uint32_t kMaxCodes = PythonCodes::kMaxCodes;

// A new id for these names, or 0 (the table is full, or memory is short).
uint32_t add_names(std::string&& file, std::string&& function);

// Counts a frame that gets no id (python_unknown_frames), and returns
// kUnknownPythonCode for it.
uint32_t unknown();

// ---- The two ways of capturing -------------------------------------------------
//
// Each keeps its own table of the code objects it saw; both are told when the
// interpreter was seen finalized (not initialized), after which code objects
// may be gone and their addresses reused.

// With the GIL, through the C API (python_frames_gil.cpp). The caller holds
// the main interpreter's GIL.
size_t capture_with_gil(const PyApi& a, uint64_t* out, size_t max);
void forget_gil_codes();

// Without it, the frame chain read in place (python_frames_released.cpp).
// `ts` is this thread's state, not the one it runs with (`cur`).
size_t capture_released(const PyApi& a, const void* ts, const void* cur, uint64_t* out, size_t max);
void forget_released_codes();

}  // namespace nb::shim::python
