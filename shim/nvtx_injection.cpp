// NVTX's injection interface (shim/nvtx_injection.h): the entry point NVTX
// calls, the callbacks it installs, and the names they hand on.
//
// Each copy of NVTX in the process (the program's, libtorch's, cuDNN's...)
// calls InitializeInjectionNvtx2 once, on the thread of its first NVTX call,
// while the other threads calling that copy spin until it returns; several
// copies may do so at once. So the entry point only fills the table it is
// given, and everything here is shared by all copies: a range pushed through
// one copy and popped through another is still one range.
#include "shim/nvtx_injection.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#define NVTX_NO_IMPL  // the types and ids only: the implementation is the program's
#include <nvtx3/nvToolsExt.h>

#include "shim/nvtx_ranges.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);

namespace nb::shim {
namespace {

// ---- Domains and registered strings: rare, so a mutex; never freed, since
// handles live as long as the program and NVTX calls may come from atexit
// handlers and static destructors.

// Each domain has its own push/pop stack (nvToolsExt.h, nvtxDomainCreateA),
// so the levels Push and Pop return are counted per domain: slot 0 is the
// global domain, the first domains get a slot each, later ones share the
// last (their levels are then only approximate; the recorder is not affected).
constexpr unsigned kDepthSlots = 16;
__thread int t_depth[kDepthSlots] __attribute__((tls_model("initial-exec")));

struct Domain {
  unsigned slot;
  const char* name;  // its key in the registry (node-based: stays valid); null = none kept
};

struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, Domain> domains;  // node-based: handles stay valid
  std::unordered_set<std::string> strings;          // a string's handle is its c_str()
  unsigned next_slot = 1;
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// ---- Text. wchar_t is UTF-32 on Linux; what is not a code point becomes
// U+FFFD. `put(bytes, n)` returns false to stop (buffer full).
template <typename Put>
void wide_to_utf8(const wchar_t* w, Put&& put) {
  for (; *w != 0; ++w) {
    uint32_t c = static_cast<uint32_t>(*w);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    char b[4];
    int n;
    if (c < 0x80) {
      b[0] = static_cast<char>(c), n = 1;
    } else if (c < 0x800) {
      b[0] = static_cast<char>(0xC0 | (c >> 6)), n = 2;
    } else if (c < 0x10000) {
      b[0] = static_cast<char>(0xE0 | (c >> 12)), n = 3;
    } else {
      b[0] = static_cast<char>(0xF0 | (c >> 18)), n = 4;
    }
    for (int i = 1; i < n; ++i) b[i] = static_cast<char>(0x80 | ((c >> (6 * (n - 1 - i))) & 0x3F));
    if (!put(b, n)) return;
  }
}

std::string utf8(const wchar_t* w) {
  std::string s;
  if (w != nullptr) wide_to_utf8(w, [&](const char* b, int n) { return s.append(b, n), true; });
  return s;
}

// On the push path: no allocation, into the caller's buffer, cut at a code
// point when it is full. The recorder only reads the name during the call.
constexpr size_t kWideNameMax = 1024;
const char* utf8(const wchar_t* w, char (&buf)[kWideNameMax]) {
  if (w == nullptr) return nullptr;
  size_t len = 0;
  wide_to_utf8(w, [&](const char* b, int n) {
    if (len + n >= kWideNameMax) return false;
    for (int i = 0; i < n; ++i) buf[len++] = b[i];
    return true;
  });
  buf[len] = 0;
  return buf;
}

// The name of an event: null when it has none, or when the attributes are
// too short to hold a message (their `size` says how much the caller filled).
const char* message(const nvtxEventAttributes_t* a, char (&buf)[kWideNameMax]) {
  if (a == nullptr || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return nullptr;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii;
    case NVTX_MESSAGE_TYPE_UNICODE: return utf8(a->message.unicode, buf);
    case NVTX_MESSAGE_TYPE_REGISTERED: return reinterpret_cast<const char*>(a->message.registered);
    default: return nullptr;
  }
}

unsigned slot_of(nvtxDomainHandle_t d) {
  return d == nullptr ? 0 : reinterpret_cast<const Domain*>(d)->slot;
}

// ---- Ranges. Nothing may throw into the program; the recorder's functions
// are not declared noexcept, hence the catch.
int push(unsigned slot, const char* name, const char* domain = nullptr) {
  const int level = t_depth[slot]++;
  try {
    nvtx_push(name, domain);
  } catch (...) {
  }
  return level;
}

int pop(unsigned slot) {
  // A pop with nothing pushed is NVTX's error (a negative level); the
  // recorder never sees it, so its stack of this thread stays balanced.
  if (t_depth[slot] <= 0) return -1;
  const int level = --t_depth[slot];
  try {
    nvtx_pop();
  } catch (...) {
  }
  return level;
}

nvtxRangeId_t start(const char* name) {
  try {
    return nvtx_start(name);
  } catch (...) {
    return 0;
  }
}

void end(nvtxRangeId_t id) {
  try {
    nvtx_end(id);
  } catch (...) {
  }
}

// ---- The callbacks NVTX calls (nvtxDetail/nvtxTypes.h, *_impl_fntype).
int range_push_a(const char* m) { return push(0, m); }
int range_push_w(const wchar_t* m) {
  char buf[kWideNameMax];
  return push(0, utf8(m, buf));
}
int range_push_ex(const nvtxEventAttributes_t* a) {
  char buf[kWideNameMax];
  return push(0, message(a, buf));
}
int range_pop() { return pop(0); }
nvtxRangeId_t range_start_a(const char* m) { return start(m); }
nvtxRangeId_t range_start_w(const wchar_t* m) {
  char buf[kWideNameMax];
  return start(utf8(m, buf));
}
nvtxRangeId_t range_start_ex(const nvtxEventAttributes_t* a) {
  char buf[kWideNameMax];
  return start(message(a, buf));
}
void range_end(nvtxRangeId_t id) { end(id); }

int domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  char buf[kWideNameMax];
  return push(slot_of(d), message(a, buf), d == nullptr ? nullptr : reinterpret_cast<const Domain*>(d)->name);
}
int domain_pop(nvtxDomainHandle_t d) { return pop(slot_of(d)); }
nvtxRangeId_t domain_start_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { return range_start_ex(a); }
void domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end(id); }

