#include "core/options.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <type_traits>

namespace nb {

namespace {

// The values of each choice enum as text, in the enum's order.
template <typename Enum>
struct Choices;
#define NB_CHOICE_TEXT(e, text) text,
#define NB_DEFINE_CHOICE(Enum)                                                     \
  template <>                                                                      \
  struct Choices<Enum> {                                                           \
    static constexpr const char* names[] = {NB_CHOICES_##Enum(NB_CHOICE_TEXT)};    \
  };
NB_CHOICE_ENUMS(NB_DEFINE_CHOICE)
#undef NB_DEFINE_CHOICE
#undef NB_CHOICE_TEXT

// "a|b|c", as OptionInfo shows a choice's values.
template <typename Enum>
const char* choice_list() {
  static const std::string* list = [] {
    auto* s = new std::string;
    for (const char* n : Choices<Enum>::names) *s += (s->empty() ? "" : "|") + std::string(n);
    return s;
  }();
  return list->c_str();
}

}  // namespace

#define NB_DEFINE_CHOICE_NAME(Enum)                                   \
  const char* choice_name(Enum v) {                                   \
    const auto i = static_cast<size_t>(v);                            \
    return i < std::size(Choices<Enum>::names) ? Choices<Enum>::names[i] : "?"; \
  }
NB_CHOICE_ENUMS(NB_DEFINE_CHOICE_NAME)
#undef NB_DEFINE_CHOICE_NAME

const std::vector<OptionInfo>& option_table() {
#define NB_CHOICES_OF_Choice(Enum) choice_list<Enum>()
#define NB_CHOICES_OF_String(Enum) ""
#define NB_CHOICES_OF_Path(Enum) ""
#define NB_CHOICES_OF_Step(Enum) ""
#define NB_CHOICES_OF_Bool(Enum) ""
#define NB_CHOICES_OF_UInt(Enum) ""
#define NB_CHOICES_OF_OptUInt(Enum) ""
#define NB_CHOICES_OF_Duration(Enum) ""
#define NB_CHOICES_OF_LogLevel(Enum) ""
  static const std::vector<OptionInfo>* table = new std::vector<OptionInfo>{
#define NB_INFO(field, NAME, Type, def, lo, hi, Enum, help) {#NAME, #Type, def, lo, hi, NB_CHOICES_OF_##Type(Enum), help},
      NB_OPTIONS(NB_INFO)
#undef NB_INFO
  };
  return *table;
}

static std::string trim_lower(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  std::string out = s.substr(a, b - a);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool parse_bool(const std::string& raw, bool& out) {
  const std::string s = trim_lower(raw);
  if (s == "1" || s == "true" || s == "yes" || s == "on") { out = true; return true; }
  if (s == "0" || s == "false" || s == "no" || s == "off") { out = false; return true; }
  return false;
}

// Decimal digits with an optional k/m/g suffix (powers of 1000; a record count
// is not a byte size). No sign, no spaces inside, no overflow.
bool parse_uint(const std::string& raw, uint64_t min, uint64_t max, uint64_t& out) {
  const std::string s = trim_lower(raw);
  if (s.empty()) return false;
  uint64_t v = 0;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    const uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (i == 0) return false;
  if (i < s.size()) {
    uint64_t mult;
    switch (s[i]) {
      case 'k': mult = 1000; break;
      case 'm': mult = 1000000; break;
      case 'g': mult = 1000000000; break;
      default: return false;
    }
    if (i + 1 != s.size()) return false;
    if (v > UINT64_MAX / mult) return false;
    v *= mult;
  }
  if (v < min || v > max) return false;
  out = v;
  return true;
}

const char* log_level_name(LogLevel l) {
  switch (l) {
    case LogLevel::Trace: return "trace";
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warn: return "warn";
    case LogLevel::Error: return "error";
    case LogLevel::Off: return "off";
  }
  return "warn";
}

bool parse_log_level(const std::string& raw, LogLevel& out) {
  const std::string s = trim_lower(raw);
  for (LogLevel l : {LogLevel::Trace, LogLevel::Debug, LogLevel::Info, LogLevel::Warn,
                     LogLevel::Error, LogLevel::Off}) {
    if (s == log_level_name(l)) { out = l; return true; }
  }
  if (s == "warning") { out = LogLevel::Warn; return true; }
  return false;
}

bool parse_choice(const std::string& raw, const char* choices, std::string& out) {
  const std::string s = trim_lower(raw);
  std::string list = choices;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t bar = list.find('|', start);
    const std::string choice = list.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    if (!choice.empty() && s == choice) {
      out = choice;
      return true;
    }
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return false;
}

namespace {

// Each type knows how to parse and how to describe what it accepts. Strings
// and paths share a field type, so the table's type name decides.
bool parse_typed(const std::string& s, const OptionInfo& info, std::string& out) {
  out = s;
  return std::string(info.type) == "Path" || !s.empty();
}
bool parse_typed(const std::string& s, const OptionInfo&, StepMarker& out) {
  std::string error;
  return parse_step_marker(s, out, error);
}
template <typename Enum, typename = std::enable_if_t<std::is_enum_v<Enum>>>
bool parse_typed(const std::string& s, const OptionInfo& info, Enum& out) {
  std::string text;
  if (!parse_choice(s, info.choices, text)) return false;
  for (size_t i = 0; i < std::size(Choices<Enum>::names); ++i) {
    if (text == Choices<Enum>::names[i]) {
      out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}
bool parse_typed(const std::string& s, const OptionInfo&, bool& out) { return parse_bool(s, out); }
bool parse_typed(const std::string& s, const OptionInfo& info, uint64_t& out) {
  return parse_uint(s, info.min, info.max, out);
}
bool parse_typed(const std::string& s, const OptionInfo& info, OptionalUInt& out) {
  if (s.empty()) {
    out = OptionalUInt{};
    return true;
  }
  out.set = parse_uint(s, info.min, info.max, out.value);
  return out.set;
}
bool parse_typed(const std::string& s, const OptionInfo&, LogLevel& out) {
  return parse_log_level(s, out);
}
bool parse_typed(const std::string& s, const OptionInfo&, Duration& out) {
  const std::string t = trim_lower(s);
  if (t == "0") {
    out.ns = 0;
    return true;
  }
  return parse_duration_ns(t, out.ns);
}

std::string accepted(const OptionInfo& info) {
  const std::string t = info.type;
  if (t == "Bool") return "1/0, true/false, yes/no, on/off";
  if (t == "LogLevel") return "trace, debug, info, warn, error, off";
  if (t == "Choice") {
    std::string c;
    for (const char* p = info.choices; *p; ++p) c += *p == '|' ? std::string(", ") : std::string(1, *p);
    return "one of " + c;
  }
  if (t == "Path") return "a path";
  if (t == "Duration") return "0 or a duration such as 500ms, 30s, 5m, 1h";
  if (t == "Step") return "kernel:REGEX, nvtx:NAME, sync, launches:N, time:DURATION or profiler-api";
  if (t == "OptUInt") {
    return "empty or an integer from " + std::to_string(info.min) + " to " + std::to_string(info.max);
  }
  if (t == "UInt") {
    return "an integer from " + std::to_string(info.min) + " to " + std::to_string(info.max) +
           " (suffix k/m/g = x1000)";
  }
  return "a non-empty string";
}

std::string printable(const char* v) {
  std::string out;
  for (const char* p = v; *p && out.size() < 80; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    out += (c < 0x20 || c >= 0x7F) ? '?' : static_cast<char>(c);
  }
  return out;
}

template <typename T>
void read_one(const EnvLookup& lookup, const OptionInfo& info, T& field,
              std::vector<std::string>& problems) {
  const bool ok_default = parse_typed(info.default_value, info, field);
  (void)ok_default;  // defaults are checked by a unit test
  const char* v = lookup(info.name);
  if (v == nullptr) return;
  T parsed{};
  if (parse_typed(v, info, parsed)) {
    field = parsed;
    return;
  }
  problems.push_back(std::string(info.name) + "='" + printable(v) + "' is not valid (expected " +
                     accepted(info) + "); using the default '" + info.default_value + "'");
}

std::string value_text(const std::string& v) { return v; }
std::string value_text(const StepMarker& v) { return v.spec; }
template <typename Enum, typename = std::enable_if_t<std::is_enum_v<Enum>>>
std::string value_text(Enum v) { return choice_name(v); }
std::string value_text(bool v) { return v ? "1" : "0"; }
std::string value_text(uint64_t v) { return std::to_string(v); }
std::string value_text(OptionalUInt v) { return v.set ? std::to_string(v.value) : std::string(); }
std::string value_text(LogLevel v) { return log_level_name(v); }
std::string value_text(Duration v) { return describe_duration(v); }

}  // namespace

std::string describe_duration(Duration v) {
  if (v.ns == 0) return "0";
  if (v.ns % 1000000000ull == 0) return std::to_string(v.ns / 1000000000ull) + "s";
  if (v.ns % 1000000ull == 0) return std::to_string(v.ns / 1000000ull) + "ms";
  return std::to_string(v.ns) + "ns";
}

Options parse_options(const EnvLookup& lookup, std::vector<std::string>& problems) {
  Options o;
  const auto& table = option_table();
  size_t i = 0;
#define NB_READ(field, NAME, Type, def, lo, hi, Enum, help) read_one(lookup, table[i++], o.field, problems);
  NB_OPTIONS(NB_READ)
#undef NB_READ
  return o;
}

std::vector<std::string> describe_options(const Options& o) {
  std::vector<std::string> out;
#define NB_DESCRIBE(field, NAME, Type, def, lo, hi, Enum, help) out.push_back(#NAME "=" + value_text(o.field));
  NB_OPTIONS(NB_DESCRIBE)
#undef NB_DESCRIBE
  return out;
}

std::string expand_prefix(const std::string& pattern, const PrefixFields& f) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) { out += pattern[i]; continue; }
    const char c = pattern[++i];
    if (c == 'p') out += std::to_string(f.pid);
    else if (c == 'n') out += f.program;
    else if (c == 'r') out += f.rank;
    else if (c == 'l') out += f.local_rank;
    else if (c == 'h') out += f.host;
    else if (c == '%') out += '%';
    else if (const size_t close = pattern.find('}', i + 1);
             c == 'q' && i + 1 < pattern.size() && pattern[i + 1] == '{' && close != std::string::npos) {
      const std::string name = pattern.substr(i + 2, close - i - 2);
      const char* v = f.env && !name.empty() ? f.env(name.c_str()) : nullptr;
      if (v != nullptr) out += v;
      i = close;
    } else { out += '%'; out += c; }
  }
  return out;
}

}  // namespace nb
