// Typed NB_* options, parsed once from the environment. Parsing is a pure
// function of a getenv-like lookup so that tests can feed it any input.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/options_table.h"
#include "core/step_marker.h"

namespace nb {

enum class LogLevel : uint8_t { Trace, Debug, Info, Warn, Error, Off };

// One enum class per choice option, from its NB_CHOICES_<Enum> list, and
// the text of each value as the table writes it.
#define NB_ENUMERATOR(e, text) e,
#define NB_DECLARE_CHOICE(Enum)                                \
  enum class Enum : uint8_t { NB_CHOICES_##Enum(NB_ENUMERATOR) }; \
  const char* choice_name(Enum v);
NB_CHOICE_ENUMS(NB_DECLARE_CHOICE)
#undef NB_DECLARE_CHOICE
#undef NB_ENUMERATOR

// An integer that may be left unset (NB_RANK): empty = unset.
struct OptionalUInt {
  bool set = false;
  uint64_t value = 0;
};

// A length of time (NB_KEEP): "0" or a number with ns, us, ms, s, m or h.
struct Duration {
  uint64_t ns = 0;
};

struct Options {
#define NB_FIELD_Duration(Enum) Duration
#define NB_FIELD_String(Enum) std::string
#define NB_FIELD_Path(Enum) std::string
#define NB_FIELD_Step(Enum) StepMarker
#define NB_FIELD_Choice(Enum) Enum
#define NB_FIELD_Bool(Enum) bool
#define NB_FIELD_UInt(Enum) uint64_t
#define NB_FIELD_OptUInt(Enum) OptionalUInt
#define NB_FIELD_LogLevel(Enum) LogLevel
#define NB_DECLARE(field, NAME, Type, def, lo, hi, Enum, help) NB_FIELD_##Type(Enum) field{};
  NB_OPTIONS(NB_DECLARE)
#undef NB_DECLARE
};

// NB_KEEP makes the whole run one flight recording, which keeps its last
// DURATION; with windows of their own (NB_ACTIVE, NB_STEP=profiler-api) it
// does not apply (a window is already bounded by its steps).
inline bool flight_recorder(const Options& o) {
  return o.keep.ns != 0 && o.active == 0 && o.step.kind != StepMarker::Kind::ProfilerApi;
}

struct OptionInfo {
  const char* name;
  const char* type;
  const char* default_value;
  uint64_t min, max;
  const char* choices;  // Choice: "a|b|c"; otherwise ""
  const char* help;
};
const std::vector<OptionInfo>& option_table();

// Reads every option through `lookup` (nullptr = unset). A bad value adds one
// line to `problems` naming the variable and the accepted forms; the default
// is used instead.
using EnvLookup = std::function<const char*(const char*)>;
Options parse_options(const EnvLookup& lookup, std::vector<std::string>& problems);

// Effective values, one "NAME=value" per entry, for the debug log.
std::vector<std::string> describe_options(const Options& o);

// Single-value parsers (exposed for tests and fuzzing).
bool parse_bool(const std::string& s, bool& out);
bool parse_uint(const std::string& s, uint64_t min, uint64_t max, uint64_t& out);
bool parse_log_level(const std::string& s, LogLevel& out);
bool parse_choice(const std::string& s, const char* choices, std::string& out);
const char* log_level_name(LogLevel l);

// "30s", "500ms", "0": a duration as options take it.
std::string describe_duration(Duration d);

// What NB_OUT's %-sequences stand for.
struct PrefixFields {
  long pid = 0;                  // %p
  std::string program;           // %n
  std::string rank = "0";        // %r (0 when no launcher gave a rank)
  std::string local_rank = "0";  // %l
  std::string host;              // %h
  EnvLookup env;                 // %q{VAR}: VAR's value, empty when unset
};
// Expands %p, %n, %r, %l, %h, %q{VAR} and %% in an output prefix; any other
// '%' stays as it is.
std::string expand_prefix(const std::string& pattern, const PrefixFields& f);

}  // namespace nb
