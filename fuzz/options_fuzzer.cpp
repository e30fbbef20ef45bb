// core/options.h, three ways over one input:
// 1. the input as an environment: "NAME=VALUE" lines (unknown names ignored);
// 2. the input (up to its first NUL) as the value of each NB_* variable in
//    turn, then of all of them at once;
// 3. the single-value parsers and expand_prefix against small reference
//    readings of what their comments promise.
// For 1 and 2: parse_options never throws; each problem line names a variable
// that was set, one line at most per variable, in printable ASCII; a variable
// with a problem keeps its default, one without gets its value; every value
// is one the table allows (UInt in [min, max], Choice among the choices, Step
// one that parse_step_marker accepts, String non-empty).
#include <cctype>
#include <climits>
#include <map>
#include <set>

#include "core/options.h"
#include "core/step_marker.h"
#include "fuzz/fuzz_support.h"

using nbfuzz::shown;

namespace {

using Env = std::map<std::string, std::string>;

std::string trim_lower(const std::string& s) {
  const char* ws = " \t\n\v\f\r";
  const size_t a = s.find_first_not_of(ws);
  if (a == std::string::npos) return "";
  std::string out = s.substr(a, s.find_last_not_of(ws) - a + 1);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The description (describe_options' "NAME=value" text) a value must give,
// or false if the table does not allow it.
bool expected_value(const nb::OptionInfo& info, const std::string& v, std::string& text) {
  const std::string type = info.type;
  if (type == "String") { text = v; return !v.empty(); }
  if (type == "Path") { text = v; return true; }
  if (type == "Step") {
    nb::StepMarker m;
    std::string error;
    text = v;
    return nb::parse_step_marker(v, m, error);
  }
  if (type == "Bool") {
    bool b = false;
    if (!nb::parse_bool(v, b)) return false;
    text = b ? "1" : "0";
    return true;
  }
  if (type == "LogLevel") {
    nb::LogLevel l;
    if (!nb::parse_log_level(v, l)) return false;
    text = nb::log_level_name(l);
    return true;
  }
  if (type == "Choice") {
    const std::string want = trim_lower(v), choices = std::string("|") + info.choices + "|";
    text = want;
    return !want.empty() && want.find('|') == std::string::npos && choices.find("|" + want + "|") != std::string::npos;
  }
  if (type == "Duration") {
    // "0", or a duration the step marker's parser takes.
    const std::string t = trim_lower(v);
    uint64_t ns = 0;
    if (t == "0") {
      text = "0";
      return true;
    }
    if (!nb::parse_duration_ns(t, ns)) return false;
    nb::Duration d;
    d.ns = ns;
    text = nb::describe_duration(d);
    return true;
  }
  if (type == "OptUInt" && v.empty()) {
    text = "";
    return true;
  }
  NB_FUZZ_CHECK(type == "UInt" || type == "OptUInt", "unknown option type " + type);
  uint64_t u = 0;
  if (!nb::parse_uint(v, info.min, info.max, u)) return false;
  NB_FUZZ_CHECK(u >= info.min && u <= info.max, std::string(info.name) + " parsed out of range: " + std::to_string(u));
  text = std::to_string(u);
  return true;
}

void check_environment(const Env& env) {
  std::vector<std::string> problems;
  nb::Options o;
  try {
    o = nb::parse_options(
        [&](const char* name) -> const char* {
          auto it = env.find(name);
          return it == env.end() ? nullptr : it->second.c_str();
        },
        problems);
  } catch (const std::exception& e) {
    NB_FUZZ_CHECK(false, std::string("parse_options threw: ") + e.what());
  }
  static const std::vector<std::string> defaults = [] {
    std::vector<std::string> none;
    const nb::Options o = nb::parse_options([](const char*) { return nullptr; }, none);
    NB_FUZZ_CHECK(none.empty(), "unset variables gave a problem: " + none.front());
    return nb::describe_options(o);
  }();
  const std::vector<std::string> described = nb::describe_options(o);
  const auto& table = nb::option_table();
  NB_FUZZ_CHECK(described.size() == table.size() && defaults.size() == table.size(), "describe_options size");

  std::set<std::string> complained;
  for (const std::string& p : problems) {
    for (char c : p) NB_FUZZ_CHECK(c >= 0x20 && c < 0x7F, "unprintable byte in a problem line: " + shown(p));
    const size_t eq = p.find("='");
    NB_FUZZ_CHECK(eq != std::string::npos, "problem names no variable: " + shown(p));
    const std::string name = p.substr(0, eq);
    NB_FUZZ_CHECK(env.count(name), "problem about a variable that is not set: " + shown(p));
    NB_FUZZ_CHECK(complained.insert(name).second, "two problems about " + name);
  }
  for (size_t i = 0; i < table.size(); ++i) {
    const nb::OptionInfo& info = table[i];
    const std::string prefix = std::string(info.name) + "=";
    NB_FUZZ_CHECK(described[i].compare(0, prefix.size(), prefix) == 0, "describe_options order: " + described[i]);
    const auto it = env.find(info.name);
    std::string text;
    const bool valid = it != env.end() && expected_value(info, it->second, text);
    if (it != env.end()) {
      NB_FUZZ_CHECK(valid != (complained.count(info.name) == 1),
                    prefix + shown(it->second) + (valid ? " is valid but was refused" : " is invalid but was taken"));
    }
    const std::string want = valid ? prefix + text : defaults[i];
    NB_FUZZ_CHECK(described[i] == want, "got " + shown(described[i]) + ", want " + shown(want));
  }
}

// parse_uint's promise: blanks around, decimal digits, one optional k/m/g
// (x1000^n), no overflow; checked with 128-bit arithmetic.
void check_uint(const std::string& raw) {
  const std::string s = trim_lower(raw);
  size_t i = 0;
  unsigned __int128 v = 0;
  bool fits = true;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    v = v * 10 + static_cast<unsigned>(s[i++] - '0');
    if (v > UINT64_MAX) fits = false, v = static_cast<unsigned __int128>(UINT64_MAX) + 1;
  }
  bool want = i > 0 && fits;
  if (want && i < s.size()) {
    const char u = s[i];
    const uint64_t mult = u == 'k' ? 1000 : u == 'm' ? 1000000 : u == 'g' ? 1000000000 : 0;
    want = mult != 0 && i + 1 == s.size();
    v *= mult;
    if (v > UINT64_MAX) want = false;
  }
  uint64_t got = 0;
  const bool ok = nb::parse_uint(raw, 0, UINT64_MAX, got);
  NB_FUZZ_CHECK(ok == want, "parse_uint(" + shown(raw) + ") = " + std::to_string(ok));
  if (ok) NB_FUZZ_CHECK(got == static_cast<uint64_t>(v), "parse_uint(" + shown(raw) + ") = " + std::to_string(got));
  const uint64_t lo = 10, hi = 1000;
  const bool in_range = ok && got >= lo && got <= hi;
  NB_FUZZ_CHECK(nb::parse_uint(raw, lo, hi, got) == in_range, "parse_uint range for " + shown(raw));
}

// The same expansion written another way: a table of the one-letter
// sequences, and %q{VAR} found by its braces.
std::string reference_prefix(const std::string& pattern, const nb::PrefixFields& f) {
  const std::map<char, std::string> letters{{'p', std::to_string(f.pid)}, {'n', f.program}, {'r', f.rank},
                                            {'l', f.local_rank}, {'h', f.host}, {'%', "%"}};
  std::string out;
  size_t i = 0;
  while (i < pattern.size()) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      auto it = letters.find(pattern[i + 1]);
      if (it != letters.end()) {
        out += it->second;
        i += 2;
        continue;
      }
      if (pattern.compare(i + 1, 2, "q{") == 0) {
        const size_t close = pattern.find('}', i + 3);
        if (close != std::string::npos) {
          const std::string name = pattern.substr(i + 3, close - i - 3);
          const char* v = name.empty() ? nullptr : f.env(name.c_str());
          out += v ? v : "";
          i = close + 1;
          continue;
        }
      }
      out += pattern.substr(i, 2);
      i += 2;
      continue;
    }
    out += pattern[i++];
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string value = input.substr(0, input.find('\0'));

  Env env;
  for (size_t at = 0; at <= value.size();) {
    const size_t end = std::min(value.find('\n', at), value.size());
    const std::string line = value.substr(at, end - at);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    at = end + 1;
  }
  check_environment(env);

  Env all;
  for (const nb::OptionInfo& info : nb::option_table()) {
    check_environment(Env{{info.name, value}});
    all[info.name] = value;
  }
  check_environment(all);

  check_uint(value);
  bool b;
  nb::LogLevel l;
  std::string c;
  (void)nb::parse_bool(input, b);
  (void)nb::parse_log_level(input, l);
  (void)nb::parse_choice(input, "a||b|", c);

  const size_t half = input.size() / 2;
  const std::string pattern = input.substr(0, half), program = input.substr(half);
  for (long pid : {0L, 4242L, -1L, LONG_MIN}) {
    nb::PrefixFields f;
    f.pid = pid;
    f.program = program;
    f.rank = "3";
    f.local_rank = "1";
    f.host = "node7";
    f.env = [](const char* name) -> const char* { return std::string(name) == "JOB" ? "j%p" : nullptr; };
    NB_FUZZ_CHECK(nb::expand_prefix(pattern, f) == reference_prefix(pattern, f), "expand_prefix(" + shown(pattern) + ")");
  }
  return 0;
}
