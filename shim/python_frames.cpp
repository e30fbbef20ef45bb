#include "shim/python_frames.h"

#include <dlfcn.h>
#include <link.h>  // dl_iterate_phdr, ElfW
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "shim/real_functions.h"

namespace nb::shim {
namespace {

struct Layout;  // the interpreter's structures, for the path without the GIL (below)

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
};

const Layout* find_layout(void* handle, PyApi& a);

// ---- Finding the interpreter ------------------------------------------------
//
// Looked up with RTLD_DEFAULT (a python executable that exports its symbols,
// or a libpython loaded globally), else in a libpython3.* loaded locally.
// Until one is found, each thread looks again every kRetryEvery calls, and
// only does the look-up when objects were loaded since the last one.

constexpr uint32_t kRetryEvery = 1024;

PyApi g_api_storage;  // written once, before g_api publishes it
std::atomic<const PyApi*> g_api{nullptr};
std::atomic<uintptr_t> g_eval_begin{0};  // [begin, end) of _PyEval_EvalFrameDefault
std::atomic<uintptr_t> g_eval_end{0};

std::mutex g_resolve_mutex;
bool g_tried = false;                  // under g_resolve_mutex
unsigned long long g_tried_at_adds = 0;

__thread uint32_t t_until_retry __attribute__((tls_model("initial-exec")));

int first_object_adds(dl_phdr_info* info, size_t size, void* out) {
  if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
    *static_cast<unsigned long long*>(out) = info->dlpi_adds;
  }
  return 1;  // every entry carries the same counters: the first is enough
}

int find_libpython(dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  if (name == nullptr) return 0;
  const char* base = std::strrchr(name, '/');
  base = base ? base + 1 : name;
  if (std::strncmp(base, "libpython3.", 11) != 0) return 0;
  *static_cast<const char**>(out) = name;
  return 1;
}

// A handle on a libpython3.* loaded with RTLD_LOCAL (which RTLD_DEFAULT
// cannot see), or null.
void* local_libpython() {
  const char* path = nullptr;
  dl_iterate_phdr(find_libpython, &path);
  if (path == nullptr) return nullptr;
  void* h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  // Dropping our reference leaves the library's count as its owner left it.
  if (h != nullptr) dlclose(h);
  return h;
}

template <typename F>
bool lookup(void* handle, const char* name, F& fn) {
  fn = reinterpret_cast<F>(real_dlsym(handle, name));
  return fn != nullptr;
}

bool lookup_api(void* h, PyApi& a) {
  // A free-threaded build (3.13t) has no GIL to stand on: leave it alone.
  if (real_dlsym(h, "_Py_MergeZeroLocalRefcount") != nullptr || real_dlsym(h, "_Py_DecRefShared") != nullptr) {
    return false;
  }
  bool ok = lookup(h, "Py_IsInitialized", a.is_initialized);
  ok &= lookup(h, "PyGILState_Check", a.gil_check);
  ok &= lookup(h, "PyGILState_GetThisThreadState", a.gilstate_tstate);
  if (!lookup(h, "PyThreadState_GetUnchecked", a.current_tstate)) {
    ok &= lookup(h, "_PyThreadState_UncheckedGet", a.current_tstate);
  }
  ok &= lookup(h, "PyThreadState_GetInterpreter", a.tstate_interp);
  ok &= lookup(h, "PyInterpreterState_Main", a.main_interp);
  ok &= lookup(h, "PyEval_GetFrame", a.get_frame);
  ok &= lookup(h, "PyFrame_GetCode", a.frame_code);  // 3.9+
  ok &= lookup(h, "PyFrame_GetBack", a.frame_back);  // 3.9+
  ok &= lookup(h, "PyFrame_GetLineNumber", a.frame_line);
  ok &= lookup(h, "Py_DecRef", a.decref);
  ok &= lookup(h, "PyObject_GetAttrString", a.getattr);
  ok &= lookup(h, "PyUnicode_AsUTF8", a.as_utf8);
  ok &= lookup(h, "PyErr_Fetch", a.err_fetch);
  ok &= lookup(h, "PyErr_Restore", a.err_restore);
  if (!ok) return false;
  if (!lookup(h, "Py_IsFinalizing", a.is_finalizing)) lookup(h, "_Py_IsFinalizing", a.is_finalizing);
  lookup(h, "PyFrame_GetLasti", a.frame_lasti);
  if (!lookup(h, "PyGC_Disable", a.gc_disable) || !lookup(h, "PyGC_Enable", a.gc_enable)) {
    a.gc_disable = nullptr;
    a.gc_enable = nullptr;
  }
  if (!lookup(h, "PyErr_GetRaisedException", a.err_get_raised) ||
      !lookup(h, "PyErr_SetRaisedException", a.err_set_raised)) {
    a.err_get_raised = nullptr;
    a.err_set_raised = nullptr;
  }
  // All from one object: two interpreters' halves must never be mixed.
  Dl_info first, other;
  if (dladdr(reinterpret_cast<void*>(a.is_initialized), &first) == 0) return false;
  for (void* fn : {reinterpret_cast<void*>(a.get_frame), reinterpret_cast<void*>(a.frame_back),
                   reinterpret_cast<void*>(a.gil_check), reinterpret_cast<void*>(a.decref)}) {
    if (dladdr(fn, &other) == 0 || other.dli_fbase != first.dli_fbase) return false;
  }
  return true;
}

