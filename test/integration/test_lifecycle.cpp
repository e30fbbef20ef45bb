// What happens around the recording: programs without CUDA, files and
// output, options, threads and drops.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <algorithm>
#include <regex>
#include <set>
#include <utility>

#include "outputs.h"

TEST_CASE("a program that never touches CUDA gets no files and no output", "[integration][lifecycle]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "nocuda", {"7"}, {{"NB_LOG", "debug"}, {"NB_MEM_MAX_ENTRIES", "junk"}});
  CHECK(r.run.exit_code == 7);
  CHECK(r.run.out == "no cuda here 1 1\n");
  CHECK(r.run.err.empty());
  CHECK(r.files.empty());
}

TEST_CASE("no CUDA driver or runtime loaded: a hook found by dlsym fails as a missing runtime does", "[integration][lifecycle]") {
  nbtest::TempDir dir;
  // cudaMalloc looked up in the global scope finds nb's hook (nb exports it);
  // with no runtime behind it, it must answer an error, not crash.
  const auto r = nbtest::run_recorded(dir, "nocuda", {"nodriver"}, {{"LD_LIBRARY_PATH", ""}});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 0);
  CHECK(r.run.out.find("cudaMalloc 3\n") != std::string::npos);  // cudaErrorInitializationError
  CHECK(r.run.err.empty());
  CHECK(r.files.empty());
}

TEST_CASE("outputs go to NB_OUT, the table to stderr, and say where they are", "[integration][lifecycle]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "paths", {dir.file("manifest")});
  REQUIRE(r.run.exit_code == 0);
  for (const char* f : {"out.trace.json.gz", "out.memory.pickle", "out.table.txt"}) {
    CHECK(std::find(r.files.begin(), r.files.end(), f) != r.files.end());
  }
  CHECK(r.run.err.find("Self Host") != std::string::npos);
  CHECK(r.run.err.find("nb: wrote " + dir.file("out.trace.json.gz")) != std::string::npos);
  CHECK(r.table.find("cuLaunchKernel") != std::string::npos);
  CHECK(r.table.find("dropped: 0") != std::string::npos);
}

TEST_CASE("a bad NB_* value gives one line and the default; the program runs on", "[integration][lifecycle]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "paths", {dir.file("manifest")}, {{"NB_MEM_MAX_ENTRIES", "-3"}});
  REQUIRE(r.run.exit_code == 0);
  const std::regex line("nb: NB_MEM_MAX_ENTRIES='-3' is not valid \\(expected [^\\n]*\\); using the default '1000000'\\n");
  CHECK(std::regex_search(r.run.err, line));
  REQUIRE(!r.trace.is_null());
}

TEST_CASE("existing output files are kept unless NB_OVERWRITE=1", "[integration][lifecycle]") {
  nbtest::TempDir dir;
  nbtest::write_file(dir.file("out.trace.json.gz"), "precious");
  const auto env = nbtest::shim_env(dir.file("out"));
  auto r = nbtest::run({nbtest::program("paths"), dir.file("manifest")}, env, dir.path());
  REQUIRE(r.exit_code == 0);
  CHECK(nbtest::read_file(dir.file("out.trace.json.gz")) == "precious");
  CHECK(r.err.find("exists; not overwritten") != std::string::npos);
  CHECK(nbtest::file_exists(dir.file("out.memory.pickle")));  // the others are written
  auto env2 = env;
  env2["NB_OVERWRITE"] = "1";
  r = nbtest::run({nbtest::program("paths"), dir.file("manifest")}, env2, dir.path());
  REQUIRE(r.exit_code == 0);
  CHECK(nbtest::read_file(dir.file("out.trace.json.gz")) != "precious");
  nbtest::nbread("trace", dir.file("out.trace.json.gz"));
}

TEST_CASE("NB_OUT expands %p and %n and creates missing directories", "[integration][lifecycle]") {
  nbtest::TempDir dir;
  auto env = nbtest::shim_env(dir.file("sub/dir/run-%n-%p"));
  const auto r = nbtest::run({nbtest::program("paths"), dir.file("manifest")}, env, dir.path());
  REQUIRE(r.exit_code == 0);
  const auto files = nbtest::list_dir(dir.file("sub/dir"));
  REQUIRE(files.size() == 3);
  CHECK(std::regex_match(files[0], std::regex("run-paths-[0-9]+\\.(trace\\.json\\.gz|memory\\.pickle|table\\.txt)")));
}

