#include "shim/python_frames.h"

#include <dlfcn.h>
#include <link.h>  // dl_iterate_phdr, ElfW

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <utility>

#include "shim/real_functions.h"

namespace nb::shim {
namespace {

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
};

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

}  // namespace

size_t capture_python_frames(uint64_t* out, size_t max) {
  const PyApi* a = api();
  if (a == nullptr || max == 0) return 0;
  if (!a->is_initialized()) {
    // Finalized (or not yet initialized): code objects we hold may be gone.
    if (g_codes_used.load(std::memory_order_relaxed)) g_codes_stale.store(true, std::memory_order_relaxed);
    return 0;
  }
  if (a->is_finalizing != nullptr && a->is_finalizing()) return 0;
  if (!a->gil_check()) return 0;
  // PyGILState_Check answers 1 for every thread once a sub-interpreter was
  // created: also ask whether the thread state holding the GIL is this
  // thread's, and of the main interpreter (whose GIL guards the code table).
  void* ts = a->gilstate_tstate();
  if (ts == nullptr || ts != a->current_tstate() || a->tstate_interp(ts) != a->main_interp()) return 0;
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