void find_eval_range(void* h) {
  void* eval = real_dlsym(h, "_PyEval_EvalFrameDefault");
  Dl_info info;
  void* entry = nullptr;  // the ElfW(Sym) of the nearest symbol
  if (eval == nullptr || dladdr1(eval, &info, &entry, RTLD_DL_SYMENT) == 0 || entry == nullptr) return;
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  if (sym->st_size == 0 || info.dli_saddr != eval) {
    return;
  }
  const auto begin = reinterpret_cast<uintptr_t>(eval);
  g_eval_begin.store(begin, std::memory_order_relaxed);
  g_eval_end.store(begin + sym->st_size, std::memory_order_relaxed);
}

const PyApi* resolve() {
  std::unique_lock<std::mutex> lock(g_resolve_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return nullptr;  // another thread is looking
  if (const PyApi* a = g_api.load(std::memory_order_acquire)) return a;
  unsigned long long adds = 0;
  dl_iterate_phdr(first_object_adds, &adds);
  if (g_tried && adds != 0 && adds == g_tried_at_adds) return nullptr;  // nothing new loaded
  g_tried = true;
  g_tried_at_adds = adds;

  void* h = RTLD_DEFAULT;
  if (real_dlsym(RTLD_DEFAULT, "Py_IsInitialized") == nullptr && (h = local_libpython()) == nullptr) return nullptr;
  PyApi a{};
  if (!lookup_api(h, a)) return nullptr;
  a.layout = find_layout(h, a);
  find_eval_range(h);
  g_api_storage = a;
  g_api.store(&g_api_storage, std::memory_order_release);
  return &g_api_storage;
}

// The hot path's first step: a load and a branch once found; while not, a
// thread-local countdown between looks.
inline const PyApi* api() {
  const PyApi* a = g_api.load(std::memory_order_acquire);
  if (__builtin_expect(a != nullptr, 1)) return a;
  if (__builtin_expect(t_until_retry != 0, 1)) {
    --t_until_retry;
    return nullptr;
  }
  t_until_retry = kRetryEvery - 1;
  return resolve();
}

// ---- Code objects -----------------------------------------------------------
//
// Code object → id. Only touched by a thread that holds the main
// interpreter's GIL, so the GIL is its lock. No interpreter call is made
// while the table is being changed (another thread may take the GIL during
// one), so it is consistent whenever the GIL can change hands.

constexpr uint32_t kMaxCodes = 1u << 20;

class CodeTable {
 public:
  // The id of `code`, or 0 if it has none yet.
  uint32_t find(const void* code) const {
    if (slots_ == nullptr) return 0;
    for (size_t i = slot_of(code, bits_);; i = (i + 1) & mask()) {
      if (slots_[i].code == code) return slots_[i].id;
      if (slots_[i].code == nullptr) return 0;
    }
  }

  bool full() const { return count_ >= kMaxCodes; }

  // `code` must not be in the table. False when memory is short.
  bool insert(const void* code, uint32_t id) {
    if ((count_ + 1) * 2 > capacity() && !grow()) return false;
    place(slots_, bits_, code, id);
    ++count_;
    return true;
  }

  // After the interpreter was finalized (code objects may be gone, their
  // addresses reused). Ids are not reused: the names table only grows.
  void clear() {
    if (slots_ != nullptr) std::memset(slots_, 0, capacity() * sizeof(Slot));
    count_ = 0;
  }

 private:
  struct Slot {
    const void* code;
    uint32_t id;
  };

  static size_t slot_of(const void* code, unsigned bits) {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(code) * 0x9E3779B97F4A7C15ull) >> (64 - bits));
  }
  static void place(Slot* slots, unsigned bits, const void* code, uint32_t id) {
    const size_t mask = (size_t{1} << bits) - 1;
    size_t i = slot_of(code, bits);
    while (slots[i].code != nullptr) i = (i + 1) & mask;
    slots[i] = Slot{code, id};
  }
  size_t capacity() const { return slots_ ? size_t{1} << bits_ : 0; }
  size_t mask() const { return capacity() - 1; }

  bool grow() {
    const unsigned bits = slots_ ? bits_ + 1 : 12;
    auto* fresh = static_cast<Slot*>(std::calloc(size_t{1} << bits, sizeof(Slot)));
    if (fresh == nullptr) return false;
    for (size_t i = 0; i < capacity(); ++i) {
      if (slots_[i].code != nullptr) place(fresh, bits, slots_[i].code, slots_[i].id);
    }
    std::free(slots_);
    slots_ = fresh;
    bits_ = bits;
    return true;
  }

  Slot* slots_ = nullptr;
  unsigned bits_ = 0;
  size_t count_ = 0;
};

CodeTable g_codes;                        // under the GIL
std::atomic<bool> g_codes_used{false};    // the table holds entries (read without the GIL)
std::atomic<bool> g_codes_stale{false};   // set when the interpreter was seen finalized
std::atomic<uint64_t> g_unknown{0};

// Names for the collector, id - 1 → (file, function); only grows. Never
// destroyed: the collector may read it from an exit handler.
struct CodeNames {
  std::string file, function;
};
std::mutex g_names_mutex;
std::deque<CodeNames>& names() {
  static auto* n = new std::deque<CodeNames>();
  return *n;
}

// A new id for these names, or 0.
uint32_t add_names(std::string&& file, std::string&& function) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  auto& n = names();
  if (n.size() >= kMaxCodes) return 0;
  n.push_back(CodeNames{std::move(file), std::move(function)});
  return static_cast<uint32_t>(n.size());
}

void read_string(const PyApi& a, void* obj, const char* attr, std::string& out) {
  void* s = a.getattr(obj, attr);
  const char* p = s ? a.as_utf8(s) : nullptr;
  out = p ? p : "?";
  if (s != nullptr) a.decref(s);
}

