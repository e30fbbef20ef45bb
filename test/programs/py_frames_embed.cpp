// shim/python_frames.cpp in a program that loads libpython late, with
// dlopen, and embeds it: usage: py_frames_embed LIBPYTHON global|local [loaded|initialized]
//
// Before the load and before Py_Initialize nothing is captured (and the
// look-up is retried cheaply); a libpython loaded RTLD_LOCAL, which
// RTLD_DEFAULT cannot see, is found too; an exception pending at the capture
// stays pending; a Python call that released the GIL (PyEval_SaveThread)
// captures the same frames; after Py_FinalizeEx and a second Py_InitializeEx
// (whose key for thread states is made to differ from the first one's) the
// new code objects are named right, with and without the GIL. Prints one
// line per check; exit 1 on failure. With a third argument "initialized",
// the interpreter is looked for only once initialized (as in a Python
// program), and on 3.12 its flags are then read in place.
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "shim/python_frames.h"

namespace nb::shim {
void* real_dlsym(void* handle, const char* name) { return dlsym(handle, name); }
}  // namespace nb::shim

namespace {

void* g_py = nullptr;
int g_failed = 0;

template <typename F>
F sym(const char* name) {
  void* p = dlsym(g_py, name);
  if (p == nullptr) {
    std::fprintf(stderr, "missing %s\n", name);
    std::exit(2);
  }
  return reinterpret_cast<F>(p);
}

void check(const char* what, bool ok, const std::string& detail = "") {
  std::printf("%s %s%s\n", ok ? "ok  " : "FAIL", what, ok || detail.empty() ? "" : (": " + detail).c_str());
  if (!ok) ++g_failed;
}

size_t capture_n(size_t calls) {
  uint64_t frames[64];
  size_t total = 0;
  for (size_t i = 0; i < calls; ++i) total += nb::shim::capture_python_frames(frames, 64);
  return total;
}

std::string describe(const uint64_t* frames, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    std::string file, function;
    if (!nb::shim::python_codes().names(static_cast<uint32_t>(frames[i] >> 32) & 0x7fffffff, file, function)) {
      file = function = "?";
    }
    s += (i ? " " : "") + file + ":" + std::to_string(static_cast<uint32_t>(frames[i])) + ":" + function;
  }
  return s;
}

// What probe() and probe_released() saw, the last time Python called them.
std::string g_stack;
std::string g_released_stack;
bool g_error_kept = false;
size_t g_with_error = 0;
int g_eval_pcs = 0;

// PyMethodDef, METH_NOARGS: the same in every version.
struct MethodDef {
  const char* name;
  void* (*fn)(void*, void*);
  int flags;
  const char* doc;
};

void* probe(void*, void*) {
  uint64_t frames[64];
  const size_t n = nb::shim::capture_python_frames(frames, 64);
  g_stack = describe(frames, n);
  void* pcs[128];
  const int depth = backtrace(pcs, 128);
  g_eval_pcs = 0;
  for (int i = 0; i < depth; ++i) g_eval_pcs += nb::shim::python_codes().is_eval_pc(reinterpret_cast<uintptr_t>(pcs[i]));
  // A CUDA call made while an exception is pending (a destructor running
  // during unwinding) must leave it pending.
  auto runtime_error = *sym<void**>("PyExc_RuntimeError");
  sym<void (*)(void*, const char*)>("PyErr_SetString")(runtime_error, "pending");
  g_with_error = nb::shim::capture_python_frames(frames, 64);
  g_error_kept = sym<void* (*)()>("PyErr_Occurred")() == runtime_error;
  sym<void (*)()>("PyErr_Clear")();
  return sym<void* (*)(long)>("PyLong_FromLong")(static_cast<long>(n));
}

// As a C extension's function that releases the GIL around its work.
void* probe_released(void*, void*) {
  void* saved = sym<void* (*)()>("PyEval_SaveThread")();
  uint64_t frames[64];
  const size_t n = nb::shim::capture_python_frames(frames, 64);
  g_released_stack = describe(frames, n);
  sym<void (*)(void*)>("PyEval_RestoreThread")(saved);
  return sym<void* (*)(long)>("PyLong_FromLong")(static_cast<long>(n));
}

MethodDef g_probe_def = {"probe", probe, 0x0004, nullptr};
MethodDef g_probe_released_def = {"probe_released", probe_released, 0x0004, nullptr};

