// A job's ranks: files named by rank from each launcher's variables, the
// trace's distributedInfo, `nbprof merge`, %n for interpreters, and HTA's
// multi-rank analyses on the result (when HTA's source is at hand).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "outputs.h"
#include "test_support.h"

namespace {

struct Launcher {
  const char* name;
  // The variables a launcher gives rank R of 4 (local rank R % 2: two hosts).
  std::map<std::string, std::string> (*env)(int rank);
};

const Launcher kLaunchers[] = {
    {"torchrun",
     [](int r) -> std::map<std::string, std::string> {
       return {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", std::to_string(r % 2)},
               {"LOCAL_WORLD_SIZE", "2"}, {"GROUP_RANK", std::to_string(r / 2)}};
     }},
    {"Slurm",
     [](int r) -> std::map<std::string, std::string> {
       return {{"SLURM_PROCID", std::to_string(r)}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", std::to_string(r % 2)},
               {"SLURM_NODEID", std::to_string(r / 2)}};
     }},
    {"Open MPI",
     [](int r) -> std::map<std::string, std::string> {
       return {{"OMPI_COMM_WORLD_RANK", std::to_string(r)}, {"OMPI_COMM_WORLD_SIZE", "4"},
               {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(r % 2)}};
     }},
};

// Runs 4 ranks of `steps 6 comm`, each writing into `dir` by the default name.
void run_job(const nbtest::TempDir& dir, const Launcher& l) {
  for (int r = 0; r < 4; ++r) {
    auto env = nbtest::shim_env(dir.path() + "/");
    env["NB_PRINT_TABLE"] = "0";
    env["NB_STACKS"] = "all";
    for (const auto& [k, v] : l.env(r)) env[k] = v;
    const auto run = nbtest::run({nbtest::program("steps"), "6", "comm"}, env, dir.path());
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
  }
}

// The rank in each trace file name nb-steps-r<R>-<pid>.trace.json.gz.
std::map<int, std::string> traces_by_rank(const nbtest::TempDir& dir) {
  std::map<int, std::string> out;
  const std::regex name(R"(nb-steps-r([0-9]+)-[0-9]+\.trace\.json\.gz)");
  for (const std::string& f : nbtest::list_dir(dir.path())) {
    std::smatch m;
    if (std::regex_match(f, m, name)) out[std::stoi(m[1])] = dir.file(f);
  }
  return out;
}

int count_kernels(const nlohmann::json& trace) {
  int n = 0;
  for (const auto& e : trace["traceEvents"]) n += e.value("cat", "") == "kernel";
  return n;
}

}  // namespace