uint32_t unknown() {
  g_unknown.fetch_add(1, std::memory_order_relaxed);
  return kUnknownPythonCode;
}

// First sight of `code`: copy its names out and keep the reference we were
// handed, so that the address stays this code object's.
uint32_t first_sight(const PyApi& a, void* code) {
  if (g_codes.full()) {
    a.decref(code);
    return unknown();
  }
  uint32_t id = 0;
  try {
    std::string file, function;
    read_string(a, code, "co_filename", file);
    read_string(a, code, "co_name", function);
    // Reading ran interpreter code, during which another thread may have had
    // the GIL and named this code object.
    if (const uint32_t seen = g_codes.find(code)) {
      a.decref(code);
      return seen;
    }
    id = add_names(std::move(file), std::move(function));
  } catch (...) {
    id = 0;
  }
  if (id == 0 || !g_codes.insert(code, id)) {
    a.decref(code);
    return unknown();
  }
  g_codes_used.store(true, std::memory_order_relaxed);
  return id;
}

// Takes the reference `code`.
inline uint32_t code_id(const PyApi& a, void* code) {
  if (code == nullptr) return unknown();
  if (const uint32_t id = g_codes.find(code)) {
    a.decref(code);
    return id;
  }
  return first_sight(a, code);
}

// (code id, instruction offset) → line, direct-mapped, under the GIL like the
// code table. From 3.11 on PyFrame_GetLineNumber walks the code object's line
// table from its start on every call, most of a capture's cost without this.
class LineCache {
 public:
  // 0 when not known (lines are 1-based).
  uint32_t find(uint32_t id, int lasti) const {
    if (entries_ == nullptr) return 0;
    const Entry& e = entries_[slot_of(key(id, lasti))];
    return e.key == key(id, lasti) ? e.line : 0;
  }
  void store(uint32_t id, int lasti, uint32_t line) {
    if (entries_ == nullptr && (entries_ = static_cast<Entry*>(std::calloc(kSize, sizeof(Entry)))) == nullptr) return;
    entries_[slot_of(key(id, lasti))] = Entry{key(id, lasti), line};
  }
  void clear() {
    if (entries_ != nullptr) std::memset(entries_, 0, kSize * sizeof(Entry));
  }

 private:
  static constexpr unsigned kBits = 13;
  static constexpr size_t kSize = size_t{1} << kBits;
  struct Entry {
    uint64_t key;  // 0: empty (code ids start at 1)
    uint32_t line;
  };
  static uint64_t key(uint32_t id, int lasti) { return (static_cast<uint64_t>(id) << 32) | static_cast<uint32_t>(lasti); }
  static size_t slot_of(uint64_t key) { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - kBits)); }

  Entry* entries_ = nullptr;
};

LineCache g_lines;  // under the GIL

inline uint32_t line_of(const PyApi& a, void* frame, uint32_t id) {
  if (a.frame_lasti == nullptr || id == kUnknownPythonCode) {
    const int line = a.frame_line(frame);
    return line > 0 ? static_cast<uint32_t>(line) : 0;
  }
  const int lasti = a.frame_lasti(frame);
  if (lasti < 0) return 0;  // not started
  if (const uint32_t line = g_lines.find(id, lasti)) return line;
  const int line = a.frame_line(frame);
  if (line <= 0) return 0;
  g_lines.store(id, lasti, static_cast<uint32_t>(line));
  return static_cast<uint32_t>(line);
}

// Any exception pending when the CUDA call was made stays pending, and none
// of ours leaks out.
class SavedError {
 public:
  explicit SavedError(const PyApi& a) : a_(a) {
    if (a_.err_get_raised != nullptr) {
      value_ = a_.err_get_raised();
    } else {
      a_.err_fetch(&type_, &value_, &traceback_);
    }
  }
  ~SavedError() {
    if (a_.err_set_raised != nullptr) {
      a_.err_set_raised(value_);
    } else {
      a_.err_restore(type_, value_, traceback_);
    }
  }
  SavedError(const SavedError&) = delete;
  SavedError& operator=(const SavedError&) = delete;

 private:
  const PyApi& a_;
  void* type_ = nullptr;
  void* value_ = nullptr;
  void* traceback_ = nullptr;
};

// From 3.11 on, PyFrame_GetBack makes frame objects, and in 3.11 making one
// can run a garbage collection then and there: finalizers, arbitrary Python
// code (a CUDA call of its own, inside the one being recorded, or a GIL
// switch). The collector is off while we walk.
class NoGc {
 public:
  explicit NoGc(const PyApi& a) : a_(a), was_enabled_(a.gc_disable != nullptr && a.gc_disable() != 0) {}
  ~NoGc() {
    if (was_enabled_) a_.gc_enable();
  }
  NoGc(const NoGc&) = delete;
  NoGc& operator=(const NoGc&) = delete;

 private:
  const PyApi& a_;
  bool was_enabled_;
};

// The caller holds the main interpreter's GIL.
size_t walk(const PyApi& a, uint64_t* out, size_t max) {
  if (__builtin_expect(g_codes_stale.load(std::memory_order_relaxed), 0)) {
    g_codes.clear();
    g_lines.clear();
    g_codes_used.store(false, std::memory_order_relaxed);
    g_codes_stale.store(false, std::memory_order_relaxed);
  }
  SavedError saved(a);
  NoGc no_gc(a);
  size_t n = 0;
  void* frame = a.get_frame();  // borrowed: the running frame keeps it alive
  bool owned = false;
  while (frame != nullptr && n < max) {
    const uint32_t id = code_id(a, a.frame_code(frame));
    out[n++] = kPythonFrameBit | (static_cast<uint64_t>(id) << 32) | line_of(a, frame, id);
    void* back = a.frame_back(frame);
    if (owned) a.decref(frame);
    frame = back;
    owned = true;
  }
  if (owned && frame != nullptr) a.decref(frame);
  return n;
}

