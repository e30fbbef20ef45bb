#include "shim/real_functions.h"

#include <dlfcn.h>
#include <link.h>  // dl_iterate_phdr

#include <cstring>
#include <mutex>
#include <string>

extern "C" {
void* (*nb_real_dlsym)(void*, const char*) = nullptr;

// glibc 2.34 moved dlsym into libc with a new version; older systems only
// have the 2.2.5 one. dlvsym is not hooked, so this cannot recurse.
// Not sanitized: it can run inside a sanitizer runtime's own start-up (TSan
// finds its interceptors with dlsym), before that runtime can take calls.
__attribute__((no_sanitize("address", "thread", "undefined")))
void* nb_resolve_real_dlsym() {
  void* p = reinterpret_cast<void*>(nb_real_dlsym);
  if (p != nullptr) return p;
  p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (p == nullptr) p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  nb_real_dlsym = reinterpret_cast<void* (*)(void*, const char*)>(p);
  return p;
}
}

namespace nb::shim {

std::atomic<void*> g_real[kApiCount];
const char* const kRuntimeSoname = "libcudart.so.13";

namespace {
// The driver the shim forwards to, known by the base address its functions
// come from. A program may dlclose libcuda and dlopen it again; it then
// loads elsewhere, and every pointer into the old copy points at nothing.
// No handle is kept for the same reason: each look-up asks the loader.
//
// Hooks run before the shim's own constructors when another library's
// constructor calls CUDA (libcublasLt looks up driver functions with dlsym
// from its constructor): what they touch is constant-initialized or made
// on first use, never a global set up by a constructor.
std::mutex g_driver_mu;  // constant-initialized
std::string& driver_path() {  // guarded by g_driver_mu
  static std::string* path = new std::string;  // never destroyed: hooks may run after exit
  return *path;
}
std::atomic<uintptr_t> g_driver_base{0};
std::atomic<uint32_t> g_driver_generation{0};

// A handle for the driver as loaded now, or null when it is not loaded.
// (dlopen with RTLD_NOLOAD, then dlclose: the program's reference keeps it.)
void* driver_handle() {
  std::string path;
  {
    std::lock_guard<std::mutex> lock(g_driver_mu);
    path = driver_path();
  }
  void* h = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY);
  if (h == nullptr) h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (h != nullptr) dlclose(h);
  return h;
}

// The runtime is loaded by whoever needs it, often with RTLD_LOCAL (Python
// extension modules), where RTLD_NEXT cannot see it: find it among the
// loaded objects instead.
int find_cudart(dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  const char* base = name ? std::strrchr(name, '/') : nullptr;
  base = base ? base + 1 : name;
  if (base != nullptr && std::strcmp(base, kRuntimeSoname) == 0) {
    *static_cast<std::string*>(out) = name;
    return 1;
  }
  return 0;
}

void* runtime_handle() {
  std::string path;
  dl_iterate_phdr(find_cudart, &path);
  if (path.empty()) return nullptr;
  void* h = dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY);
  if (h != nullptr) dlclose(h);
  return h;
}
}  // namespace

namespace {
int find_nccl(dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  const char* base = name ? std::strrchr(name, '/') : nullptr;
  base = base ? base + 1 : name;
  if (base != nullptr && std::strncmp(base, "libnccl.so", 10) == 0) {
    *static_cast<std::string*>(out) = name;
    return 1;
  }
  return 0;
}
}  // namespace

std::string loaded_nccl_version() {
  std::string path;
  dl_iterate_phdr(find_nccl, &path);
  if (path.empty()) return "";
  void* h = dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY);
  if (h == nullptr) return "";
  auto get = reinterpret_cast<int (*)(int*)>(real_dlsym(h, "ncclGetVersion"));
  int code = 0;
  const bool ok = get != nullptr && get(&code) == 0 && code > 0;
  dlclose(h);
  if (!ok) return "";
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 + patch before.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

void* real_dlsym(void* handle, const char* name) {
  auto fn = reinterpret_cast<void* (*)(void*, const char*)>(nb_resolve_real_dlsym());
  return fn ? fn(handle, name) : nullptr;
}

void note_driver_function(void* fn) {
  Dl_info info;
  if (fn == nullptr || dladdr(fn, &info) == 0 || info.dli_fname == nullptr || info.dli_fbase == nullptr) return;
  const char* base_name = std::strrchr(info.dli_fname, '/');
  base_name = base_name ? base_name + 1 : info.dli_fname;
  // Another interposer's function (a tool preloaded after nb) is not the driver.
  if (std::strncmp(base_name, "libcuda", 7) != 0) return;
  const auto base = reinterpret_cast<uintptr_t>(info.dli_fbase);
  if (g_driver_base.load(std::memory_order_acquire) == base) return;
  std::lock_guard<std::mutex> lock(g_driver_mu);
  const uintptr_t old = g_driver_base.load(std::memory_order_relaxed);
  if (old == base) return;
  driver_path() = info.dli_fname;
  g_driver_base.store(base, std::memory_order_release);
  if (old == 0) return;
  // The driver was unloaded and loaded again elsewhere: forget every
  // pointer into the old copy; each is looked up again on its next use.
  for (uint16_t id = 0; id < kApiCount; ++id) {
    if (!api_info(id).runtime) g_real[id].store(nullptr, std::memory_order_release);
  }
  g_driver_generation.fetch_add(1, std::memory_order_acq_rel);
}

uint32_t driver_generation() { return g_driver_generation.load(std::memory_order_acquire); }

void* driver_symbol(const char* name) {
  void* h = driver_handle();
  return h ? real_dlsym(h, name) : nullptr;
}

void store_real(uint16_t id, void* p) {
  if (p == nullptr || id >= kApiCount || p == g_wrapper[id]) return;
  // First: a driver loaded anew clears the slots that point into the old one.
  if (!api_info(id).runtime) note_driver_function(p);
  void* expected = nullptr;
  g_real[id].compare_exchange_strong(expected, p, std::memory_order_acq_rel);
}

void* resolve_real(uint16_t id) {
  if (id >= kApiCount) return nullptr;
  const ApiInfo& info = api_info(id);
  // Runtime hooks are written for (and exported under the version of)
  // libcudart.so.13: forward only to that runtime, never to another major
  // that happens to be first in the search order.
  void* p = info.runtime ? dlvsym(RTLD_NEXT, info.symbol, kRuntimeSoname) : real_dlsym(RTLD_NEXT, info.symbol);
  if (p == nullptr || p == g_wrapper[id]) {
    void* h = nullptr;
    if (info.runtime) {
      h = runtime_handle();
    } else {
      h = driver_handle();
    }
    p = h ? real_dlsym(h, info.symbol) : nullptr;
  }
  store_real(id, p);
  return g_real[id].load(std::memory_order_acquire);
}

}  // namespace nb::shim