TEST_CASE("ranks: each launcher's 4 ranks write files named by rank, with distributedInfo; merge puts them on one "
          "timeline",
          "[integration][ranks]") {
  for (const Launcher& l : kLaunchers) {
    INFO(l.name);
    nbtest::TempDir dir;
    run_job(dir, l);
    const auto traces = traces_by_rank(dir);
    REQUIRE(traces.size() == 4);
    int kernels = 0;
    for (const auto& [rank, path] : traces) {
      INFO(path);
      const std::string prefix = path.substr(0, path.size() - std::string(".trace.json.gz").size());
      CHECK(nbtest::file_exists(prefix + ".memory.pickle"));
      CHECK(nbtest::file_exists(prefix + ".table.txt"));
      const auto t = nbtest::nbread("trace", path);
      CHECK(t["distributedInfo"]["rank"] == rank);
      CHECK(t["distributedInfo"]["world_size"] == 4);
      CHECK(t["distributedInfo"]["local_rank"] == rank % 2);
      // NCCL's kernels ran, but no libnccl is loaded (the fake stack): no version.
      CHECK(t["distributedInfo"]["backend"] == "nccl");
      CHECK_FALSE(t["distributedInfo"].contains("nccl_version"));
      // HTA reads the rank with a regular expression: "rank": N, with the space.
      const std::string head = nbtest::run({"/bin/sh", "-c", "gzip -dc '" + path + "' | head -c 300"}).out;
      CHECK(head.find("\"rank\": " + std::to_string(rank)) != std::string::npos);
      kernels += count_kernels(t);
      // NCCL's kernels say their collective, on the stream they ran on.
      int all_reduces = 0;
      std::set<int64_t> streams;
      for (const auto& e : t["traceEvents"]) {
        if (e.value("cat", "") != "kernel" || e["name"].get<std::string>().rfind("ncclDevKernel_AllReduce", 0) != 0) continue;
        all_reduces += e["args"].value("Collective name", "") == "AllReduce";
        streams.insert(e["tid"].get<int64_t>());
      }
      CHECK(all_reduces == 6);
      CHECK(streams.size() == 1);
      CHECK(streams.count(7) == 0);  // not the default stream's track
    }
    REQUIRE(kernels == 4 * 6 * 5);

    const std::string merged = dir.file("merged.trace.json.gz");
    const auto m = nbtest::run({NB_NBPROF_PATH, "merge", dir.path(), "-o", merged});
    INFO(m.err);
    REQUIRE(m.exit_code == 0);
    const auto t = nbtest::nbread("trace", merged);  // passes the suite's trace checks
    CHECK(count_kernels(t) == kernels);
    // One group per rank, in rank order: the host process, then its GPU.
    std::map<int64_t, std::string> names;
    std::map<int64_t, int64_t> order;
    for (const auto& e : t["traceEvents"]) {
      if (e["name"] == "process_name") names[e["pid"]] = e["args"]["name"];
      if (e["name"] == "process_sort_index") order[e["args"]["sort_index"]] = e["pid"];
    }
    std::vector<std::string> in_order;
    for (const auto& [index, pid] : order) in_order.push_back(names[pid]);
    REQUIRE(in_order.size() == 8);
    for (int r = 0; r < 4; ++r) {
      CHECK(in_order[2 * r].find("steps (rank " + std::to_string(r) + ", ") == 0);
      CHECK(in_order[2 * r + 1] == "rank " + std::to_string(r) + ": GPU 0");
    }
    // Arrows stay within their rank: every flow id has one start and one end.
    std::map<uint64_t, std::pair<int, int>> flows;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] == "s") ++flows[e["id"].get<uint64_t>()].first;
      if (e["ph"] == "f") ++flows[e["id"].get<uint64_t>()].second;
    }
    CHECK(flows.size() >= static_cast<size_t>(kernels));  // and one per copy
    for (const auto& [id, ends] : flows) CHECK(ends == std::make_pair(1, 1));
    // Every stack an event names is in stackFrames.
    for (const auto& e : t["traceEvents"]) {
      if (e.contains("sf")) CHECK(t["stackFrames"].contains(e["sf"].get<std::string>()));
    }
    // An existing output is kept.
    CHECK(nbtest::run({NB_NBPROF_PATH, "merge", dir.path(), "-o", merged}).exit_code == 2);
  }
}

TEST_CASE("ranks: NB_RANK overrides the launcher's; %r %l %h %q{VAR} name the files", "[integration][ranks]") {
  nbtest::TempDir dir;
  auto env = nbtest::shim_env(dir.path() + "/out/%h-r%r-l%l-%q{JOB_ID}");
  env["NB_PRINT_TABLE"] = "0";
  env["RANK"] = "1";
  env["LOCAL_RANK"] = "1";
  env["NB_RANK"] = "6";
  env["JOB_ID"] = "77";
  const auto run = nbtest::run({nbtest::program("steps"), "2"}, env, dir.path());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string short_host(host, std::strcspn(host, "."));
  const std::string prefix = dir.path() + "/out/" + short_host + "-r6-l1-77";
  REQUIRE(nbtest::file_exists(prefix + ".trace.json.gz"));
  CHECK(nbtest::nbread("trace", prefix + ".trace.json.gz")["distributedInfo"]["rank"] == 6);
}

namespace {
// A Python program on the fake runtime, through ctypes.
constexpr const char* kPythonProgram =
    "import ctypes\n"
    "cudart = ctypes.CDLL('libcudart.so.13')\n"
    "p = ctypes.c_void_p()\n"
    "assert cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0\n"
    "assert cudart.cudaFree(p) == 0\n";

// The names of the trace files the command wrote in `dir`, without the pid.
std::set<std::string> written_names(const nbtest::TempDir& dir, const std::vector<std::string>& argv) {
  auto env = nbtest::shim_env(dir.path() + "/");
  env["NB_PRINT_TABLE"] = "0";
  env["PYTHONPATH"] = dir.path();
  const auto run = nbtest::run(argv, env, dir.path());
  INFO(run.err);
  CHECK(run.exit_code == 0);
  std::set<std::string> out;
  const std::regex name(R"((nb-.*)-[0-9]+\.trace\.json\.gz)");
  for (const std::string& f : nbtest::list_dir(dir.path())) {
    std::smatch m;
    if (std::regex_match(f, m, name)) out.insert(m[1]);
  }
  return out;
}
}  // namespace