TEST_CASE("NB_ENABLE=0: calls pass through, nothing is written", "[integration][lifecycle]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "paths", {dir.file("manifest")}, {{"NB_ENABLE", "0"}});
  CHECK(r.run.exit_code == 0);
  CHECK(r.trace.is_null());
  CHECK(r.run.err.empty());
}

TEST_CASE("16 threads at once: every call recorded, none lost", "[integration][threads]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "threads", {dir.file("manifest"), "16", "2000"});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  const auto m = nbtest::read_manifest(dir.file("manifest"));
  std::map<std::string, long> seen;
  std::set<long> tids;
  for (const auto& e : nbtest::host_calls(r.trace)) {
    seen[e["name"]]++;
    tids.insert(e["tid"].get<long>());
  }
  for (const auto& [name, n] : m.counts) CHECK(seen[name] == n);
  CHECK(tids.size() == 16);
  CHECK(r.table.find("dropped: 0") != std::string::npos);
}

TEST_CASE("full rings drop records without blocking, and the drops are reported", "[integration][threads]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "threads", {dir.file("manifest"), "4", "50000"},
                                      {{"NB_RING_RECORDS", "64"}});
  REQUIRE(r.run.exit_code == 0);
  const auto m = nbtest::read_manifest(dir.file("manifest"));
  long total = 0;
  for (const auto& [name, n] : m.counts) total += n;
  std::smatch match;
  REQUIRE(std::regex_search(r.table, match, std::regex("records: ([0-9]+), dropped: ([0-9]+)")));
  const long recorded = std::stol(match[1]), dropped = std::stol(match[2]);
  CHECK(recorded + dropped == total);
  CHECK(dropped > 0);
  CHECK(r.run.err.find("records dropped") != std::string::npos);
}

namespace {
// The "# of Calls" and "Errors" cells of the table's row `name` (-1 if none).
std::pair<long, long> calls_and_errors(const std::string& table, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(table, m, std::regex(" " + name + " .* ([0-9]+) +([0-9]+)\n"))) return {-1, -1};
  return {std::stol(m[1]), std::stol(m[2])};
}
}  // namespace

