#include "core/settings.h"

namespace nb {

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

void Settings::move_to(long new_pid) {
  pid = new_pid;
  // A prefix that ends in '/' names a directory: the files get the default
  // name inside it (not hidden files named ".trace.json").
  std::string pattern = options.out;
  if (!pattern.empty() && pattern.back() == '/') pattern += kDefaultOutName;
  prefix = expand_prefix(pattern, pid, program);
  if (!prefix.empty() && prefix[0] != '/' && !start_dir.empty()) prefix = start_dir + "/" + prefix;
}

Settings read_settings(const EnvLookup& lookup, long pid, const char* program, const std::string& cwd) {
  Settings s;
  s.options = parse_options(lookup, s.problems);
  s.step = step_marker_for(s.options.step, s.options.active != 0);
  s.program = safe_program_name(program);
  s.start_dir = cwd;
  s.move_to(pid);
  return s;
}

}  // namespace nb