TEST_CASE("%n: a Python script's or module's name, a native program's, a #! script's", "[integration][ranks][python]") {
  {
    nbtest::TempDir dir;
    nbtest::write_file(dir.file("serve.py"), kPythonProgram);
    CHECK(written_names(dir, {NB_PYTHON3, "-u", dir.file("serve.py")}) == std::set<std::string>{"nb-serve"});
  }
  {
    nbtest::TempDir dir;
    mkdir(dir.file("pkg").c_str(), 0755);
    nbtest::write_file(dir.file("pkg/__init__.py"), "");
    nbtest::write_file(dir.file("pkg/mod.py"), kPythonProgram);
    CHECK(written_names(dir, {NB_PYTHON3, "-m", "pkg.mod"}) == std::set<std::string>{"nb-pkg.mod"});
  }
  {
    nbtest::TempDir dir;
    nbtest::write_file(dir.file("job.py"), std::string("#!/usr/bin/env ") + NB_PYTHON3 + "\n" + kPythonProgram);
    chmod(dir.file("job.py").c_str(), 0755);
    CHECK(written_names(dir, {dir.file("job.py")}) == std::set<std::string>{"nb-job"});
  }
  {
    nbtest::TempDir dir;
    CHECK(written_names(dir, {nbtest::program("steps"), "1"}) == std::set<std::string>{"nb-steps"});
  }
}

TEST_CASE("ranks: HTA reads a directory of nb's rank traces as one job", "[integration][ranks][python][hta]") {
  // HTA from its source (NB_HTA_SRC, a checkout of
  // facebookresearch/HolisticTraceAnalysis) with Debian's pandas; where
  // either is missing this says so and checks nothing.
  const char* src = std::getenv("NB_HTA_SRC");
  const std::string hta = src ? src : "";
  if (hta.empty() || !nbtest::file_exists(hta + "/hta/trace_analysis.py")) {
    WARN("skipped: HTA's source is not here (set NB_HTA_SRC to a checkout of facebookresearch/HolisticTraceAnalysis)");
    return;
  }
  const auto pandas = nbtest::run({"/usr/bin/python3", "-c", "import pandas, plotly"}, {{"-LD_PRELOAD", ""}});
  if (pandas.exit_code != 0) {
    WARN("skipped: Debian's python3-pandas and python3-plotly are not installed (scripts/install-deps.sh installs them)");
    return;
  }
  nbtest::TempDir dir;
  run_job(dir, kLaunchers[0]);
  const auto r = nbtest::run({"/usr/bin/python3", nbtest::source_dir() + "/bench/workloads/hta_check.py", hta, dir.path()},
                             {{"-LD_PRELOAD", ""}}, "", 300);
  INFO(r.out + r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("ranks [0, 1, 2, 3]") != std::string::npos);
  CHECK(r.out.find("get_temporal_breakdown: ok") != std::string::npos);
  CHECK(r.out.find("get_comm_comp_overlap: ok") != std::string::npos);
}

TEST_CASE("nbprof checks the files the shim will write: the script's name and the rank", "[integration][ranks][nbprof]") {
  nbtest::TempDir dir;
  nbtest::write_file(dir.file("serve.py"), kPythonProgram);
  nbtest::write_file(dir.file("run-serve-r2.trace.json.gz"), "from an earlier run");
  const auto r = nbtest::run({NB_NBPROF_PATH, "-o", dir.file("run-%n-r%r"), "--", NB_PYTHON3, dir.file("serve.py")},
                             {{"RANK", "2"}, {"LD_LIBRARY_PATH", nbtest::fake_cuda_dir()}}, dir.path());
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("run-serve-r2.trace.json.gz exists: pass --overwrite, or another --out") != std::string::npos);
  // Another rank's name is free: the run goes ahead and writes it. (A
  // native program: under ASan, an uninstrumented Python that nbprof's
  // LD_PRELOAD hands the sanitized shim loads the sanitizer's runtime late,
  // and its leak check at exit then misreads nb's writer thread.)
  nbtest::write_file(dir.file("run-steps-r2.trace.json.gz"), "from an earlier run");
  const auto ok = nbtest::run({NB_NBPROF_PATH, "-o", dir.file("run-%n-r%r"), "--print-table", "0", "--",
                               nbtest::program("steps"), "1"},
                              {{"RANK", "3"}, {"LD_LIBRARY_PATH", nbtest::fake_cuda_dir()}}, dir.path());
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(nbtest::file_exists(dir.file("run-steps-r3.trace.json.gz")));
}