// ---- Without the GIL: the frame chain read in place -------------------------
//
// A thread that released the GIL is inside C code: until it takes the GIL
// back its own frames cannot change, and each frame holds a strong reference
// to its code object, so the chain can be read where it lies. What the C API
// would work out (names, lines) is worked out here from the objects' fields,
// with the layout of the running version. Nothing of the interpreter's is
// ever written, no reference count touched, no interpreter function called
// but a few that only read a flag or a thread-local. Every pointer is checked
// to be plausible (and of the expected type, for objects) before it is
// followed, and the walk is bounded.

enum class FrameKind : uint8_t {
  kObject,       // PyFrameObject, chained by f_back (3.9, 3.10)
  kInterpreter,  // _PyInterpreterFrame, chained by previous (3.11+)
};

enum class LineTable : uint8_t {
  kLnotab,     // co_lnotab, (bytecode delta, line delta) pairs (3.9; Objects/lnotab_notes.txt)
  kPep626,     // co_linetable, PEP 626 (bytecode delta, line delta or -128) pairs (3.10)
  kLocations,  // co_linetable, location entries (3.11+; Objects/locations.md)
};

// Byte offsets of the fields read, per minor version, from the headers each
// version installs (include/python3.X/...). -1: the version has no such field.
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
  // PyASCIIObject / PyCompactUnicodeObject (cpython/unicodeobject.h)
  int16_t str_ascii_data;    // sizeof(PyASCIIObject): a compact ASCII string's characters
  int16_t str_utf8_length;   // utf8_length
  int16_t str_utf8;          // utf8: a compact non-ASCII string's UTF-8 form, once made
};

constexpr Layout k39 = {
    .minor = 9, .frames = FrameKind::kObject, .lines = LineTable::kLnotab,
    .ts_interp = 16, .ts_frame = 24, .cframe_top = -1,
    .f_back = 24, .f_code = 32, .f_instr = 104, .f_owner = -1,
    .co_firstlineno = 40, .co_filename = 104, .co_name = 112, .co_lines = 120, .co_code = 48,
    .co_firsttraceable = -1, .co_code_adaptive = -1,
    .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56};
constexpr Layout k310 = {
    .minor = 10, .frames = FrameKind::kObject, .lines = LineTable::kPep626,
    .ts_interp = 16, .ts_frame = 24, .cframe_top = -1,
    .f_back = 24, .f_code = 32, .f_instr = 96, .f_owner = -1,
    .co_firstlineno = 40, .co_filename = 104, .co_name = 112, .co_lines = 120, .co_code = 48,
    .co_firsttraceable = -1, .co_code_adaptive = -1,
    .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56};
constexpr Layout k311 = {
    .minor = 11, .frames = FrameKind::kInterpreter, .lines = LineTable::kLocations,
    .ts_interp = 16, .ts_frame = 56, .cframe_top = 8,
    .f_back = 48, .f_code = 32, .f_instr = 56, .f_owner = 69,
    .co_firstlineno = 72, .co_filename = 112, .co_name = 120, .co_lines = 136, .co_code = -1,
    .co_firsttraceable = 168, .co_code_adaptive = 184,
    .str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56};
constexpr Layout k312 = {
    .minor = 12, .frames = FrameKind::kInterpreter, .lines = LineTable::kLocations,
    .ts_interp = 16, .ts_frame = 56, .cframe_top = 0,
    .f_back = 8, .f_code = 0, .f_instr = 56, .f_owner = 70,
    .co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_lines = 136, .co_code = -1,
    .co_firsttraceable = 176, .co_code_adaptive = 192,
    .str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48};
constexpr Layout k313 = {
    .minor = 13, .frames = FrameKind::kInterpreter, .lines = LineTable::kLocations,
    .ts_interp = 16, .ts_frame = 72, .cframe_top = -1,
    .f_back = 8, .f_code = 0, .f_instr = 56, .f_owner = 70,
    .co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_lines = 136, .co_code = -1,
    .co_firsttraceable = 184, .co_code_adaptive = 200,
    .str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48};
constexpr const Layout* kLayouts[] = {&k39, &k310, &k311, &k312, &k313};

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

constexpr int64_t kMaxName = 1 << 16;       // longer names are not copied ("<?>")
constexpr int64_t kMaxLineTable = 1 << 20;  // a longer line table is not copied (line 0)

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

// 3.13 publishes its own offsets (_Py_DebugOffsets, internal/pycore_runtime.h,
// at the start of _PyRuntime) for out-of-process tools: they must agree with
// ours. The numbers on the left are where each entry lies in that struct.
bool debug_offsets_agree(void* h, const Layout& l) {
  const void* rt = real_dlsym(h, "_PyRuntime");
  if (rt == nullptr || std::memcmp(rt, "xdebugpy", 8) != 0) return false;
  const std::pair<int, int> expected[] = {
      {176, l.ts_interp},   {184, l.ts_frame},       {232, l.f_back},           {240, l.f_code},
      {248, l.f_instr},     {264, l.f_owner},        {280, l.co_filename},      {288, l.co_name},
      {304, l.co_lines},    {312, l.co_firstlineno}, {344, l.co_code_adaptive}, {360, kObType},
      {520, kObSize},       {528, kBytesData},       {544, kStrState},          {552, kStrLength},
      {560, l.str_ascii_data},
  };
  if (field<uint64_t>(rt, 8) >> 16 != 0x030D || field<uint64_t>(rt, 16) != 0) return false;  // version, free_threaded
  for (const auto& [at, offset] : expected) {
    if (field<uint64_t>(rt, at) != static_cast<uint64_t>(offset)) return false;
  }
  return true;
}

