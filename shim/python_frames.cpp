// capture_python_frames and its neighbours (shim/python_frames.h): finding
// the interpreter, choosing between the two ways of capturing
// (python_frames_gil.cpp, python_frames_released.cpp), and the names of the
// code objects both hand ids for.
#include "shim/python_frames.h"

#include <dlfcn.h>
#include <link.h>  // dl_iterate_phdr, ElfW

#include <atomic>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "shim/python_frames_layouts.h"
#include "shim/python_frames_shared.h"
#include "shim/real_functions.h"

namespace nb::shim {
namespace python {
namespace {

// ---- Finding the interpreter ------------------------------------------------
//
// Looked up with RTLD_DEFAULT (a python executable that exports its symbols,
// or a libpython loaded globally), else in a libpython3.* loaded locally.
// Until one is found, each thread looks again every kRetryEvery calls, and
// only does the look-up when objects were loaded since the last one.

constexpr uint32_t kRetryEvery = 1024;

// Made on first use, never destroyed: the collector may read it from an
// exit handler.
PythonCodes& codes() {
  static auto* c = new PythonCodes;
  return *c;
}

PyApi g_api_storage;  // written once, before g_api publishes it
std::atomic<const PyApi*> g_api{nullptr};

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
  codes().set_eval_range(begin, begin + sym->st_size);
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
  a.runtime = find_runtime(h, a, a.layout);
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

// Whether this thread's state is read through _PyRuntime's key (once
// PyApi::runtime was found): 0 not known yet, 1 yes, -1 no. Decided at the
// first capture on a thread Python knows, by comparing the key's answer with
// PyGILState_GetThisThreadState's: the key lies past structs whose size a
// build could change (python_frames_layouts.h).
std::atomic<int> g_tss_read{0};

inline void* thread_state(const PyApi& a) {
  const int how = g_tss_read.load(std::memory_order_relaxed);
  if (__builtin_expect(how > 0, 1)) return runtime_thread_state(a.runtime);
  void* ts = a.gilstate_tstate();
  if (how == 0 && ts != nullptr && a.runtime != nullptr) {
    g_tss_read.store(runtime_thread_state(a.runtime) == ts ? 1 : -1, std::memory_order_relaxed);
  }
  return ts;
}

// ---- Code names -------------------------------------------------------------

std::atomic<uint64_t> g_unknown{0};

}  // namespace

uint32_t add_names(std::string&& file, std::string&& function) { return codes().add(std::move(file), std::move(function)); }

uint32_t unknown() {
  g_unknown.fetch_add(1, std::memory_order_relaxed);
  return kUnknownPythonCode;
}

}  // namespace python

size_t capture_python_frames(uint64_t* out, size_t max) {
  const python::PyApi* a = python::api();
  if (a == nullptr || max == 0) return 0;
  if (!python::initialized(*a)) {
    // Finalized (or not yet initialized): code objects we hold or saw may be gone.
    python::forget_gil_codes();
    python::forget_released_codes();
    return 0;
  }
  if (python::finalizing(*a)) return 0;
  void* ts = python::thread_state(*a);
  if (ts == nullptr) return 0;  // a thread Python never saw
  void* cur = a->current_tstate();
  if (ts != cur) return python::capture_released(*a, ts, cur, out, max);
  // This thread holds the GIL. PyGILState_Check answers 1 for every thread
  // once a sub-interpreter was created, hence the comparison above; the
  // thread state must also be the main interpreter's, whose GIL guards the
  // code table.
  if (!a->gil_check() || a->tstate_interp(ts) != python::main_interpreter(*a)) return 0;
  return python::capture_with_gil(*a, out, max);
}

const PythonCodes& python_codes() { return python::codes(); }

bool python_finalizing() {
  const python::PyApi* a = python::api();
  return a != nullptr && python::finalizing(*a);
}

bool python_flags_in_place() {
  const python::PyApi* a = python::g_api.load(std::memory_order_acquire);
  return a != nullptr && a->runtime != nullptr && python::g_tss_read.load(std::memory_order_relaxed) > 0;
}

uint64_t python_unknown_frames() { return python::g_unknown.load(std::memory_order_relaxed); }

}  // namespace nb::shim
