#include "outputs.h"

#include <fstream>
#include <sstream>

namespace nbtest {

Manifest read_manifest(const std::string& path) {
  Manifest m;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::string kind;
    std::getline(ss, kind, '\t');
    if (kind == "call") {
      ManifestCall c;
      std::string tid;
      std::getline(ss, c.name, '\t');
      std::getline(ss, tid, '\t');
      std::getline(ss, c.kernel, '\t');
      c.tid = std::stol(tid);
      m.calls.push_back(c);
    } else if (kind == "alloc") {
      unsigned long long a, s;
      ss >> a >> s;
      m.allocs.insert({a, s});
    } else if (kind == "free") {
      unsigned long long a;
      ss >> a;
      m.frees.push_back(a);
    } else if (kind == "oom") {
      unsigned long long s;
      ss >> s;
      m.ooms.push_back(s);
    } else if (kind == "count" || kind == "errors") {
      std::string name;
      long n;
      std::getline(ss, name, '\t');
      ss >> n;
      (kind == "count" ? m.counts : m.errors)[name] = n;
    }
  }
  return m;
}

Recorded run_recorded(const TempDir& dir, const std::string& program_name, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& extra_env) {
  Recorded r;
  auto env = shim_env(dir.file("out"));
  for (const auto& [k, v] : extra_env) env[k] = v;
  std::vector<std::string> argv = {program(program_name)};
  argv.insert(argv.end(), args.begin(), args.end());
  r.run = run(argv, env, dir.path());
  r.files = list_dir(dir.path());
  if (file_exists(dir.file("out.trace.json.gz"))) r.trace = nbread("trace", dir.file("out.trace.json.gz"));
  if (file_exists(dir.file("out.memory.pickle"))) r.snapshot = nbread("snapshot", dir.file("out.memory.pickle"));
  r.table = read_file(dir.file("out.table.txt"));
  return r;
}

std::vector<nlohmann::json> host_calls(const nlohmann::json& trace) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || (e["cat"] != "cuda_runtime" && e["cat"] != "cuda_driver")) continue;
    out.push_back(e);
    // A call with nothing to say has no "args": an empty one, for the checks.
    if (!out.back().contains("args")) out.back()["args"] = nlohmann::json::object();
  }
  return out;
}

std::map<uint64_t, nlohmann::json> host_calls_by_correlation(const nlohmann::json& trace) {
  std::map<uint64_t, nlohmann::json> out;
  for (const auto& e : host_calls(trace)) {
    if (e["args"].contains("correlation")) out.emplace(e["args"]["correlation"].get<uint64_t>(), e);
  }
  return out;
}

std::map<uint64_t, std::string> stack_texts(const nlohmann::json& trace) {
  std::map<uint64_t, std::string> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "call_stack") continue;
    const std::string name = e["name"];
    out[std::stoull(name.substr(name.find(' ') + 1))] = e["args"]["frames"].get<std::string>();
  }
  return out;
}

}  // namespace nbtest