const Layout* find_layout(void* h, PyApi& a) {
  // Debug builds: Py_TRACE_REFS adds two pointers to every object's header,
  // and nothing here is checked against Py_DEBUG's layouts.
  if (real_dlsym(h, "_Py_NegativeRefcount") != nullptr || real_dlsym(h, "_Py_PrintReferences") != nullptr) {
    return nullptr;
  }
  int major = 0, minor = 0;
  if (const auto* hex = static_cast<const unsigned long*>(real_dlsym(h, "Py_Version"))) {  // 3.11+
    major = static_cast<int>(*hex >> 24);
    minor = static_cast<int>((*hex >> 16) & 0xff);
  } else if (auto version = reinterpret_cast<const char* (*)()>(real_dlsym(h, "Py_GetVersion"))) {
    if (std::sscanf(version(), "%d.%d", &major, &minor) != 2) return nullptr;
  }
  const Layout* layout = nullptr;
  for (const Layout* l : kLayouts) {
    if (major == 3 && l->minor == minor) layout = l;
  }
  if (layout == nullptr || a.is_finalizing == nullptr) return nullptr;
  a.code_type = real_dlsym(h, "PyCode_Type");
  a.frame_type = real_dlsym(h, "PyFrame_Type");
  a.unicode_type = real_dlsym(h, "PyUnicode_Type");
  a.bytes_type = real_dlsym(h, "PyBytes_Type");
  if (a.code_type == nullptr || a.frame_type == nullptr || a.unicode_type == nullptr || a.bytes_type == nullptr) {
    return nullptr;
  }
  Dl_info first, other;
  if (dladdr(reinterpret_cast<void*>(a.is_initialized), &first) == 0 || dladdr(a.code_type, &other) == 0 ||
      other.dli_fbase != first.dli_fbase) {
    return nullptr;
  }
  if (minor == 13 && !debug_offsets_agree(h, *layout)) return nullptr;
  return layout;
}

// What tells a code object from another that later took its address: the
// objects it points to, and what cheaply tells their contents apart (a
// string's length, last bytes and hash, once computed; the line table's size
// and first bytes), since those may have been freed and reallocated in the
// same places too.
struct CodeKey {
  const void* code;
  const void* filename;
  const void* name;
  const void* lines;
  uint64_t extra;       // co_code (3.9, 3.10) / the bytecode's size in code units (3.11+)
  uint64_t file_tail;   // the last (up to) 8 bytes of a compact ASCII string
  uint64_t name_tail;
  uint64_t name_hash;   // -1 until computed
  uint64_t lines_head;  // the first (up to) 8 bytes
  int32_t firstlineno;
  uint32_t file_length;
  uint32_t name_length;
  uint32_t lines_size;

  bool operator==(const CodeKey& o) const {
    return code == o.code && filename == o.filename && name == o.name && lines == o.lines && extra == o.extra &&
           file_tail == o.file_tail && name_tail == o.name_tail && name_hash == o.name_hash &&
           lines_head == o.lines_head && firstlineno == o.firstlineno && file_length == o.file_length &&
           name_length == o.name_length && lines_size == o.lines_size;
  }
};

struct CodeKeyHash {
  size_t operator()(const CodeKey& k) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(k.code) ^ k.name_tail ^ k.file_tail) *
                                   0x9E3779B97F4A7C15ull >> 16);
  }
};

// Up to 8 bytes from `p`, `n` bytes readable there, as one number, with
// loads of fixed size only (no byte past the n-th is read).
inline uint64_t load_upto8(const char* p, int64_t n) {
  uint32_t lo = 0, hi = 0;
  if (n >= 8) {
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
  } else if (n >= 4) {
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
  } else if (n > 0) {
    lo = static_cast<unsigned char>(p[0]) | static_cast<unsigned char>(p[n / 2]) << 8 |
         static_cast<unsigned>(static_cast<unsigned char>(p[n - 1])) << 16;
  }
  return static_cast<uint64_t>(hi) << 32 | lo;
}

// A str's length and last bytes (compact ASCII only; 0 otherwise). False if
// `s` is not a str.
[[gnu::always_inline]] inline bool str_marks(const Layout& l, const PyApi& a, const void* s, uint32_t& length,
                                             uint64_t& tail) {
  length = 0;
  tail = 0;
  if (s == nullptr || field<const void*>(s, kObType) != a.unicode_type) return false;
  const auto n = field<int64_t>(s, kStrLength);
  length = static_cast<uint32_t>(n);
  if ((field<uint32_t>(s, kStrState) & (kStrCompact | kStrAscii)) == (kStrCompact | kStrAscii) && n > 0 &&
      n <= kMaxName) {
    const int64_t k = n < 8 ? n : 8;
    tail = load_upto8(static_cast<const char*>(s) + l.str_ascii_data + n - k, k);
  }
  return true;
}

