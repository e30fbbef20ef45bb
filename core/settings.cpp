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

Settings read_settings(const EnvLookup& lookup, long pid, const char* program, const std::string& cwd) {
  Settings s;
  s.options = parse_options(lookup, s.problems);
  s.step = step_marker_for(s.options.step, s.options.active != 0);
  s.program = safe_program_name(program);
  s.pid = pid;
  s.prefix = expand_prefix(s.options.out, pid, s.program);
  if (!s.prefix.empty() && s.prefix[0] != '/' && !cwd.empty()) s.prefix = cwd + "/" + s.prefix;
  return s;
}

}  // namespace nb