TEST_CASE("full rings: the table's calls and errors are still exact, and the footer says what the drops affect",
          "[integration][threads][drops]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "threads", {dir.file("manifest"), "4", "50000", "7"},
                                      {{"NB_RING_RECORDS", "64"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  const auto m = nbtest::read_manifest(dir.file("manifest"));
  REQUIRE(m.errors.at("cuLaunchKernel") > 0);
  std::smatch match;
  REQUIRE(std::regex_search(r.table, match, std::regex("Calls: ([0-9]+), records: ([0-9]+), dropped: ([0-9]+)")));
  const long calls = std::stol(match[1]), recorded = std::stol(match[2]), dropped = std::stol(match[3]);
  REQUIRE(dropped > 0);
  // Every record dropped here is a call's, and every call is in a row.
  CHECK(calls == recorded + dropped);
  INFO(r.table);
  for (const auto& [name, n] : m.counts) {
    INFO(name);
    const auto [calls_in_row, errors_in_row] = calls_and_errors(r.table, name);
    CHECK(calls_in_row == n);
    CHECK(errors_in_row == (m.errors.count(name) ? m.errors.at(name) : 0));
  }
  // The rows' host times are those of the calls that have a record; the
  // footer names those rows.
  const auto partial = r.table.find("Host times of rows with dropped calls cover the recorded calls only: ");
  REQUIRE(partial != std::string::npos);
  const std::string partial_line = r.table.substr(partial, r.table.find('\n', partial) - partial);
  REQUIRE(std::regex_search(partial_line, match, std::regex("cuLaunchKernel \\(([0-9]+) of ([0-9]+) recorded\\)")));
  CHECK(std::stol(match[1]) < std::stol(match[2]));
  CHECK(std::stol(match[2]) == m.counts.at("cuLaunchKernel"));
  // The trace's table has the same counts, and nbprof stats prints the same table from it.
  long in_trace = 0, dropped_in_trace = 0;
  for (const auto& row : r.trace["nbTable"]["rows"]) {
    if (row["name"] != "cuLaunchKernel") continue;
    in_trace = row["calls"].get<long>();
    dropped_in_trace = row.value("droppedCalls", 0L);
  }
  CHECK(in_trace == m.counts.at("cuLaunchKernel"));
  CHECK(dropped_in_trace > 0);
  const auto again = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out"), "--rows", "0"});
  CHECK(again.out == r.table);
  // What was dropped of the memory calls: frees of allocations nb has no
  // record of are not blamed on allocations made before recording began
  // alone, and frees whose record was dropped leave their allocations live.
  const auto unmatched = r.table.find("Frees of addresses not seen allocated");
  if (unmatched != std::string::npos) {
    CHECK(r.table.find("allocation records were dropped; the rest, if any, were made before recording began",
                       unmatched) != std::string::npos);
  }
  if (partial_line.find("cuMemFree_v2 (") != std::string::npos) {
    CHECK(r.table.find("Free records dropped: ") != std::string::npos);
  }
}

TEST_CASE("calls the driver rejects (null configs, null functions) fail as without the shim", "[integration][hostile]") {
  nbtest::TempDir dir;
  const auto bare = nbtest::run({nbtest::program("bad_calls")}, {{"LD_LIBRARY_PATH", nbtest::fake_cuda_dir()}});
  REQUIRE(bare.exit_code == 0);
  const auto r = nbtest::run_recorded(dir, "bad_calls", {});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 0);
  CHECK(r.run.out == bare.out);
  size_t failed = 0;
  for (const auto& e : nbtest::host_calls(r.trace)) failed += e["args"].contains("result");
  CHECK(failed == 7);
}

TEST_CASE("stderr on a pipe whose reader is gone: the exit status stays the program's", "[integration][hostile]") {
  nbtest::TempDir dir;
  // `true` exits at once, so the table nb prints at exit meets a broken pipe.
  const std::string cmd = nbtest::program("paths") + " " + dir.file("manifest") +
                          " 2>&1 >/dev/null | true; echo \"status ${PIPESTATUS[0]}\"";
  auto env = nbtest::shim_env(dir.file("out"));
  const auto r = nbtest::run({"/bin/bash", "-c", cmd}, env, dir.path());
  CHECK(r.out == "status 0\n");
  CHECK(nbtest::file_exists(dir.file("out.trace.json.gz")));
}

TEST_CASE("a library linked against another runtime major keeps its own runtime", "[integration][hostile]") {
  // Toy runtimes 12 and 13 (test/programs/two_runtimes): the runtime hooks
  // are libcudart.so.13's, so the major-12 client must not be forwarded there.
  nbtest::TempDir dir;
  const std::string folder = std::string(NB_PROGRAMS_DIR) + "/two_runtimes";
  auto env = nbtest::shim_env(dir.file("out"));
  env["LD_LIBRARY_PATH"] = folder;
  env["NB_DEVICE"] = "0";
  const auto r = nbtest::run({folder + "/two_runtimes"}, env, dir.path());
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "runtime 12 answered 0xc00, runtime 13 answered 0xd00\n");
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  CHECK(nbtest::host_calls(trace).size() == 1);  // the major-13 client's cudaMalloc
}