// `code` is a code object (checked). The objects it points to are alive as
// long as it is.
[[gnu::always_inline]] inline CodeKey key_of(const Layout& l, const PyApi& a, const void* code) {
  CodeKey k;
  k.code = code;
  k.filename = field<const void*>(code, l.co_filename);
  k.name = field<const void*>(code, l.co_name);
  k.lines = field<const void*>(code, l.co_lines);
  k.extra = l.co_code >= 0 ? field<uint64_t>(code, l.co_code) : field<uint64_t>(code, kObSize);
  k.firstlineno = field<int32_t>(code, l.co_firstlineno);
  str_marks(l, a, k.filename, k.file_length, k.file_tail);
  // The file name's hash is left out: computed late, it would make a known
  // code object look new once (the name's is computed when it is interned).
  k.name_hash = str_marks(l, a, k.name, k.name_length, k.name_tail) ? field<uint64_t>(k.name, kStrHash) : 0;
  k.lines_head = 0;
  k.lines_size = 0;
  if (k.lines != nullptr && field<const void*>(k.lines, kObType) == a.bytes_type) {
    const auto size = field<int64_t>(k.lines, kObSize);
    k.lines_size = static_cast<uint32_t>(size);
    k.lines_head = load_upto8(static_cast<const char*>(k.lines) + kBytesData, size < 8 ? size : 8);
  }
  return k;
}

// What a code object seen without the GIL is, copied out at first sight:
// shared by all threads, never changed nor freed once made.
struct CodeInfo {
  uint32_t id;           // kUnknownPythonCode: no id (the table is full)
  int32_t firstlineno;
  uint32_t code_bytes;   // the bytecode's size; 0: not known
  uint32_t table_size;
  LineTable kind;
  const unsigned char* table() const { return reinterpret_cast<const unsigned char*>(this + 1); }
};

const CodeInfo kNoInfo{kUnknownPythonCode, 0, 0, 0, LineTable::kLnotab};

// PyCode_Addr2Line for each format: the line of the instruction at byte
// offset `addr` (-1: not started), or -1 when it has none.
int lnotab_line(const unsigned char* p, size_t n, int line, int addr) {
  int start = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    start += p[i];
    if (start > addr) break;
    line += static_cast<signed char>(p[i + 1]);
  }
  return line;
}

int pep626_line(const unsigned char* p, size_t n, int line, int addr) {
  if (addr < 0) return line;
  int end = 0;
  for (size_t i = 0; i + 1 < n; i += 2) {
    end += p[i];
    const auto delta = static_cast<signed char>(p[i + 1]);
    const bool none = delta == -128;
    if (!none) line += delta;
    if (addr < end) return none ? -1 : line;  // ranges of length 0 never hold it
  }
  return -1;
}

int location_line(const unsigned char* p, size_t n, int line, int addr) {
  if (addr < 0) return line;
  int end = 0;
  size_t i = 0;
  while (i < n) {
    const unsigned char first = p[i++];
    const int code = (first >> 3) & 15;
    if (code == 13 || code == 14) {  // no columns / long form: the line delta is a signed varint
      unsigned value = 0, shift = 0;
      unsigned char b = 64;
      while ((b & 64) != 0 && i < n && shift < 32) {
        b = p[i++];
        value |= static_cast<unsigned>(b & 63) << shift;
        shift += 6;
      }
      line += (value & 1) ? -static_cast<int>(value >> 1) : static_cast<int>(value >> 1);
    } else if (code >= 10 && code <= 12) {  // one-line forms
      line += code - 10;
    }
    end += ((first & 7) + 1) * 2;
    if (addr < end) return code == 15 ? -1 : line;  // 15: no location
    while (i < n && (p[i] & 128) == 0) ++i;           // the rest of the entry
  }
  return -1;
}

int line_at(const CodeInfo& c, int addr) {
  if (c.code_bytes != 0 && addr >= static_cast<int64_t>(c.code_bytes)) return -1;
  switch (c.kind) {
    case LineTable::kLnotab: return lnotab_line(c.table(), c.table_size, c.firstlineno, addr);
    case LineTable::kPep626: return pep626_line(c.table(), c.table_size, c.firstlineno, addr);
    case LineTable::kLocations: return location_line(c.table(), c.table_size, c.firstlineno, addr);
  }
  return -1;
}

// A copy of a str's characters: compact ASCII, or compact with its UTF-8
// form already made; anything else "<?>".
std::string read_str(const Layout& l, const PyApi& a, const void* s) {
  if (!is_a(s, a.unicode_type)) return "<?>";
  const uint32_t state = field<uint32_t>(s, kStrState);
  if ((state & kStrCompact) == 0) return "<?>";
  const char* data;
  int64_t length;
  if ((state & kStrAscii) != 0) {
    data = static_cast<const char*>(s) + l.str_ascii_data;
    length = field<int64_t>(s, kStrLength);
  } else {
    data = field<const char*>(s, l.str_utf8);
    length = field<int64_t>(s, l.str_utf8_length);
  }
  if (data == nullptr || length < 0 || length > kMaxName) return "<?>";
  return std::string(data, static_cast<size_t>(length));
}

// Code objects seen without the GIL, all threads': CodeKey → CodeInfo. Taken
// only on a miss of the thread's own cache. Never destroyed (the collector may
// run from an exit handler); forgotten when the interpreter was finalized.
std::mutex g_released_mutex;
std::atomic<uint32_t> g_released_epoch{1};  // + 1 each time the interpreter is seen finalized
std::atomic<bool> g_released_used{false};
uint32_t g_released_table_epoch = 0;         // under g_released_mutex

std::unordered_map<CodeKey, const CodeInfo*, CodeKeyHash>& released_codes() {
  static auto* m = new std::unordered_map<CodeKey, const CodeInfo*, CodeKeyHash>();
  return *m;
}