// Equal texts share a handle, so a program registering in a loop does not
// grow the table. Null (no name) if memory runs out.
nvtxStringHandle_t register_string(std::string text) {
  try {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    const std::string& kept = *r.strings.insert(std::move(text)).first;
    return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(kept.c_str()));
  } catch (...) {
    return nullptr;
  }
}
nvtxStringHandle_t register_string_a(nvtxDomainHandle_t, const char* s) {
  try {
    return register_string(s != nullptr ? s : "");
  } catch (...) {
    return nullptr;
  }
}
nvtxStringHandle_t register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  try {
    return register_string(utf8(s));
  } catch (...) {
    return nullptr;
  }
}

// A domain's handle is never null: a null handle means the global domain.
// Creating a name twice gives the same domain, as it is the same stack.
Domain g_overflow_domain{kDepthSlots - 1, nullptr};
nvtxDomainHandle_t create_domain(const std::string& name) {
  Domain* d = &g_overflow_domain;
  try {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto [it, added] = r.domains.try_emplace(name, Domain{kDepthSlots - 1, nullptr});
    if (added && r.next_slot < kDepthSlots - 1) it->second.slot = r.next_slot++;
    if (added && !name.empty()) it->second.name = it->first.c_str();
    d = &it->second;
  } catch (...) {
  }
  return reinterpret_cast<nvtxDomainHandle_t>(d);
}
nvtxDomainHandle_t domain_create_a(const char* name) {
  try {
    return create_domain(name != nullptr ? name : "");
  } catch (...) {
    return reinterpret_cast<nvtxDomainHandle_t>(&g_overflow_domain);
  }
}
nvtxDomainHandle_t domain_create_w(const wchar_t* name) {
  try {
    return create_domain(utf8(name));
  } catch (...) {
    return reinterpret_cast<nvtxDomainHandle_t>(&g_overflow_domain);
  }
}

// What the entry point installs, by module (below). Slots left alone become
// no-ops when it returns: marks, naming, resources, domain destruction.
struct Entry {
  unsigned cbid;
  NvtxFunctionPointer fn;
};
template <typename F>
NvtxFunctionPointer fp(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

// The module's table holds the addresses of NVTX's own function-pointer
// slots, indexed by callback id (index 0 and the end are null).
bool install(const NvtxExportTableCallbacks* cb, NvtxCallbackModule module, std::initializer_list<Entry> entries) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (cb->GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) return false;
  for (const Entry& e : entries) {
    if (e.cbid < size && table[e.cbid] != nullptr) *table[e.cbid] = e.fn;
  }
  return true;
}

