#include "core/private_libs.h"

#include <dlfcn.h>
#include <link.h>

#include <string>

namespace nb {
namespace {

// The directory this code was loaded from: libnb_shim.so's in the product
// (the collector is linked into it), the test binary's in unit tests.
std::string own_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&open_private_lib), &info) == 0 || info.dli_fname == nullptr) return {};
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace

void* open_private_lib(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr) {
    const std::string dir = own_dir();
    // A bundled library's own DT_NEEDED (libdw needs libelf.so.1) is matched
    // by glibc against the sonames already loaded, so opening the bundled
    // dependency first (the caller's job) makes it the one used.
    if (!dir.empty()) h = dlopen((dir + "/nb-libs/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (h == nullptr) h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) dlerror();  // leave no error behind for a host that reads dlerror() later
  return h;
}

const char* lib_path(void* handle) {
  struct link_map* map = nullptr;
  if (handle == nullptr || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return "";
  return map->l_name;
}

}  // namespace nb