// First sight of a code object on this path (the calling thread's frame
// keeps it alive meanwhile): its names and line table are copied out.
const CodeInfo* released_first_sight(const Layout& l, const PyApi& a, const CodeKey& k) {
  try {
    std::lock_guard<std::mutex> lock(g_released_mutex);
    auto& codes = released_codes();
    const uint32_t epoch = g_released_epoch.load(std::memory_order_relaxed);
    if (g_released_table_epoch != epoch) {
      codes.clear();
      g_released_table_epoch = epoch;
    }
    if (auto it = codes.find(k); it != codes.end()) return it->second;
    if (codes.size() >= kMaxCodes) return &kNoInfo;
    const unsigned char* table = nullptr;
    int64_t table_size = 0;
    if (is_a(k.lines, a.bytes_type)) {
      table_size = field<int64_t>(k.lines, kObSize);
      table = static_cast<const unsigned char*>(k.lines) + kBytesData;
      if (table_size < 0 || table_size > kMaxLineTable) table_size = 0;
    }
    int64_t code_bytes = 0;
    if (l.co_code >= 0) {
      const void* bytecode = reinterpret_cast<const void*>(k.extra);
      if (is_a(bytecode, a.bytes_type)) code_bytes = field<int64_t>(bytecode, kObSize);
    } else {
      code_bytes = static_cast<int64_t>(k.extra) * 2;  // code units of 2 bytes
    }
    auto* info = static_cast<CodeInfo*>(std::malloc(sizeof(CodeInfo) + static_cast<size_t>(table_size)));
    if (info == nullptr) return &kNoInfo;
    info->firstlineno = static_cast<int32_t>(k.firstlineno);
    info->code_bytes = code_bytes > 0 && code_bytes < INT32_MAX ? static_cast<uint32_t>(code_bytes) : 0;
    info->table_size = static_cast<uint32_t>(table_size);
    info->kind = l.lines;
    if (table_size > 0) std::memcpy(info + 1, table, static_cast<size_t>(table_size));
    info->id = add_names(read_str(l, a, k.filename), read_str(l, a, k.name));
    codes.emplace(k, info);
    g_released_used.store(true, std::memory_order_relaxed);
    return info;
  } catch (...) {
    return &kNoInfo;
  }
}

// Each thread's own cache in front of the shared table: code objects (4-way
// sets) and (code, instruction) → line (direct-mapped). Made on the thread's
// first capture without the GIL, freed when it ends.
constexpr size_t kCodeSets = 64;
constexpr size_t kCodeWays = 4;
constexpr size_t kLineSlots = 1024;

struct ThreadCache {
  uint32_t epoch;
  uint32_t victim;
  struct CodeSlot {
    CodeKey key;
    const CodeInfo* info;
  } codes[kCodeSets * kCodeWays];
  struct LineSlot {
    const CodeInfo* info;
    int32_t addr;
    uint32_t line;
  } lines[kLineSlots];
};

__thread ThreadCache* t_cache __attribute__((tls_model("initial-exec")));
pthread_key_t g_cache_key;
bool g_cache_key_made = false;
std::once_flag g_cache_key_once;

void free_thread_cache(void* cache) {
  std::free(cache);
  t_cache = nullptr;
}

ThreadCache* thread_cache() {
  if (__builtin_expect(t_cache != nullptr, 1)) return t_cache;
  std::call_once(g_cache_key_once, [] { g_cache_key_made = pthread_key_create(&g_cache_key, free_thread_cache) == 0; });
  auto* cache = static_cast<ThreadCache*>(std::calloc(1, sizeof(ThreadCache)));
  if (cache == nullptr) return nullptr;
  if (g_cache_key_made) pthread_setspecific(g_cache_key, cache);
  t_cache = cache;
  return cache;
}

[[gnu::always_inline]] inline const CodeInfo& code_info(const Layout& l, const PyApi& a, ThreadCache& tc,
                                                        const void* code) {
  const CodeKey k = key_of(l, a, code);
  ThreadCache::CodeSlot* set =
      &tc.codes[(reinterpret_cast<uintptr_t>(code) * 0x9E3779B97F4A7C15ull >> 58) % kCodeSets * kCodeWays];
  for (size_t w = 0; w < kCodeWays; ++w) {
    if (set[w].info != nullptr && set[w].key == k) return *set[w].info;
  }
  const CodeInfo* info = released_first_sight(l, a, k);
  set[tc.victim++ % kCodeWays] = ThreadCache::CodeSlot{k, info};
  return *info;
}

inline uint32_t released_line(ThreadCache& tc, const CodeInfo& c, int addr) {
  const uint64_t h = (reinterpret_cast<uintptr_t>(&c) ^ (static_cast<uint64_t>(static_cast<uint32_t>(addr)) << 20)) *
                     0x9E3779B97F4A7C15ull;
  ThreadCache::LineSlot& slot = tc.lines[h >> 54];
  static_assert(kLineSlots == 1024, "h >> 54 is 10 bits");
  if (slot.info == &c && slot.addr == addr) return slot.line;
  const int line = line_at(c, addr);
  slot = ThreadCache::LineSlot{&c, addr, line > 0 ? static_cast<uint32_t>(line) : 0};
  return slot.line;
}

