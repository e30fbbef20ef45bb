#include "core/program_name.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nb {

namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string script_stem(const std::string& path) {
  std::string name = base_name(path);
  for (const char* ext : {".py", ".pyw", ".pyc"}) {
    const size_t n = std::strlen(ext);
    if (name.size() > n && name.compare(name.size() - n, n, ext) == 0) return name.substr(0, name.size() - n);
  }
  return name;
}

// What Python runs, from its arguments: a module (-m), a script (the first
// argument that is not an option), or nothing it has a name for (-c, stdin).
std::string python_target(const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") return i + 1 < argv.size() ? script_stem(argv[i + 1]) : std::string();
    if (a.size() < 2 || a[0] != '-') return a == "-" ? std::string() : script_stem(a);
    if (a[1] == '-') {
      if (a == "--check-hash-based-pycs") ++i;  // takes a value
      continue;
    }
    // A cluster of one-letter options: -u, -OO, -uB, -W arg, -Xdev, -m mod.
    for (size_t k = 1; k < a.size(); ++k) {
      const char c = a[k];
      if (c == 'c') return std::string();
      if (c == 'm') {
        if (k + 1 < a.size()) return a.substr(k + 1);
        return i + 1 < argv.size() ? argv[i + 1] : std::string();
      }
      if (c == 'W' || c == 'X') {
        if (k + 1 == a.size()) ++i;  // its value is the next argument
        break;
      }
    }
  }
  return std::string();
}

}  // namespace

bool is_python_name(const std::string& name) {
  for (const char* prefix : {"python", "pypy"}) {
    const size_t n = std::strlen(prefix);
    if (name.compare(0, n, prefix) != 0) continue;
    // A version, then perhaps the build's letter: python3.13t (free-threaded), python3.12d (debug).
    size_t end = name.size();
    if (end > n && (name[end - 1] == 't' || name[end - 1] == 'd' || name[end - 1] == 'm')) --end;
    bool ok = true;
    for (size_t i = n; i < end; ++i) ok = ok && ((name[i] >= '0' && name[i] <= '9') || name[i] == '.');
    if (ok) return true;
  }
  return false;
}

std::string program_name(const std::vector<std::string>& argv, const std::string& short_name) {
  const std::string exe = argv.empty() ? short_name : base_name(argv[0]);
  if (is_python_name(exe) || is_python_name(short_name)) {
    const std::string target = python_target(argv);
    if (!target.empty()) return target;
  }
  return short_name.empty() ? exe : short_name;
}

std::vector<std::string> read_own_cmdline() {
  std::vector<std::string> out;
  const int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  std::string text;
  char buf[4096];
  // The first 64 KiB are plenty to find a script's name.
  while (text.size() < 65536) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string safe_program_name(const char* name) {
  std::string out;
  for (const char* p = name ? name : ""; *p && out.size() < 64; ++p) {
    const char c = *p;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    out += ok ? c : '_';
  }
  return out.empty() ? "program" : out;
}

}  // namespace nb
