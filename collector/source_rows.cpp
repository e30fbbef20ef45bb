#include <algorithm>
#include <map>
#include <set>

#include "collector/builders.h"
#include "collector/user_frames.h"

namespace nb {

namespace {

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::char_traits<char>::length(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool starts_with(const std::string& s, const char* head) { return s.rfind(head, 0) == 0; }

// Modules of the CUDA libraries, the runtimes and the interpreter, by the
// start of their file name.
constexpr const char* kNotUserModules[] = {
    "libcuda.", "libcudart", "libcublas", "libcudnn", "libnccl", "libcupti", "libnvrtc", "libcufft", "libcurand",
    "libcusparse", "libcusolver", "libnvJitLink", "libnvToolsExt", "libnvperf", "libtorch_cuda", "libc10_cuda",
    "libc.so", "libc-", "libstdc++", "libgcc_s", "ld-linux", "libpthread", "libpython", "python3", "python",
};

// A CUDA API entry or a runtime wrapper around one, by its name:
// cuLaunchKernel, cudaLaunchKernel, cudaLaunchKernel<void(*)()>, __cudaLaunch.
bool cuda_api_name(const std::string& name) {
  if (starts_with(name, "__cuda") || starts_with(name, "__libc") || name == "_start") return true;
  if (name.size() > 2 && name[0] == 'c' && name[1] == 'u') {
    const char next = name.size() > 4 && name.compare(0, 4, "cuda") == 0 ? name[4] : name[2];
    return next >= 'A' && next <= 'Z';
  }
  return false;
}

}  // namespace

bool is_python_frame(const formats::Frame& f) { return ends_with(f.filename, ".py"); }

bool is_user_native_frame(const formats::Frame& f) {
  if (is_python_frame(f)) return false;
  const std::string base = base_name(f.filename);
  for (const char* m : kNotUserModules) {
    if (starts_with(base, m)) return false;
  }
  // CUDA's headers (cuda_runtime.h's templates), glibc's start-up sources.
  if (starts_with(base, "cuda_") || starts_with(base, "cuda.h") || f.filename.find("/cuda/include/") != std::string::npos ||
      f.filename.find("/targets/x86_64-linux/include/") != std::string::npos || starts_with(f.filename, "../csu/") ||
      starts_with(f.filename, "../sysdeps/")) {
    return false;
  }
  return !cuda_api_name(f.name);
}

std::string location_of(const formats::Frame& f) {
  if (is_python_frame(f)) return f.filename + ":" + std::to_string(f.line) + " " + f.name;
  return f.name + " (" + f.filename + (f.line > 0 ? ":" + std::to_string(f.line) : std::string()) + ")";
}

std::vector<formats::SourceRow> build_source_rows(const Session& s, const OutputContext& ctx) {
  std::map<std::string, formats::SourceRow> rows;
  const auto row = [&](const std::string& location) -> formats::SourceRow& {
    formats::SourceRow& r = rows[location];
    r.location = location;
    return r;
  };
  for (const auto& [key, t] : s.device_by_stack()) {
    const uint32_t stack = static_cast<uint32_t>(key >> 32);
    const formats::Stack* st = stack != 0 && stack < ctx.stacks.size() ? &ctx.stacks[stack] : nullptr;
    // The stack's user frames, innermost first: its Python frames if it has
    // any, else its user native frames.
    std::vector<const formats::Frame*> user;
    if (st != nullptr) {
      for (const formats::Frame& f : *st) {
        if (is_python_frame(f)) user.push_back(&f);
      }
      if (user.empty()) {
        for (const formats::Frame& f : *st) {
          if (is_user_native_frame(f)) user.push_back(&f);
        }
      }
    }
    if (user.empty()) {
      formats::SourceRow& r = row(st == nullptr ? "[no stack]" : "[no user frame]");
      r.calls += t.calls;
      r.total_calls += t.calls;
      r.device_self_ns += t.time;
      r.device_total_ns += t.time;
      continue;
    }
    formats::SourceRow& self = row(location_of(*user.front()));
    self.calls += t.calls;
    self.device_self_ns += t.time;
    // Each location once a stack, however often it recurs in it.
    std::set<std::string> seen;
    for (const formats::Frame* f : user) {
      const std::string loc = location_of(*f);
      if (!seen.insert(loc).second) continue;
      formats::SourceRow& r = row(loc);
      r.total_calls += t.calls;
      r.device_total_ns += t.time;
    }
  }
  std::vector<formats::SourceRow> out;
  for (auto& [loc, r] : rows) out.push_back(std::move(r));
  return out;
}

}  // namespace nb
