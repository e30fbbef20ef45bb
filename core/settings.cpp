#include "core/settings.h"

namespace nb {

void Settings::move_to(long new_pid) {
  pid = new_pid;
  // A prefix that ends in '/' names a directory: the files get the default
  // name inside it (not hidden files named ".trace.json").
  std::string pattern = out_pattern;
  if (!pattern.empty() && pattern.back() == '/') pattern += rank.known() ? kDefaultRankOutName : kDefaultOutName;
  PrefixFields f;
  f.pid = pid;
  f.program = program;
  f.rank = std::to_string(rank.known() ? rank.rank : 0);
  f.local_rank = std::to_string(rank.local_rank >= 0 ? rank.local_rank : 0);
  f.host = host;
  f.env = [this](const char* name) -> const char* {
    auto it = out_env.find(name);
    return it == out_env.end() ? nullptr : it->second.c_str();
  };
  prefix = expand_prefix(pattern, f);
  if (!prefix.empty() && prefix[0] != '/' && !start_dir.empty()) prefix = start_dir + "/" + prefix;
}

Settings read_settings(const EnvLookup& lookup, const ProcessFacts& process) {
  Settings s;
  s.options = parse_options(lookup, s.problems);
  s.step = step_marker_for(s.options.step, s.options.active != 0);
  s.program = safe_program_name(program_name(process.argv, process.short_name).c_str());
  s.rank = read_rank(lookup, s.options.rank);
  s.host = process.host;
  s.start_dir = process.cwd;
  const char* out = lookup("NB_OUT");
  const bool out_unset = out == nullptr || *out == '\0';
  s.out_pattern = out_unset && s.rank.known() ? kDefaultRankOutName : s.options.out;
  // %q{VAR}: read now, with the rest of the environment.
  for (size_t at = s.out_pattern.find("%q{"); at != std::string::npos; at = s.out_pattern.find("%q{", at + 1)) {
    const size_t close = s.out_pattern.find('}', at + 3);
    if (close == std::string::npos) break;
    const std::string name = s.out_pattern.substr(at + 3, close - at - 3);
    const char* v = name.empty() ? nullptr : lookup(name.c_str());
    if (v != nullptr) s.out_env[name] = v;
  }
  s.move_to(process.pid);
  return s;
}

}  // namespace nb
