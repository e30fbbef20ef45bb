// Rows of docs/reliability.md not covered elsewhere: the shim preloaded
// twice, outputs in places that cannot hold them, planted symlinks, umask.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "outputs.h"
#include "test_support.h"

namespace {
nbtest::RunResult run_steps(const nbtest::TempDir& dir, const std::map<std::string, std::string>& extra,
                            const std::string& shell_prefix = "") {
  auto e = nbtest::shim_env(dir.file("out"));
  e["NB_PRINT_TABLE"] = "0";
  for (const auto& [k, v] : extra) e[k] = v;
  if (!shell_prefix.empty()) {
    return nbtest::run({"/bin/sh", "-c", shell_prefix + " exec \"$0\" 3", nbtest::program("steps")}, e, dir.path());
  }
  return nbtest::run({nbtest::program("steps"), "3"}, e, dir.path());
}
}  // namespace

TEST_CASE("the shim preloaded twice records once", "[integration][reliability]") {
  nbtest::TempDir dir;
  const auto r = run_steps(dir, {{"LD_PRELOAD", nbtest::shim_path() + ":" + nbtest::shim_path()}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  int launches = 0;
  for (const auto& ev : trace["traceEvents"]) launches += ev.value("name", "") == "cuLaunchKernel";
  CHECK(launches == 3 * 4);
}

TEST_CASE("NB_OUT where nothing can be written: one warning, the program unaffected", "[integration][reliability]") {
  nbtest::TempDir dir;
  const auto r = run_steps(dir, {{"NB_OUT", "/proc/nb-no-such-dir/out"}});
  CHECK(r.exit_code == 0);
  size_t lines = 0;
  for (size_t at = r.err.find("nb: "); at != std::string::npos; at = r.err.find("nb: ", at + 1)) ++lines;
  CHECK(lines == 1);
  CHECK(r.err.find("/proc/nb-no-such-dir") != std::string::npos);
}

TEST_CASE("a symlink planted at an output path is not followed", "[integration][reliability]") {
  nbtest::TempDir dir;
  const std::string victim = dir.file("victim");
  nbtest::write_file(victim, "precious");
  REQUIRE(symlink(victim.c_str(), dir.file("out.trace.json.gz").c_str()) == 0);
  const auto r = run_steps(dir, {{"NB_OVERWRITE", "1"}});
  CHECK(r.exit_code == 0);
  CHECK(nbtest::read_file(victim) == "precious");
  CHECK(r.err.find("out.trace.json.gz") != std::string::npos);  // said why it was not written
}

TEST_CASE("output files are created with the user's umask", "[integration][reliability]") {
  nbtest::TempDir dir;
  const auto r = run_steps(dir, {}, "umask 077;");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  struct stat st {};
  REQUIRE(stat(dir.file("out.trace.json.gz").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

namespace {
int launches_in(const std::string& trace_path) {
  const auto trace = nbtest::nbread("trace", trace_path);
  int n = 0;
  for (const auto& ev : trace["traceEvents"]) n += ev.value("name", "") == "cudaLaunchKernel";
  return n;
}
}  // namespace

TEST_CASE("fork without exec: the child's calls pass through, only the parent writes", "[integration][reliability][lifecycle]") {
  nbtest::TempDir dir;
  auto e = nbtest::shim_env(dir.file("out-%p"));
  e["NB_PRINT_TABLE"] = "0";
  const auto r = nbtest::run({nbtest::program("spawn"), "fork"}, e, dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> traces;
  for (const std::string& f : nbtest::list_dir(dir.path())) {
    if (f.size() > 14 && f.compare(f.size() - 14, 14, ".trace.json.gz") == 0) traces.push_back(f);
  }
  REQUIRE(traces.size() == 1);
  CHECK(launches_in(dir.file(traces[0])) == 4);  // the parent's 2 + 2, none of the child's 5
}

TEST_CASE("fork + exec (posix_spawn): the child inherits the preload and writes its own files", "[integration][reliability][lifecycle]") {
  nbtest::TempDir dir;
  auto e = nbtest::shim_env(dir.file("out-%p"));
  e["NB_PRINT_TABLE"] = "0";
  const auto r = nbtest::run({nbtest::program("spawn"), "exec"}, e, dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<int> counts;
  for (const std::string& f : nbtest::list_dir(dir.path())) {
    if (f.size() > 14 && f.compare(f.size() - 14, 14, ".trace.json.gz") == 0) counts.push_back(launches_in(dir.file(f)));
  }
  std::sort(counts.begin(), counts.end());
  CHECK(counts == std::vector<int>{2, 3});
}

namespace {
// Runs test/programs/py_exit.py MODE under the shim on the fake runtime.
nbtest::Recorded run_python_exit(const nbtest::TempDir& dir, const std::string& mode) {
  nbtest::Recorded r;
  auto env = nbtest::shim_env(dir.file("out"));
  env["NB_PRINT_TABLE"] = "0";
  r.run = nbtest::run({NB_PYTHON3, std::string(NB_SOURCE_DIR) + "/test/programs/py_exit.py", mode}, env, dir.path());
  if (nbtest::file_exists(dir.file("out.memory.pickle"))) r.snapshot = nbtest::nbread("snapshot", dir.file("out.memory.pickle"));
  if (nbtest::file_exists(dir.file("out.trace.json.gz"))) r.trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  return r;
}
}  // namespace

TEST_CASE("Python's ways to end: return, sys.exit, uncaught KeyboardInterrupt, SIGINT, SIGTERM: files written, status kept",
          "[integration][reliability][python][signals]") {
  struct Case {
    const char* mode;
    int exit_code;  // -1: died of `signal`
    int signal;
  };
  for (const Case c : {Case{"return", 0, 0}, Case{"sys_exit", 3, 0}, Case{"interrupt", -1, SIGINT},
                       Case{"sigint", -1, SIGINT}, Case{"sigterm", -1, SIGTERM}}) {
    DYNAMIC_SECTION(c.mode) {
      nbtest::TempDir dir;
      const auto r = run_python_exit(dir, c.mode);
      INFO(r.run.err);
      CHECK(r.run.exit_code == c.exit_code);
      CHECK(r.run.signal == c.signal);
      REQUIRE(!r.trace.is_null());
      REQUIRE(!r.snapshot.is_null());
      bool malloc_seen = false;
      for (const auto& e : nbtest::host_calls(r.trace)) malloc_seen |= e["name"] == "cudaMalloc";
      CHECK(malloc_seen);
      REQUIRE(r.snapshot["segments"].size() == 1);  // the 3 MiB still live
      CHECK(r.snapshot["segments"][0]["total_size"] == (3 << 20));
    }
  }
}

TEST_CASE("_exit, abort, SIGKILL: nothing more is written, what was written stays loadable, the status is the program's",
          "[integration][reliability][signals]") {
  struct Case {
    const char* how;
    int exit_code;  // -1: died of `signal`
    int signal;
  };
  for (const Case c : {Case{"_exit", 5, 0}, Case{"abort", -1, SIGABRT}, Case{"kill", -1, SIGKILL}}) {
    DYNAMIC_SECTION(c.how) {
      nbtest::TempDir dir;
      // Two windows of 4 steps; the program ends abruptly in the second,
      // once the first is written.
      auto env = nbtest::shim_env(dir.file("out"));
      env["NB_PRINT_TABLE"] = "0";
      env["NB_STEP"] = "kernel:lm_head";
      env["NB_ACTIVE"] = "4";
      env["NB_REPEAT"] = "2";
      const auto r = nbtest::run({nbtest::program("steps"), "6", "sleep_us=2000",
                                  "wait_for=" + dir.file("out.w1.table.txt"), std::string("end=") + c.how},
                                 env, dir.path());
      INFO(r.err);
      CHECK(r.exit_code == c.exit_code);
      CHECK(r.signal == c.signal);
      // Window 1 complete and loadable (the table is written last).
      const auto trace = nbtest::nbread("trace", dir.file("out.w1.trace.json.gz"));
      const auto snapshot = nbtest::nbread("snapshot", dir.file("out.w1.memory.pickle"));
      CHECK(!trace.is_null());
      CHECK(!snapshot.is_null());
      // Nothing of window 2, not even half a file: outputs appear only
      // complete (written as .partial, then renamed).
      for (const auto& f : nbtest::list_dir(dir.path())) {
        INFO(f);
        CHECK(f.find(".w2.") == std::string::npos);
        CHECK(f.find(".partial") == std::string::npos);
      }
    }
  }
}

TEST_CASE("nb creates and changes files only under its output prefix", "[integration][reliability][hygiene]") {
  nbtest::TempDir dir;
  // Windows, stacks, the table on stderr: every kind of output at once. A
  // witness preloaded beside the shim logs each path a file is created,
  // renamed, linked, unlinked or truncated by (test/programs/write_watch.c).
  const std::string prefix = dir.file("sub/deeper/run");
  auto env = nbtest::shim_env(prefix);
  env["LD_PRELOAD"] += ":" + nbtest::program("libwrite_watch.so");
  env["WRITE_WATCH_LOG"] = dir.file("writes.log");
  env["NB_STEP"] = "kernel:lm_head";
  env["NB_ACTIVE"] = "3";
  env["NB_REPEAT"] = "2";
  env["NB_STACKS"] = "all";
  const auto r = nbtest::run({nbtest::program("steps"), "12"}, env, dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string log = nbtest::read_file(dir.file("writes.log"));
  INFO(log);
  std::istringstream lines(log);
  std::string what, path;
  int under_prefix = 0;
  while (lines >> what >> path) {
    INFO(what << " " << path);
    if (path.rfind(prefix + ".", 0) == 0) {
      ++under_prefix;
      continue;
    }
    // Otherwise only the directories that lead to it (made when missing;
    // each one is tried, most exist), and unnamed scratch files in the
    // prefix's directory (O_TMPFILE: they never have a name).
    if (what == "tmpfile") {
      CHECK(path == prefix.substr(0, prefix.rfind('/')));
      continue;
    }
    CHECK(what.rfind("mkdir", 0) == 0);
    CHECK(prefix.rfind(path + "/", 0) == 0);
  }
  CHECK(under_prefix >= 6);  // the witness saw nb's outputs (two windows, three files each)
  CHECK(nbtest::file_exists(prefix + ".w2.trace.json.gz"));
}

TEST_CASE("a full disk while writing: one line for the file that did not fit, no torso left, the program unaffected",
          "[integration][reliability][hostile][shell]") {
  nbtest::TempDir dir;
  // A file size limit of 8 KiB (SIGXFSZ ignored, so write() fails with
  // EFBIG as it fails with ENOSPC on a full disk): the trace does not fit,
  // the snapshot and the table do.
  auto env = nbtest::shim_env(dir.file("out"));
  env["NB_PRINT_TABLE"] = "0";
  const auto r = nbtest::run({"/bin/bash", "-c", "trap '' XFSZ; ulimit -f 8; exec " + nbtest::program("steps") + " 96"}, env,
                             dir.path());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  // The trace's events go to scratch files beside it as the run goes, so
  // the trace fails there (or, had they fit, while being put together).
  CHECK((r.err.find("nb: could not write the trace's scratch file: File too large; " + dir.file("out.trace.json.gz") +
                    " not written") != std::string::npos ||
         r.err.find("nb: could not write all of " + dir.file("out.trace.json.gz.partial")) != std::string::npos));
  size_t problems = 0;
  for (size_t at = r.err.find("could not"); at != std::string::npos; at = r.err.find("could not", at + 1)) ++problems;
  CHECK(problems == 1);
  // Neither the empty claim nor the cut-off content stays behind.
  CHECK_FALSE(nbtest::file_exists(dir.file("out.trace.json.gz")));
  CHECK_FALSE(nbtest::file_exists(dir.file("out.trace.json.gz.partial")));
  CHECK(!nbtest::nbread("snapshot", dir.file("out.memory.pickle")).is_null());
  CHECK(nbtest::file_exists(dir.file("out.table.txt")));
}

TEST_CASE("dlopen / dlclose cycles of libcuda, and of a library with its own runtime: each round recorded, no stale pointer",
          "[integration][reliability][lifecycle]") {
  // test/programs/reload.cpp: three rounds; after each dlclose the range
  // libcuda had is taken, so it loads elsewhere next time. Without CUPTI
  // nothing else holds libcuda, and it is really unloaded; with CUPTI
  // (NB_DEVICE=1) CUPTI keeps it loaded.
  for (const char* mode : {"driver", "lib"}) {
    for (const char* device : {"0", "1"}) {
      DYNAMIC_SECTION(mode << " NB_DEVICE=" << device) {
        nbtest::TempDir dir;
        auto env = nbtest::shim_env(dir.file("out"));
        env["LD_LIBRARY_PATH"] += ":" + nbtest::program("");
        env["NB_DEVICE"] = device;
        env["NB_PRINT_TABLE"] = "0";
        // Under ASan (test/sanitizers.sh): the fake driver's own state,
        // allocated once per load and lost when it is unloaded, is not nb's.
        if (const char* asan = std::getenv("ASAN_OPTIONS")) env["ASAN_OPTIONS"] = std::string(asan) + ":detect_leaks=0";
        const auto r = nbtest::run({nbtest::program("reload"), mode, "3"}, env, dir.path());
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);
        if (std::string(device) == "0") {
          // The case that matters: the driver really went away and came back elsewhere.
          CHECK(r.out.find("round 2 unloaded 1 moved 1") != std::string::npos);
        }
        const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
        int allocs = 0, sets = 0;
        for (const auto& e : nbtest::host_calls(trace)) {
          const std::string name = e["name"];
          allocs += name.rfind("cuMemAlloc", 0) == 0;
          sets += name.rfind("cuMemsetD8", 0) == 0;
        }
        CHECK(allocs == 3);
        CHECK(sets == 3);
        CHECK(!nbtest::nbread("snapshot", dir.file("out.memory.pickle")).is_null());
      }
    }
  }
}

TEST_CASE("the program starts its own CUPTI tracing (as torch.profiler does): nb hands CUPTI over and says so once",
          "[integration][reliability][device]") {
  nbtest::TempDir dir;
  auto env = nbtest::shim_env(dir.file("out"));
  env["NB_PRINT_TABLE"] = "0";
  // 10 kernels, then the program's profiler registers its buffer callbacks
  // (which would replace nb's) and enables kernels, then 10 more.
  const auto r = nbtest::run({nbtest::program("own_profiler"), "10", "10"}, env, dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  // The other tool works as without nb: exactly its own 10 kernels.
  CHECK(r.out.find("own profiler saw 10 kernels") != std::string::npos);
  // nb kept the 10 before, and says once what it gave up.
  const std::string line = "the program started its own CUPTI client (cuptiActivityRegisterCallbacks";
  CHECK(r.err.find(line) != std::string::npos);
  CHECK(r.err.find("nb: ") == r.err.find("nb: the program started"));  // the only line besides "wrote"
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  int kernels = 0, launches = 0;
  for (const auto& e : trace["traceEvents"]) kernels += e.value("cat", "") == "kernel";
  for (const auto& e : nbtest::host_calls(trace)) launches += e["name"] == "cuLaunchKernel";
  CHECK(kernels == 10);
  CHECK(launches == 20);
  const std::string table = nbtest::read_file(dir.file("out.table.txt"));
  CHECK(table.find("Device time stops where the program started its own CUPTI client") != std::string::npos);
}

TEST_CASE("CUPTI records lost to someone else are counted: without the hand-over, the table and one line say so",
          "[integration][reliability][device]") {
  nbtest::TempDir dir;
  auto env = nbtest::shim_env(dir.file("out"));
  env["NB_PRINT_TABLE"] = "0";
  // The program reaches CUPTI's buffer registration through a pointer
  // from dlsym on libcupti's handle (nb's hook is not in the way), so nb
  // does not see it coming and its device records go to the program.
  env["OWN_PROFILER_DLSYM"] = "1";
  const auto r = nbtest::run({nbtest::program("own_profiler"), "10", "10"}, env, dir.path());
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string line = "calls that make device work have no device record: another CUPTI client";
  CHECK(r.err.find(line) != std::string::npos);
  CHECK(r.err.find(line) == r.err.rfind(line));
  const std::string table = nbtest::read_file(dir.file("out.table.txt"));
  CHECK(table.find("Calls that make device work with no device record: ") != std::string::npos);
}

TEST_CASE("another LD_PRELOAD tool interposing CUDA calls, before or after nb: both see every call", "[integration][reliability]") {
  for (const bool other_first : {true, false}) {
    DYNAMIC_SECTION((other_first ? "other tool first" : "nb first")) {
      nbtest::TempDir dir;
      auto env = nbtest::shim_env(dir.file("out"));
      env["NB_PRINT_TABLE"] = "0";
      const std::string other = nbtest::program("libother_tool.so");
      env["LD_PRELOAD"] = other_first ? other + ":" + nbtest::shim_path() : nbtest::shim_path() + ":" + other;
      // 8 steps of 4 launches; one allocation.
      const auto r = nbtest::run({nbtest::program("steps"), "8"}, env, dir.path());
      INFO(r.err);
      REQUIRE(r.exit_code == 0);
      CHECK(r.err.find("other tool: launches 32 allocs 1") != std::string::npos);
      int launches = 0, allocs = 0;
      for (const auto& e : nbtest::host_calls(nbtest::nbread("trace", dir.file("out.trace.json.gz")))) {
        launches += e["name"] == "cuLaunchKernel";
        allocs += e["name"] == "cuMemAlloc_v2";
      }
      CHECK(launches == 32);
      CHECK(allocs == 1);
    }
  }
}

TEST_CASE("a library using CUDA from its constructor, before nb's own have run", "[integration][reliability]") {
  // libcublasLt looks up driver functions with dlsym from its constructor,
  // which runs before a preloaded library's: nb's hooks must not need
  // anything its constructors set up (it crashed the nvcc + cuBLAS program).
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "early", {});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  CHECK(r.run.out.find("early 0") != std::string::npos);
  // The constructor's calls are recorded like the program's own.
  std::map<std::string, int> calls;
  for (const auto& e : nbtest::host_calls(r.trace)) ++calls[e["name"].get<std::string>()];
  CHECK(calls["cuMemAlloc_v2"] == 2);
  CHECK(calls["cuMemsetD8_v2"] == 1);
  CHECK(calls["cuMemFree_v2"] == 2);
}