TEST_CASE("NB_TORCH_ALLOCS=1 puts backend:cudaMallocAsync in PyTorch's allocator settings", "[integration][lifecycle]") {
  const std::string print_conf =
      "import os; print(os.environ.get('PYTORCH_CUDA_ALLOC_CONF'), os.environ.get('PYTORCH_ALLOC_CONF'))";
  nbtest::TempDir dir;
  auto env = nbtest::shim_env(dir.file("out"));
  env["NB_TORCH_ALLOCS"] = "1";
  env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True";
  env["-PYTORCH_ALLOC_CONF"] = "";
  auto r = nbtest::run({NB_PYTHON3, "-c", print_conf}, env, dir.path());
  CHECK(r.exit_code == 0);
  CHECK(r.out == "expandable_segments:True,backend:cudaMallocAsync None\n");
  env["NB_TORCH_ALLOCS"] = "0";
  r = nbtest::run({NB_PYTHON3, "-c", print_conf}, env, dir.path());
  CHECK(r.out == "expandable_segments:True None\n");
  // NB_ENABLE=0: nb changes nothing in the program.
  env["NB_TORCH_ALLOCS"] = "1";
  env["NB_ENABLE"] = "0";
  r = nbtest::run({NB_PYTHON3, "-c", print_conf}, env, dir.path());
  CHECK(r.out == "expandable_segments:True None\n");
  env.erase("NB_ENABLE");
  // A backend the program chose stays, with one line saying so.
  env["NB_TORCH_ALLOCS"] = "1";
  env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:native";
  r = nbtest::run({NB_PYTHON3, "-c", "import ctypes; ctypes.CDLL('libcudart.so.13').cudaFree(None); " + print_conf},
                  env, dir.path());
  CHECK(r.out == "backend:native None\n");
  CHECK(r.err.find("NB_TORCH_ALLOCS") != std::string::npos);
}

TEST_CASE("SIGTERM, SIGINT, SIGHUP at their default action: the files are written, then the process dies of the signal",
          "[integration][lifecycle][signals]") {
  for (const char* name : {"TERM", "INT", "HUP"}) {
    DYNAMIC_SECTION("SIG" << name) {
      nbtest::TempDir dir;
      const auto r = nbtest::run_recorded(dir, "signals", {"default", name}, {{"NB_PRINT_TABLE", "0"}});
      INFO(r.run.err);
      const int sig = std::string(name) == "INT" ? SIGINT : std::string(name) == "HUP" ? SIGHUP : SIGTERM;
      CHECK(r.run.exit_code == -1);
      CHECK(r.run.signal == sig);
      REQUIRE(!r.trace.is_null());
      REQUIRE(!r.snapshot.is_null());
      CHECK(nbtest::host_calls(r.trace).size() >= 4);
      CHECK(r.snapshot["segments"].size() == 1);  // the 2 MiB still live
      CHECK(r.table.find("cudaMalloc") != std::string::npos);
      for (const auto& f : r.files) CHECK(f.find(".partial") == std::string::npos);  // each renamed into place
    }
  }
}

// `timeout 120 signals spin 20000`, timed out once the worker has made its
// 20000 launches (./ready), not after a fixed second: a loaded machine (or
// a sanitizer) can take longer than that to start. SIGALRM is timeout's own
// timer firing: it signals the child, then its group, and exits 124.
nbtest::RunResult timeout_once_ready(const std::string& prog, const std::map<std::string, std::string>& env,
                                     const nbtest::TempDir& dir) {
  return nbtest::run({"/usr/bin/timeout", "120", prog, "spin", "20000"}, env, dir.path(), 150, [&](pid_t timeout) {
    for (int i = 0; i < 6000 && !nbtest::file_exists(dir.file("ready")); ++i) usleep(10000);
    kill(timeout, SIGALRM);
  });
}

// `timeout` signals its child and then its whole group; a launcher forwards
// Ctrl-C to workers the terminal already signalled. Either way the signal
// comes twice, the second while nb writes: the files must still come.
TEST_CASE("a signal delivered twice (timeout, a launcher forwarding Ctrl-C): the files are still written",
          "[integration][lifecycle][signals][no-tsan]") {
  for (int round = 0; round < 5; ++round) {
    for (const bool forwarded : {false, true}) {
      DYNAMIC_SECTION((forwarded ? "forwarding launcher, round " : "timeout 1, round ") << round) {
        nbtest::TempDir dir;
        auto env = nbtest::shim_env(dir.file("out"));
        env["NB_PRINT_TABLE"] = "0";
        env["NB_RING_RECORDS"] = "65536";  // the first 20000 come as a flood: none dropped on a loaded machine
        const std::string prog = nbtest::program("signals");
        const auto run = forwarded ? nbtest::run({prog, "forward", "20000"}, env, dir.path())
                                   : timeout_once_ready(prog, env, dir);
        INFO(run.err);
        CHECK(run.exit_code == (forwarded ? 0 : 124));  // the worker died of SIGINT / timeout saw its child end
        for (const char* ext : {".trace.json.gz", ".memory.pickle", ".table.txt"}) {
          CHECK(nbtest::file_exists(dir.file(std::string("out") + ext)));
        }
        for (const auto& f : nbtest::list_dir(dir.path())) CHECK(f.find(".partial") == std::string::npos);
        if (nbtest::file_exists(dir.file("out.trace.json.gz"))) {
          CHECK(nbtest::host_calls(nbtest::nbread("trace", dir.file("out.trace.json.gz"))).size() >= 20000);
        }
      }
    }
  }
}