// A hidden function: its address is ours even if another loaded library
// exports InitializeInjectionNvtx2 too.
void anchor() {}

}  // namespace

namespace {
char* g_other_tool = nullptr;  // strdup'ed: read once logging is set up
}  // namespace

const char* other_nvtx_tool() { return g_other_tool; }

void offer_nvtx_injection() {
  static const char kVar[] = "NVTX_INJECTION64_PATH";
  if (const char* set = std::getenv(kVar)) {
    // A parent under nb passes its own path down: that is us.
    if (std::strstr(set, "libnb_shim") == nullptr) g_other_tool = strdup(set);
    return;
  }
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&anchor), &info) == 0 || info.dli_fname == nullptr) return;
  // Absolute: LD_PRELOAD may have named us relative to a directory the
  // program leaves before its first NVTX call.
  char* path = realpath(info.dli_fname, nullptr);
  if (path == nullptr) return;
  setenv(kVar, path, 0);
  std::free(path);
}

}  // namespace nb::shim

// NVTX dlopens us again (the loader hands back the preloaded copy) and calls
// this with its export-table getter. Returning 0 would make NVTX turn every
// call into a no-op and dlclose us (a reference count, nothing unloads).
extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  using namespace nb::shim;
  try {
    // A child that kept NVTX_INJECTION64_PATH but not LD_PRELOAD would load
    // the shim mid-run without its hooks: decline, NVTX stays a no-op.
    const char* preload = std::getenv("LD_PRELOAD");
    if (preload == nullptr || std::string(preload).find("libnb_shim") == std::string::npos) return 0;
    if (get_table == nullptr) return 0;
    const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
    if (cb == nullptr || cb->struct_size < sizeof(NvtxExportTableCallbacks) || cb->GetModuleFunctionTable == nullptr)
      return 0;
    // The entries are built here, not in a static table: a library's
    // constructor may reach this before the shim's own statics are set up.
    const bool core = install(cb, NVTX_CB_MODULE_CORE,
        {{NVTX_CBID_CORE_RangePushA, fp(range_push_a)}, {NVTX_CBID_CORE_RangePushW, fp(range_push_w)},
         {NVTX_CBID_CORE_RangePushEx, fp(range_push_ex)}, {NVTX_CBID_CORE_RangePop, fp(range_pop)},
         {NVTX_CBID_CORE_RangeStartA, fp(range_start_a)}, {NVTX_CBID_CORE_RangeStartW, fp(range_start_w)},
         {NVTX_CBID_CORE_RangeStartEx, fp(range_start_ex)}, {NVTX_CBID_CORE_RangeEnd, fp(range_end)}});
    if (!core) return 0;
    // Absent before NVTX 2: thread ranges still work without it.
    install(cb, NVTX_CB_MODULE_CORE2,
        {{NVTX_CBID_CORE2_DomainRangePushEx, fp(domain_push_ex)}, {NVTX_CBID_CORE2_DomainRangePop, fp(domain_pop)},
         {NVTX_CBID_CORE2_DomainRangeStartEx, fp(domain_start_ex)}, {NVTX_CBID_CORE2_DomainRangeEnd, fp(domain_end)},
         {NVTX_CBID_CORE2_DomainRegisterStringA, fp(register_string_a)},
         {NVTX_CBID_CORE2_DomainRegisterStringW, fp(register_string_w)},
         {NVTX_CBID_CORE2_DomainCreateA, fp(domain_create_a)},
         {NVTX_CBID_CORE2_DomainCreateW, fp(domain_create_w)}});
    // Asked of tools (nvtxTypes.h), so that NVTX can one day refuse a bad one.
    const auto* vi = static_cast<const NvtxExportTableVersionInfo*>(get_table(NVTX_ETID_VERSIONINFO));
    if (vi != nullptr && vi->struct_size >= sizeof(NvtxExportTableVersionInfo) && vi->SetInjectionNvtxVersion)
      vi->SetInjectionNvtxVersion(NVTX_VERSION);
    return 1;
  } catch (...) {
    return 0;
  }
}