void run_script(const char* script) {
  void* main_module = sym<void* (*)(const char*)>("PyImport_AddModule")("__main__");
  void* dict = sym<void* (*)(void*)>("PyModule_GetDict")(main_module);
  for (MethodDef* def : {&g_probe_def, &g_probe_released_def}) {
    void* fn = sym<void* (*)(void*, void*, void*)>("PyCFunction_NewEx")(def, nullptr, nullptr);
    sym<int (*)(void*, const char*, void*)>("PyDict_SetItemString")(dict, def->name, fn);
    sym<void (*)(void*)>("Py_DecRef")(fn);
  }
  g_stack.clear();
  g_released_stack.clear();
  sym<int (*)(const char*)>("PyRun_SimpleString")(script);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const bool local = std::strcmp(argv[2], "local") == 0;
  // "initialized": the interpreter is first looked for after Py_Initialize,
  // as in a Python program, so that its flags can be read in place (3.12).
  const bool found_initialized = argc > 3 && std::strcmp(argv[3], "initialized") == 0;

  // No interpreter: nothing, cheaply.
  check("no interpreter: nothing captured", capture_n(5000) == 0);
  check("no interpreter: no evaluation loop", !nb::shim::python_codes().is_eval_pc(reinterpret_cast<uintptr_t>(&main)));
  const size_t calls = 20000000;
  const auto t0 = std::chrono::steady_clock::now();
  const size_t none = capture_n(calls);
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("bench: %.2f ns per capture without an interpreter\n",
              std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
  check("no interpreter: nothing captured (bench)", none == 0);

  g_py = dlopen(argv[1], RTLD_NOW | (local ? RTLD_LOCAL : RTLD_GLOBAL));
  if (g_py == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 2;
  }
  if (!found_initialized) check("loaded, not initialized: nothing captured", capture_n(5000) == 0);

  sym<void (*)(int)>("Py_InitializeEx")(0);
  // Enough calls for the look-up to be retried.
  check("initialized, no Python code running: nothing captured", capture_n(found_initialized ? 5000 : 10) == 0);
  // Before 3.9 (no PyFrame_GetBack) the capture stays off.
  int major = 0, minor = 0;
  std::sscanf(sym<const char* (*)()>("Py_GetVersion")(), "%d.%d", &major, &minor);
  const bool supported = major > 3 || (major == 3 && minor >= 9);
  run_script("def inner():\n    probe()\n    return probe_released()\ndef outer():\n    return inner()\nouter()\n");
  if (!supported) {
    check("an interpreter before 3.9: nothing captured",
          g_stack.empty() && g_with_error == 0 && g_released_stack.empty(), g_stack + g_released_stack);
    check("the pending exception is left alone", g_error_kept);
  } else {
    check("embedded, loaded late: the stack", g_stack == "<string>:2:inner <string>:5:outer <string>:6:<module>",
          g_stack);
    check("embedded, loaded late, GIL released: the stack",
          g_released_stack == "<string>:3:inner <string>:5:outer <string>:6:<module>", g_released_stack);
    check("a pending exception stays pending", g_error_kept);
    check("a pending exception does not stop the capture", g_with_error == 3);
    check("native frames in the evaluation loop are recognized", g_eval_pcs >= 1);
  }
  const bool in_place = found_initialized && minor == 12 && major == 3;
  check(in_place ? "flags read in place" : "flags asked through calls", nb::shim::python_flags_in_place() == in_place);

  void* saved = sym<void* (*)()>("PyEval_SaveThread")();
  check("GIL released: nothing captured", capture_n(10) == 0);
  sym<void (*)(void*)>("PyEval_RestoreThread")(saved);

  sym<int (*)()>("Py_FinalizeEx")();
  check("finalized: nothing captured", capture_n(10) == 0);

  // A key taken now takes the number of the interpreter's key for its
  // thread states, if finalizing freed it: the next one is another.
  pthread_key_t held;
  const bool key_held = pthread_key_create(&held, nullptr) == 0;
  sym<void (*)(int)>("Py_InitializeEx")(0);
  run_script("def again():\n    probe()\n    return probe_released()\n\nagain()\n");
  check("initialized again: new code objects named right",
        g_stack == (supported ? "<string>:2:again <string>:5:<module>" : ""), g_stack);
  check("initialized again, GIL released: new code objects named right",
        g_released_stack == (supported ? "<string>:3:again <string>:5:<module>" : ""), g_released_stack);
  check("initialized again: the same way of reading the flags", nb::shim::python_flags_in_place() == in_place);
  sym<int (*)()>("Py_FinalizeEx")();
  if (key_held) pthread_key_delete(held);

  check("no frame went unnamed", nb::shim::python_unknown_frames() == 0);
  std::printf("%s (%d.%d, %s%s)\n", g_failed ? "FAIL" : "PASS", major, minor, local ? "RTLD_LOCAL" : "RTLD_GLOBAL",
              found_initialized ? ", found once initialized" : "");
  return g_failed ? 1 : 0;
}
