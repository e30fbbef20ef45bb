// Runs a test program under the shim and reads back what it wrote.
#pragma once
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "test_support.h"

namespace nbtest {

struct ManifestCall {
  std::string name;
  long tid;
  std::string kernel;
};

struct Manifest {
  std::vector<ManifestCall> calls;
  std::multiset<std::pair<unsigned long long, unsigned long long>> allocs;  // (addr, size)
  std::vector<unsigned long long> frees;
  std::vector<unsigned long long> ooms;
  std::map<std::string, long> counts;  // "count" lines: calls by name
  std::map<std::string, long> errors;  // "errors" lines: of those, the failed ones
};
Manifest read_manifest(const std::string& path);

struct Recorded {
  RunResult run;
  nlohmann::json trace;     // null if the file is missing
  nlohmann::json snapshot;  // null if the file is missing
  std::string table;
  std::vector<std::string> files;
};

// Runs `program` (name under the programs dir) with `args` and the shim
// preloaded, NB_OUT=<dir>/out; reads the outputs.
Recorded run_recorded(const TempDir& dir, const std::string& program_name,
                      const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& extra_env = {});

// The host-call events ("X", cat cuda_runtime / cuda_driver) of a trace,
// each with "args" (empty when the event has none).
std::vector<nlohmann::json> host_calls(const nlohmann::json& trace);
// Those joined to device work, by their "correlation" (the device events'
// own: HTA joins the two sides on it). A call appears once.
std::map<uint64_t, nlohmann::json> host_calls_by_correlation(const nlohmann::json& trace);

// Stack id → its frames as text, one per line, from the trace's "stack N"
// slices (an event's args.stack is the id).
std::map<uint64_t, std::string> stack_texts(const nlohmann::json& trace);

}  // namespace nbtest
