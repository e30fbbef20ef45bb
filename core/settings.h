// Everything nb takes from its environment, read once when the library is
// loaded (or at the first hooked call, should that come first): the typed
// options, who this process is (program, rank, host) and where the files
// go, and what the options imply. A program that changes its environment or
// its working directory afterwards changes nothing of nb's.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/options.h"
#include "core/program_name.h"
#include "core/rank.h"

namespace nb {

// What nb learns of its process when it loads.
struct ProcessFacts {
  long pid = 0;
  std::string short_name;         // program_invocation_short_name
  std::vector<std::string> argv;  // /proc/self/cmdline (empty: short_name alone names it)
  std::string host;               // short host name
  std::string cwd;                // the starting directory ("" if unknown: the prefix stays relative)
};

struct Settings {
  Options options;
  std::vector<std::string> problems;  // one line per bad NB_* value, said once the log is up
  StepMarker step;                    // the marker in use: NB_STEP, or sync with a schedule
  std::string program;                // %n, made safe for file names
  RankInfo rank;                      // %r, %l, the trace's distributedInfo
  std::string host;                   // %h
  std::string start_dir;              // the working directory when nb loaded
  long pid = 0;                       // %p
  std::string out_pattern;            // NB_OUT, or the default that fits (with the rank when there is one)
  std::map<std::string, std::string> out_env;  // %q{VAR}: the variables NB_OUT names, as they were at load
  std::string prefix;                 // NB_OUT expanded, absolute (from the starting directory)

  // The same settings for another process: a forked child that records on
  // its own has its own pid in its prefix.
  void move_to(long new_pid);
};

// The file name part of the default NB_OUT, used inside a directory named
// by an NB_OUT that ends in '/', and the one for a launcher's rank: ranks
// that share a file system never write the same names.
constexpr const char* kDefaultOutName = "nb-%n-%p";
constexpr const char* kDefaultRankOutName = "nb-%n-r%r-%p";

Settings read_settings(const EnvLookup& lookup, const ProcessFacts& process);

}  // namespace nb
