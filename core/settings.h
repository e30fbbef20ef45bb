// Everything nb takes from its environment, read once when the library is
// loaded (or at the first hooked call, should that come first): the typed
// options, where the files go, and what the options imply. A program that
// changes its environment or its working directory afterwards changes
// nothing of nb's.
#pragma once
#include <string>
#include <vector>

#include "core/options.h"

namespace nb {

struct Settings {
  Options options;
  std::vector<std::string> problems;  // one line per bad NB_* value, said once the log is up
  StepMarker step;                    // the marker in use: NB_STEP, or sync with a schedule
  std::string program;                // %n, made safe for file names
  std::string start_dir;              // the working directory when nb loaded
  long pid = 0;                       // %p
  std::string prefix;                 // NB_OUT expanded, absolute (from the starting directory)

  // The same settings for another process: a forked child that records on
  // its own has its own pid in its prefix.
  void move_to(long new_pid);
};

// The file name part of the default NB_OUT, used inside a directory named
// by an NB_OUT that ends in '/'.
constexpr const char* kDefaultOutName = "nb-%n-%p";

// `program`: the program's short name (program_invocation_short_name);
// `cwd`: the starting directory ("" if unknown: the prefix stays relative).
Settings read_settings(const EnvLookup& lookup, long pid, const char* program, const std::string& cwd);

// Keeps a program's name to characters safe in a file name.
std::string safe_program_name(const char* name);

}  // namespace nb