TEST_CASE("merge: leaves out merged traces and others' files in a directory; a cut-off trace merges up to its cut",
          "[integration][ranks]") {
  nbtest::TempDir dir;
  run_job(dir, kLaunchers[0]);
  const std::string merged = dir.file("m.trace.json.gz");
  REQUIRE(nbtest::run({NB_NBPROF_PATH, "merge", dir.path(), "-o", merged}).exit_code == 0);
  const int kernels = count_kernels(nbtest::nbread("trace", merged));
  REQUIRE(kernels == 4 * 6 * 5);
  nbtest::write_file(dir.file("other.pt.trace.json"), "{\"traceEvents\": []}\n");
  // Again over itself (the same file by another path), and into a new name
  // beside the first merge: the merged trace and the other tool's file are
  // left out, saying so.
  auto again = nbtest::run({NB_NBPROF_PATH, "merge", dir.path() + "/", "-o", dir.path() + "//m.trace.json.gz", "--overwrite"});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(again.err.find("left out " + dir.path() + "//other.pt.trace.json") != std::string::npos);
  CHECK(count_kernels(nbtest::nbread("trace", merged)) == kernels);
  again = nbtest::run({NB_NBPROF_PATH, "merge", dir.path(), "-o", dir.file("m2.trace.json.gz")});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(again.err.find("m.trace.json.gz: a merged trace already") != std::string::npos);
  CHECK(count_kernels(nbtest::nbread("trace", dir.file("m2.trace.json.gz"))) == kernels);
  // Named on the command line, another tool's file is an error.
  CHECK(nbtest::run({NB_NBPROF_PATH, "merge", dir.file("other.pt.trace.json"), "-o", dir.file("m3.trace.json.gz")})
            .exit_code == 2);
  CHECK_FALSE(nbtest::file_exists(dir.file("m3.trace.json.gz.partial")));
  // A trace cut off in the middle of an event (a copy being written).
  const auto traces = traces_by_rank(dir);
  const std::string text = nbtest::run({"/bin/sh", "-c", "gzip -dc '" + traces.at(0) + "'"}).out;
  nbtest::TempDir cut;
  // Inside the first kernel event past the middle, just after a '}' of its
  // args (a cut that ends in '}' but is not a whole event), and then at the
  // end of that event's line (whole events, no end of the trace).
  const size_t kernel_at = text.find("\"cat\":\"kernel\"", text.size() / 2);
  REQUIRE(kernel_at != std::string::npos);
  const size_t line_end = text.find('\n', kernel_at);
  const size_t inner_brace = text.rfind('}', text.rfind('}', line_end) - 1);
  REQUIRE(inner_brace > kernel_at);
  nbtest::write_file(cut.file("cut.trace.json"), text.substr(0, inner_brace + 1));
  const auto c = nbtest::run({NB_NBPROF_PATH, "merge", cut.file("cut.trace.json"), "-o", cut.file("m.trace.json.gz")});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  CHECK(c.err.find("ends in the middle of an event") != std::string::npos);
  nbtest::write_file(cut.file("cut2.trace.json"), text.substr(0, line_end + 1));
  const auto c2 = nbtest::run({NB_NBPROF_PATH, "merge", cut.file("cut2.trace.json"), "-o", cut.file("m2.trace.json.gz")});
  INFO(c2.err);
  REQUIRE(c2.exit_code == 0);
  CHECK(c2.err.find("ends before its events' end") != std::string::npos);
  // Valid JSON with the events before the cut (its stack frames, at the
  // end of the file, are gone with the rest).
  const auto loaded = nbtest::run({NB_PYTHON3, "-c",
                                   "import gzip, json, sys; t = json.load(gzip.open(sys.argv[1])); "
                                   "print(sum(e.get('cat') == 'kernel' for e in t['traceEvents']))",
                                   cut.file("m.trace.json.gz")},
                                  {{"-LD_PRELOAD", ""}});
  INFO(loaded.err);
  REQUIRE(loaded.exit_code == 0);
  CHECK(std::stoi(loaded.out) > 0);
  const auto loaded2 = nbtest::run({NB_PYTHON3, "-c",
                                    "import gzip, json, sys; t = json.load(gzip.open(sys.argv[1])); "
                                    "print(sum(e.get('cat') == 'kernel' for e in t['traceEvents']))",
                                    cut.file("m2.trace.json.gz")},
                                   {{"-LD_PRELOAD", ""}});
  INFO(loaded2.err);
  REQUIRE(loaded2.exit_code == 0);
  CHECK(std::stoi(loaded2.out) == std::stoi(loaded.out) + 1);
}
