#include "shim/python_frames_layouts.h"

#include <dlfcn.h>

#include <cstdio>
#include <utility>

#include "shim/real_functions.h"

namespace nb::shim::python {
namespace {

constexpr const Layout* kLayouts[] = {&k39, &k310, &k311, &k312, &k313};

// Whether `p` lies in the object the interpreter's functions came from:
// two interpreters' halves must never be mixed.
bool in_interpreter(const PyApi& a, const void* p) {
  Dl_info first, other;
  return dladdr(reinterpret_cast<void*>(a.is_initialized), &first) != 0 && dladdr(p, &other) != 0 &&
         other.dli_fbase == first.dli_fbase;
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

}  // namespace

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
  if (!in_interpreter(a, a.code_type)) return nullptr;
  if (minor == 13 && !debug_offsets_agree(h, *layout)) return nullptr;
  return layout;
}

const char* find_runtime(void* h, const PyApi& a, const Layout* layout) {
  // A layout implies a.is_finalizing (find_layout).
  if (layout == nullptr || layout->minor != 12) return nullptr;
  const auto* rt = static_cast<const char*>(real_dlsym(h, "_PyRuntime"));
  if (rt == nullptr || !in_interpreter(a, rt)) return nullptr;
  // Before Py_Initialize there is no main interpreter to compare with: the
  // calls stay.
  const void* main = a.main_interp();
  if (a.is_initialized() == 0 || field<int>(rt, kRtInitialized) != 1 || main == nullptr ||
      field<const void*>(rt, kRtMainInterp) != main) {
    return nullptr;
  }
  if ((field<const void*>(rt, kRtFinalizing) != nullptr) != (a.is_finalizing() != 0)) return nullptr;
  return rt;
}

}  // namespace nb::shim::python
