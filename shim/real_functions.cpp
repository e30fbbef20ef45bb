#include "shim/real_functions.h"

#include <dlfcn.h>
#include <link.h>  // dl_iterate_phdr

#include <cstring>
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
std::atomic<void*> g_driver_handle{nullptr};

// A dlopen handle for the object that defines `fn`. (A link_map from dladdr1
// is not one: objects loaded at start-up have no search list until dlopen'ed.)
void* handle_of(void* fn) {
  Dl_info info;
  if (fn == nullptr || dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return nullptr;
  void* h = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
  // Dropping our reference keeps the library's count as its owner left it.
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

void* real_dlsym(void* handle, const char* name) {
  auto fn = reinterpret_cast<void* (*)(void*, const char*)>(nb_resolve_real_dlsym());
  return fn ? fn(handle, name) : nullptr;
}

void note_driver_function(void* fn) {
  if (g_driver_handle.load(std::memory_order_relaxed) != nullptr) return;
  if (void* h = handle_of(fn)) g_driver_handle.store(h, std::memory_order_release);
}

void* driver_symbol(const char* name) {
  void* h = g_driver_handle.load(std::memory_order_acquire);
  if (h == nullptr) {
    h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    if (h == nullptr) return nullptr;
    dlclose(h);
    g_driver_handle.store(h, std::memory_order_release);
  }
  return real_dlsym(h, name);
}

void store_real(uint16_t id, void* p) {
  if (p == nullptr || id >= kApiCount || p == g_wrapper[id]) return;
  void* expected = nullptr;
  g_real[id].compare_exchange_strong(expected, p, std::memory_order_acq_rel);
  if (!api_info(id).runtime) note_driver_function(p);
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
      h = g_driver_handle.load(std::memory_order_acquire);
      if (h == nullptr) {
        h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
        if (h != nullptr) dlclose(h);
      }
    }
    p = h ? real_dlsym(h, info.symbol) : nullptr;
  }
  store_real(id, p);
  return g_real[id].load(std::memory_order_acquire);
}

}  // namespace nb::shim
