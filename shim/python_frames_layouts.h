// The interpreter's structures, as the path without the GIL reads them in
// place (python_frames_released.cpp): byte offsets of the fields read, per
// minor version, from the headers each version installs
// (include/python3.X/...), the same ones py-spy and austin read from outside.
// Each version's walk is compiled with its table as constants, hence the
// tables here, in a header, rather than behind a function.
#pragma once
#include <pthread.h>

#include <cstdint>
#include <cstring>

#include "shim/python_frames_lines.h"
#include "shim/python_frames_shared.h"

namespace nb::shim::python {

enum class FrameKind : uint8_t {
  kObject,       // PyFrameObject, chained by f_back (3.9, 3.10)
  kInterpreter,  // _PyInterpreterFrame, chained by previous (3.11+)
};

// -1: the version has no such field.
struct Layout {
  int minor;
  FrameKind frames;
  LineTable lines;
  // PyThreadState (cpython/pystate.h)
  int16_t ts_interp;    // interp
  int16_t ts_frame;     // frame (3.9, 3.10), cframe (3.11, 3.12), current_frame (3.13)
  int16_t cframe_top;   // _PyCFrame.current_frame (cpython/pystate.h; 3.11, 3.12)
  // PyFrameObject (cpython/frameobject.h) / _PyInterpreterFrame (internal/pycore_frame.h)
  int16_t f_back;       // f_back / previous
  int16_t f_code;       // f_code / f_executable (3.13)
  int16_t f_instr;      // f_lasti, an int (3.9, 3.10) / prev_instr (3.11, 3.12) / instr_ptr (3.13)
  int16_t f_owner;      // owner, a char (3.11+)
  // PyCodeObject (cpython/code.h)
  int16_t co_firstlineno;
  int16_t co_filename;
  int16_t co_name;
  int16_t co_lines;          // co_lnotab (3.9) / co_linetable
  int16_t co_code;           // co_code, a bytes object (3.9, 3.10)
  int16_t co_firsttraceable; // _co_firsttraceable (3.11+)
  int16_t co_code_adaptive;  // co_code_adaptive: the bytecode, inline (3.11+)
  int16_t co_version;        // co_version, a uint32_t drawn from a counter when the code object is made (3.12+; -1: not used)
  // PyASCIIObject / PyCompactUnicodeObject (cpython/unicodeobject.h)
  int16_t str_ascii_data;    // sizeof(PyASCIIObject): a compact ASCII string's characters
  int16_t str_utf8_length;   // utf8_length
  int16_t str_utf8;          // utf8: a compact non-ASCII string's UTF-8 form, once made
};

inline constexpr Layout k39 = {
    .minor = 9, .frames = FrameKind::kObject, .lines = LineTable::kLnotab,
    .ts_interp = 16, .ts_frame = 24, .cframe_top = -1,
    .f_back = 24, .f_code = 32, .f_instr = 104, .f_owner = -1,
    .co_firstlineno = 40, .co_filename = 104, .co_name = 112, .co_lines = 120, .co_code = 48,
    .co_firsttraceable = -1, .co_code_adaptive = -1,
    .co_version = -1,
    .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56};
inline constexpr Layout k310 = {
    .minor = 10, .frames = FrameKind::kObject, .lines = LineTable::kPep626,
    .ts_interp = 16, .ts_frame = 24, .cframe_top = -1,
    .f_back = 24, .f_code = 32, .f_instr = 96, .f_owner = -1,
    .co_firstlineno = 40, .co_filename = 104, .co_name = 112, .co_lines = 120, .co_code = 48,
    .co_firsttraceable = -1, .co_code_adaptive = -1,
    .co_version = -1,
    .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56};
inline constexpr Layout k311 = {
    .minor = 11, .frames = FrameKind::kInterpreter, .lines = LineTable::kLocations,
    .ts_interp = 16, .ts_frame = 56, .cframe_top = 8,
    .f_back = 48, .f_code = 32, .f_instr = 56, .f_owner = 69,
    .co_firstlineno = 72, .co_filename = 112, .co_name = 120, .co_lines = 136, .co_code = -1,
    .co_firsttraceable = 168, .co_code_adaptive = 184,
    .co_version = -1,
    .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56};
inline constexpr Layout k312 = {
    .minor = 12, .frames = FrameKind::kInterpreter, .lines = LineTable::kLocations,
    .ts_interp = 16, .ts_frame = 56, .cframe_top = 0,
    .f_back = 8, .f_code = 0, .f_instr = 56, .f_owner = 70,
    .co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_lines = 136, .co_code = -1,
    .co_firsttraceable = 176, .co_code_adaptive = 192,
    .co_version = 92,
    .str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48};
inline constexpr Layout k313 = {
    .minor = 13, .frames = FrameKind::kInterpreter, .lines = LineTable::kLocations,
    .ts_interp = 16, .ts_frame = 72, .cframe_top = -1,
    .f_back = 8, .f_code = 0, .f_instr = 56, .f_owner = 70,
    .co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_lines = 136, .co_code = -1,
    .co_firsttraceable = 184, .co_code_adaptive = 200,
    .co_version = -1,  // at 92 too, but counted per interpreter from 1 again at each Py_Initialize: not a key
    .str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48};

// The same in 3.9–3.13 (without Py_TRACE_REFS, whose builds get no layout).
constexpr int kObType = 8;       // PyObject.ob_type (object.h)
constexpr int kObSize = 16;      // PyVarObject.ob_size (object.h)
constexpr int kBytesData = 32;   // PyBytesObject.ob_sval (cpython/bytesobject.h)
constexpr int kStrLength = 16;   // PyASCIIObject.length (cpython/unicodeobject.h)
constexpr int kStrHash = 24;     // PyASCIIObject.hash: -1 until computed
constexpr int kStrState = 32;    // PyASCIIObject.state: interned:2, kind:3, compact:1, ascii:1, ...
constexpr uint32_t kStrCompact = 1u << 5;
constexpr uint32_t kStrAscii = 1u << 6;
constexpr signed char kOwnedByGenerator = 1;  // enum _frameowner (internal/pycore_frame.h)
constexpr signed char kOwnedByCStack = 3;     // 3.12+: the entry frame of a C → Python call

// The layout of the interpreter `h` (a dlopen handle) for the path without
// the GIL, or null when it is not one nb knows (python_frames_layouts.cpp).
// Also fills `a`'s type objects, which that path checks objects against.
const Layout* find_layout(void* h, PyApi& a);

// ---- The interpreter's flags -----------------------------------------------------
//
// Where _PyRuntime (3.12, internal/pycore_runtime.h) keeps what the hot path
// asks for. Its fields up to `interpreters` are placed early on purpose, for
// tools that read them from outside; autoTSSkey lies after structs whose
// size could in principle differ between builds, hence the check against
// PyGILState_GetThisThreadState before it is used (python_frames.cpp).
constexpr int kRtInitialized = 16;     // int initialized
constexpr int kRtFinalizing = 24;      // _Py_atomic_address _finalizing
constexpr int kRtMainInterp = 48;      // interpreters.main
constexpr int kRtTssInitialized = 1544;  // autoTSSkey._is_initialized (Py_tss_t)
constexpr int kRtTssKey = 1548;          // autoTSSkey._key (a pthread_key_t)

// Py_IsInitialized()
inline bool initialized(const PyApi& a) {
  if (a.runtime != nullptr) return *reinterpret_cast<const volatile int*>(a.runtime + kRtInitialized) != 0;
  return a.is_initialized() != 0;
}

// Py_IsFinalizing(); false when that cannot be asked.
inline bool finalizing(const PyApi& a) {
  if (a.runtime != nullptr) {
    return __atomic_load_n(reinterpret_cast<void* const*>(a.runtime + kRtFinalizing), __ATOMIC_RELAXED) != nullptr;
  }
  return a.is_finalizing != nullptr && a.is_finalizing() != 0;
}

// PyInterpreterState_Main()
inline const void* main_interpreter(const PyApi& a) {
  if (a.runtime != nullptr) return *reinterpret_cast<const void* const volatile*>(a.runtime + kRtMainInterp);
  return a.main_interp();
}

// What PyGILState_GetThisThreadState answers on 3.12, read through the key
// as it is now (a fork or a new Py_Initialize makes another).
inline void* runtime_thread_state(const char* runtime) {
  if (*reinterpret_cast<const volatile int*>(runtime + kRtTssInitialized) == 0) return nullptr;
  return pthread_getspecific(*reinterpret_cast<const volatile pthread_key_t*>(runtime + kRtTssKey));
}

// &_PyRuntime of the interpreter `h` when its flags can be read in place
// (3.12, PyApi::runtime), else null: the fields must agree with what the
// functions answer now, and the main interpreter must exist.
const char* find_runtime(void* h, const PyApi& a, const Layout* layout);

// ---- Reading in place ----------------------------------------------------------

// Every pointer is checked to be plausible before it is followed.
inline bool plausible(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  return v >= 4096 && (v & 7) == 0 && (v >> 56) == 0;
}

template <typename T>
inline T field(const void* base, int offset) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + offset, sizeof v);
  return v;
}

inline bool is_a(const void* obj, const void* type) {
  return plausible(obj) && field<const void*>(obj, kObType) == type;
}

}  // namespace nb::shim::python