TEST_CASE("a program's own signal handler, or an ignored signal, stays the program's", "[integration][lifecycle][signals]") {
  nbtest::TempDir dir;
  auto r = nbtest::run_recorded(dir, "signals", {"handler"}, {{"NB_PRINT_TABLE", "0"}});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 7);  // its handler ran
  CHECK(!r.trace.is_null());    // and the files came at exit
  nbtest::TempDir dir2;
  r = nbtest::run_recorded(dir2, "signals", {"ignore"}, {{"NB_PRINT_TABLE", "0"}});
  CHECK(r.run.exit_code == 0);  // SIGHUP stayed ignored
  CHECK(!r.trace.is_null());
}

// [no-tsan]: TSan runs handlers deferred and emulates dispositions; the
// re-raise then is not the one a real process makes.
TEST_CASE("a one-shot handler that re-raises its signal at the default action: the files are written, then it dies of it",
          "[integration][lifecycle][signals][no-tsan]") {
  for (const char* how : {"raise", "kill"}) {
    DYNAMIC_SECTION(how) {
      nbtest::TempDir dir;
      const auto r = nbtest::run_recorded(dir, "signals", {"reraise", how}, {{"NB_PRINT_TABLE", "0"}});
      INFO(r.run.err);
      CHECK(r.run.exit_code == -1);
      CHECK(r.run.signal == SIGTERM);
      REQUIRE(!r.trace.is_null());
      REQUIRE(!r.snapshot.is_null());
      CHECK(r.snapshot["segments"].size() == 1);
    }
  }
}

// [no-tsan]: as above, the hooked kill looks at the signal's disposition.
TEST_CASE("a program that ends its process group with SIGTERM: the files are written, then the whole group dies of it",
          "[integration][lifecycle][signals][no-tsan]") {
  for (const char* how : {"kill0", "killpg"}) {
    DYNAMIC_SECTION(how) {
      nbtest::TempDir dir;
      const auto r = nbtest::run_recorded(dir, "signals", {"group", how}, {{"NB_PRINT_TABLE", "0"}});
      INFO(r.run.err);
      CHECK(r.run.exit_code == -1);
      CHECK(r.run.signal == SIGTERM);
      REQUIRE(!r.trace.is_null());
      REQUIRE(!r.snapshot.is_null());
      CHECK(r.snapshot["segments"].size() == 1);  // the 2 MiB still live
      // The other member of the group got the signal too (nb did not die
      // before the program's kill went out).
      const int child = std::atoi(nbtest::read_file(dir.file("child.pid")).c_str());
      REQUIRE(child > 0);
      // Dead: no such process, or a zombie nobody reaped yet (its parent
      // died first; in a container, PID 1 may not reap it at once).
      const auto dead = [child] {
        if (::kill(child, 0) != 0 && errno == ESRCH) return true;
        const std::string stat = nbtest::read_file("/proc/" + std::to_string(child) + "/stat");
        const size_t paren = stat.rfind(')');
        return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
      };
      bool gone = false;
      for (int i = 0; i < 1000 && !(gone = dead()); ++i) usleep(10000);
      CHECK(gone);
    }
  }
}

TEST_CASE("a signal a program sends itself to wake its sigwait thread stays the program's", "[integration][lifecycle][signals]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "signals", {"sigwait"}, {{"NB_PRINT_TABLE", "0"}});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 0);  // the waiting thread got it; nobody died of it
  CHECK(!r.trace.is_null());    // the files came at exit
}

TEST_CASE("a forked child (no exec) dies of SIGTERM as without nb", "[integration][lifecycle][signals]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "signals", {"fork"}, {{"NB_PRINT_TABLE", "0"}});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 0);  // 4: the child outlived its SIGTERM
}
