#include "core/cupti_api.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace nb {

namespace {

constexpr const char* kSoname = "libcupti.so.13";  // the ABI of the headers we build with

// Folders of loaded CUDA libraries from a Python wheel (…/nvidia/cu13/lib)
// or next to torch (…/torch/lib → ../../nvidia/cu13/lib): where a wheel's
// libcupti lives when nothing has loaded it yet.
int collect_wheel_dirs(dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  if (name == nullptr || *name == '\0') return 0;
  std::string path = name;
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return 0;
  const std::string dir = path.substr(0, slash);
  auto& dirs = *static_cast<std::vector<std::string>*>(out);
  if (dir.find("/nvidia/") != std::string::npos) dirs.push_back(dir);
  if (dir.size() >= 10 && dir.compare(dir.size() - 10, 10, "/torch/lib") == 0) {
    dirs.push_back(dir + "/../../nvidia/cu13/lib");
    dirs.push_back(dir + "/../../nvidia/cuda_cupti/lib");
  }
  return 0;
}

std::vector<std::string> candidates(const std::string& explicit_path) {
  std::vector<std::string> c;
  if (!explicit_path.empty()) {
    c.push_back(explicit_path);
    return c;
  }
  c.push_back(kSoname);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(var); v && *v) {
      c.push_back(std::string(v) + "/lib64/" + kSoname);
      c.push_back(std::string(v) + "/extras/CUPTI/lib64/" + kSoname);
    }
  }
  c.push_back(std::string("/usr/local/cuda/lib64/") + kSoname);
  c.push_back(std::string("/usr/local/cuda/extras/CUPTI/lib64/") + kSoname);
  std::vector<std::string> dirs;
  dl_iterate_phdr(collect_wheel_dirs, &dirs);
  for (const std::string& d : dirs) c.push_back(d + "/" + kSoname);
  return c;
}

}  // namespace

std::string CuptiApi::error(CUptiResult r) const {
  const char* s = nullptr;
  if (cuptiGetResultString && cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

bool load_cupti(const std::string& explicit_path, CuptiApi& api, std::string& why) {
  // A copy already loaded (by PyTorch, say) is the one to use: two CUPTIs in
  // one process would fight over the driver's profiling interface.
  void* h = dlopen(kSoname, RTLD_NOW | RTLD_NOLOAD);
  std::string path = kSoname;
  if (h == nullptr) {
    for (const std::string& c : candidates(explicit_path)) {
      h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h != nullptr) {
        path = c;
        break;
      }
    }
  }
  if (h == nullptr) {
    why = explicit_path.empty() ? std::string("no ") + kSoname + " found (set NB_CUPTI_LIB)"
                                : "cannot load NB_CUPTI_LIB=" + explicit_path;
    return false;
  }
  api.handle = h;
  api.path = path;
#define NB_CUPTI_RESOLVE(name)                                                       \
  api.name = reinterpret_cast<decltype(&::name)>(dlsym(h, #name));                   \
  if (api.name == nullptr) {                                                         \
    why = path + " has no " #name;                                                   \
    return false;                                                                    \
  }
  NB_CUPTI_FUNCTIONS(NB_CUPTI_RESOLVE)
#undef NB_CUPTI_RESOLVE
  if (api.cuptiGetVersion(&api.version) != CUPTI_SUCCESS || api.version < 130000) {
    why = path + " is CUPTI API version " + std::to_string(api.version) + "; nb needs 13.0 or newer";
    return false;
  }
  return true;
}

}  // namespace nb

namespace nb {

std::string strip_cupti_version(const std::string& name) {
  const size_t v = name.rfind("_v");
  if (v == std::string::npos || name.size() - v - 2 < 4) return name;
  for (size_t i = v + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, v);
}

std::vector<CuptiCallback> match_callbacks(const CuptiApi& api, const std::vector<std::string>& names) {
  std::vector<CuptiCallback> out;
  const struct {
    CUpti_CallbackDomain domain;
    uint32_t count;
  } domains[] = {{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE},
                 {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE}};
  for (const auto& d : domains) {
    for (uint32_t cbid = 1; cbid < d.count; ++cbid) {
      const char* name = nullptr;
      if (api.cuptiGetCallbackName(d.domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      const std::string base = strip_cupti_version(name);
      for (const std::string& n : names) {
        if (n == base) {
          out.push_back({d.domain, cbid});
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace nb