// The calling thread's frames, from its thread state `ts`, which it does not
// hold the GIL with; one copy per version, its offsets constants.
template <const Layout& l>
size_t walk_released(const PyApi& a, ThreadCache& tc, const void* ts, uint64_t* out, size_t max) {
  const uint32_t epoch = g_released_epoch.load(std::memory_order_relaxed);
  if (__builtin_expect(tc.epoch != epoch, 0)) {
    std::memset(tc.codes, 0, sizeof tc.codes);
    std::memset(tc.lines, 0, sizeof tc.lines);
    tc.epoch = epoch;
  }
  const void* f = field<const void*>(ts, l.ts_frame);
  if constexpr (l.cframe_top >= 0) f = plausible(f) ? field<const void*>(f, l.cframe_top) : nullptr;
  size_t n = 0;
  // A bound on the steps, skipped frames included, also stops a cycle.
  for (size_t steps = 4 * max + 64; f != nullptr && n < max && steps != 0; --steps) {
    // Finalization frees other threads' states (and, from 3.11, their frames):
    // stop as soon as it begins.
    if (!plausible(f) || a.is_finalizing()) return 0;
    const void* code = field<const void*>(f, l.f_code);
    const void* back = field<const void*>(f, l.f_back);
    int addr;  // byte offset of the instruction, -1: not started
    if constexpr (l.frames == FrameKind::kObject) {
      if (field<const void*>(f, kObType) != a.frame_type || !is_a(code, a.code_type)) break;
      const int lasti = field<int32_t>(f, l.f_instr);
      addr = l.lines == LineTable::kPep626 && lasti >= 0 ? lasti * 2 : lasti;  // 3.10 counts code units
    } else {
      const auto owner = field<signed char>(f, l.f_owner);
      if (owner == kOwnedByCStack && l.minor >= 12) {
        f = back;
        continue;
      }
      if (owner < 0 || owner > kOwnedByCStack || !is_a(code, a.code_type)) break;
      // _PyFrame_IsIncomplete: a frame still being set up is not shown.
      const char* bytecode = static_cast<const char*>(code) + l.co_code_adaptive;
      const char* instr = field<const char*>(f, l.f_instr);
      if (owner != kOwnedByGenerator && instr < bytecode + 2 * int64_t{field<int32_t>(code, l.co_firsttraceable)}) {
        f = back;
        continue;
      }
      const ptrdiff_t d = instr - bytecode;
      addr = d >= 0 && d < INT32_MAX ? static_cast<int>(d) : -1;
    }
    const CodeInfo& info = code_info(l, a, tc, code);
    if (info.id == kUnknownPythonCode) unknown();
    out[n++] = kPythonFrameBit | (static_cast<uint64_t>(info.id) << 32) | released_line(tc, info, addr);
    f = back;
  }
  return n;
}

// `ts` is this thread's state, not the one it runs with (`cur`).
size_t capture_released(const PyApi& a, const void* ts, const void* cur, uint64_t* out, size_t max) {
  const Layout* l = a.layout;
  if (l == nullptr || !plausible(ts)) return 0;
  if (l->minor >= 12) {
    // `cur` is this thread's: another thread state of its own (a
    // sub-interpreter's) runs here.
    if (cur != nullptr) return 0;
  } else if (cur != nullptr && a.gil_check()) {
    // `cur` is whichever thread holds the GIL, and PyGILState_Check answers 1
    // although `ts` is not it: a sub-interpreter was created, and the holder
    // may be this thread, in it.
    return 0;
  }
  if (field<const void*>(ts, l->ts_interp) != a.main_interp()) return 0;
  ThreadCache* tc = thread_cache();
  if (tc == nullptr) return 0;
  switch (l->minor) {
    case 9: return walk_released<k39>(a, *tc, ts, out, max);
    case 10: return walk_released<k310>(a, *tc, ts, out, max);
    case 11: return walk_released<k311>(a, *tc, ts, out, max);
    case 12: return walk_released<k312>(a, *tc, ts, out, max);
    case 13: return walk_released<k313>(a, *tc, ts, out, max);
  }
  return 0;
}

}  // namespace

size_t capture_python_frames(uint64_t* out, size_t max) {
  const PyApi* a = api();
  if (a == nullptr || max == 0) return 0;
  if (!a->is_initialized()) {
    // Finalized (or not yet initialized): code objects we hold or saw may be gone.
    if (g_codes_used.load(std::memory_order_relaxed)) g_codes_stale.store(true, std::memory_order_relaxed);
    if (g_released_used.load(std::memory_order_relaxed) && g_released_used.exchange(false)) {
      g_released_epoch.fetch_add(1, std::memory_order_relaxed);
    }
    return 0;
  }
  if (a->is_finalizing != nullptr && a->is_finalizing()) return 0;
  void* ts = a->gilstate_tstate();
  if (ts == nullptr) return 0;  // a thread Python never saw
  void* cur = a->current_tstate();
  if (ts != cur) return capture_released(*a, ts, cur, out, max);
  // This thread holds the GIL. PyGILState_Check answers 1 for every thread
  // once a sub-interpreter was created, hence the comparison above; the
  // thread state must also be the main interpreter's, whose GIL guards the
  // code table.
  if (!a->gil_check() || a->tstate_interp(ts) != a->main_interp()) return 0;
  return walk(*a, out, max);
}

bool python_code_info(uint32_t code_id, std::string& file, std::string& function) {
  if (code_id == kUnknownPythonCode) return false;
  try {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    const auto& n = names();
    if (code_id > n.size()) return false;
    const CodeNames& c = n[code_id - 1];
    file = c.file;
    function = c.function;
    return true;
  } catch (...) {
    return false;
  }
}

bool is_python_eval_pc(uint64_t pc) {
  if (api() == nullptr) return false;
  return pc >= g_eval_begin.load(std::memory_order_relaxed) && pc < g_eval_end.load(std::memory_order_relaxed);
}

uint64_t python_unknown_frames() { return g_unknown.load(std::memory_order_relaxed); }

}  // namespace nb::shim
