// What careless or unusual programs and launchers do around nb, on the fake
// driver (docs/reliability.md): signals and exits, stderr that moves or
// fills, planted links and names that cannot be made, fork and exec, two
// copies of the shim, threads that go on launching at exit, a tight
// RLIMIT_AS. Each case fails on an nb that loses files, blocks, clobbers
// or changes the program's exit status.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "outputs.h"
#include "test_support.h"

namespace {

std::map<std::string, std::string> env_for(const nbtest::TempDir& dir, const std::string& prefix = "out") {
  auto e = nbtest::shim_env(dir.file(prefix));
  e["NB_PRINT_TABLE"] = "0";
  return e;
}

nbtest::RunResult hostile(const nbtest::TempDir& dir, const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {nbtest::program("hostile")};
  argv.insert(argv.end(), args.begin(), args.end());
  return nbtest::run(argv, env, dir.path());
}

int launches_in(const std::string& trace_path) {
  const nlohmann::json trace = nbtest::nbread("trace", trace_path);  // kept: the loop walks into it
  int n = 0;
  for (const auto& e : trace["traceEvents"]) n += e.value("name", "") == "cuLaunchKernel";
  return n;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> files_ending(const nbtest::TempDir& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const std::string& f : nbtest::list_dir(dir.path())) {
    if (f.size() >= suffix.size() && f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0) out.push_back(f);
  }
  return out;
}

}  // namespace

TEST_CASE("stderr a pipe its parent reads only after stdout, already 63 KB full: the program exits as without nb",
          "[integration][faults]") {
  nbtest::TempDir dir;
  int out[2], err[2];
  REQUIRE(pipe(out) == 0);
  REQUIRE(pipe(err) == 0);
  auto env = nbtest::shim_env(dir.file("out"));
  const std::string prog = nbtest::program("hostile");
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    if (chdir(dir.path().c_str()) != 0) _exit(126);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execl(prog.c_str(), prog.c_str(), "noisy", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  // The parent's pattern: stdout to its end first, then stderr.
  const auto start = std::chrono::steady_clock::now();
  bool stdout_ended = false;
  char buf[4096];
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 100) == 1) {
      if (read(out[0], buf, sizeof buf) <= 0) {
        stdout_ended = true;
        break;
      }
    }
  }
  if (!stdout_ended) kill(pid, SIGKILL);
  std::string err_text;
  for (ssize_t n; (n = read(err[0], buf, sizeof buf)) > 0;) err_text.append(buf, static_cast<size_t>(n));
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(stdout_ended);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // Blocked on its stderr, the program never ends (the 20 s guard above);
  // a sanitized run on a loaded machine may take a few seconds.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(15));
  // The files are written all the same; what did not fit on stderr is counted.
  CHECK(nbtest::file_exists(dir.file("out.trace.json.gz")));
  CHECK(nbtest::read_file(dir.file("out.table.txt")).find("cuLaunchKernel") != std::string::npos);
}

TEST_CASE("nb's messages go to the stderr the program had when nb loaded, not to a file it later opens as fd 2",
          "[integration][faults]") {
  nbtest::TempDir dir;
  auto env = nbtest::shim_env(dir.file("out"));  // the table printed too
  const auto r = hostile(dir, {"stderr_to", dir.file("data.txt")}, env);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(nbtest::read_file(dir.file("data.txt")) == "data\n");  // the program's data, nothing of nb's
  CHECK(r.err.find("nb: wrote") != std::string::npos);         // nb's lines went to the first stderr
  CHECK(r.err.find("cuLaunchKernel") != std::string::npos);
}

TEST_CASE("nothing nb echoes carries control characters, whatever NB_OUT holds", "[integration][faults]") {
  nbtest::TempDir dir;
  auto env = env_for(dir);
  env["NB_OUT"] = dir.file("out\x1b[31mred\x07");
  const auto r = hostile(dir, {"work"}, env);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("nb: wrote") != std::string::npos);
  CHECK(r.err.find('\x1b') == std::string::npos);
  CHECK(r.err.find('\x07') == std::string::npos);
}

TEST_CASE("NB_OUT ending in '/' is a directory: the files get the default name inside it", "[integration][faults]") {
  nbtest::TempDir dir;
  auto env = env_for(dir);
  env["NB_OUT"] = dir.file("runs/");
  const auto r = hostile(dir, {"work"}, env);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const auto files = nbtest::list_dir(dir.file("runs"));
  REQUIRE(files.size() == 3);
  for (const std::string& f : files) CHECK(f.rfind("nb-hostile-", 0) == 0);
}

TEST_CASE("a hard link or a symlink planted at <name>.partial is never written through", "[integration][faults]") {
  for (const bool hard : {true, false}) {
    DYNAMIC_SECTION((hard ? "hard link" : "symlink")) {
      nbtest::TempDir dir;
      const std::string victim = dir.file("victim");
      nbtest::write_file(victim, "precious");
      const std::string planted = dir.file("out.trace.json.gz.partial");
      REQUIRE((hard ? link(victim.c_str(), planted.c_str()) : symlink(victim.c_str(), planted.c_str())) == 0);
      const auto r = hostile(dir, {"work"}, env_for(dir));
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(nbtest::read_file(victim) == "precious");
      CHECK(launches_in(dir.file("out.trace.json.gz")) == 50);  // written beside it, under another temporary name
    }
  }
}

TEST_CASE("NB_OVERWRITE=1 replaces an output by rename: other hard links to the old file keep its content",
          "[integration][faults]") {
  nbtest::TempDir dir;
  nbtest::write_file(dir.file("out.table.txt"), "old table");
  REQUIRE(link(dir.file("out.table.txt").c_str(), dir.file("kept").c_str()) == 0);
  auto env = env_for(dir);
  env["NB_OVERWRITE"] = "1";
  const auto r = hostile(dir, {"work"}, env);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(nbtest::read_file(dir.file("kept")) == "old table");
  CHECK(nbtest::read_file(dir.file("out.table.txt")).find("cuLaunchKernel") != std::string::npos);
}

TEST_CASE("a file that cannot be written leaves nothing under its final name, and 'exists' says what to do",
          "[integration][faults]") {
  nbtest::TempDir dir;
  // 240 characters: <name>.trace.json.gz fits NAME_MAX (255), <name>.trace.json.gz.partial does not.
  const std::string name(240, 'n');
  const auto r = hostile(dir, {"work"}, env_for(dir, name));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  for (const char* ext : {".trace.json.gz", ".memory.pickle", ".table.txt"}) CHECK_FALSE(nbtest::file_exists(dir.file(name + ext)));
  CHECK(count_of(r.err, "not written") == 3);
  // An output already there: kept, and the line says how to replace it.
  nbtest::TempDir dir2;
  nbtest::write_file(dir2.file("out.trace.json.gz"), "kept");
  const auto again = hostile(dir2, {"work"}, env_for(dir2));
  CHECK(again.exit_code == 0);
  CHECK(nbtest::read_file(dir2.file("out.trace.json.gz")) == "kept");
  CHECK(again.err.find("out.trace.json.gz exists; not overwritten (NB_OVERWRITE=1") != std::string::npos);
}

TEST_CASE("a forked child of a process that never used CUDA records on its own, under its own pid",
          "[integration][faults][lifecycle]") {
  nbtest::TempDir dir;
  const auto r = hostile(dir, {"fork_first"}, env_for(dir, "out-%p"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto traces = files_ending(dir, ".trace.json.gz");
  REQUIRE(traces.size() == 1);  // the child's; the parent made no CUDA call
  CHECK(launches_in(dir.file(traces[0])) == 50);
}

TEST_CASE("a forked child of a process that used CUDA is not recorded, and says so once", "[integration][faults][lifecycle]") {
  nbtest::TempDir dir;
  const auto r = hostile(dir, {"fork_after"}, env_for(dir, "out-%p"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(count_of(r.err, "a forked child") == 1);
  const auto traces = files_ending(dir, ".trace.json.gz");
  REQUIRE(traces.size() == 1);
  CHECK(launches_in(dir.file(traces[0])) == 50);  // the parent's only
}

TEST_CASE("exec: the image being replaced writes its files first, under <prefix>.exec", "[integration][faults][lifecycle]") {
  SECTION("exec of the same program") {
    nbtest::TempDir dir;
    const auto r = hostile(dir, {"exec_self"}, env_for(dir));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(launches_in(dir.file("out.exec.trace.json.gz")) == 50);  // the first image
    CHECK(launches_in(dir.file("out.trace.json.gz")) == 50);       // the second
  }
  SECTION("an exec that fails: the program carries on as without nb") {
    nbtest::TempDir dir;
    const auto r = hostile(dir, {"exec_fail"}, env_for(dir));
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(launches_in(dir.file("out.exec.trace.json.gz")) == 50);
    CHECK(r.err.find("should the exec fail") != std::string::npos);
  }
  SECTION("vfork + exec: the child leaves the parent's recording alone") {
    nbtest::TempDir dir;
    const auto r = hostile(dir, {"vfork_exec"}, env_for(dir));
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK_FALSE(nbtest::file_exists(dir.file("out.exec.trace.json.gz")));
    CHECK(launches_in(dir.file("out.trace.json.gz")) == 60);
  }
}

TEST_CASE("two copies of the shim in LD_PRELOAD: the second stays out of the way, with one line", "[integration][faults]") {
  nbtest::TempDir dir;
  // A second copy of the library under another path (its private libraries beside it).
  const std::string copy_dir = dir.file("copy");
  REQUIRE(mkdir(copy_dir.c_str(), 0755) == 0);
  const std::string shim_dir = nbtest::shim_path().substr(0, nbtest::shim_path().rfind('/'));
  const auto cp = nbtest::run({"/bin/cp", "-r", nbtest::shim_path(), shim_dir + "/nb-libs", copy_dir});
  REQUIRE(cp.exit_code == 0);
  auto env = env_for(dir);
  env["LD_PRELOAD"] = nbtest::shim_path() + ":" + copy_dir + "/libnb_shim.so";
  const auto r = hostile(dir, {"work"}, env);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(count_of(r.err, "another copy of libnb_shim.so is loaded first") == 1);
  CHECK(r.err.find("exists") == std::string::npos);
  CHECK(launches_in(dir.file("out.trace.json.gz")) == 50);
}

TEST_CASE("threads that go on launching while the program exits: not recorded, counted, and exit is not held up",
          "[integration][faults][threads]") {
  nbtest::TempDir dir;
  auto env = env_for(dir);
  env["NB_RING_RECORDS"] = "4096";
  const auto start = std::chrono::steady_clock::now();
  const auto r = hostile(dir, {"busy_exit", "4"}, env);
  const auto took = std::chrono::steady_clock::now() - start;
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("made while nb wrote its files at exit are not in them") != std::string::npos);
  CHECK(took < std::chrono::seconds(30));
  // CUPTI stopped with the hooks: no device work of calls that are not in the
  // trace, but for what the other threads launch in the moment between the
  // hooks stopping and CUPTI pausing (the exiting thread may be taken off
  // the CPU there). Before, CUPTI went on through the whole write: 9 times
  // as many records as calls.
  const std::string table = nbtest::read_file(dir.file("out.table.txt"));
  // ("Calls: C, records: R, dropped: D": a call whose record a full ring
  // dropped still made its work.)
  const auto calls_at = table.find("Calls: ");
  const auto dropped_at = table.find("dropped: ", calls_at);
  const auto device_at = table.find("Device records: ");
  REQUIRE(calls_at != std::string::npos);
  REQUIRE(dropped_at != std::string::npos);
  REQUIRE(device_at != std::string::npos);
  const long long calls = std::atoll(table.c_str() + calls_at + 7) + std::atoll(table.c_str() + dropped_at + 9);
  const long long device = std::atoll(table.c_str() + device_at + 16);
  CHECK(device <= calls + calls / 4 + 1000);
}

TEST_CASE("a tight RLIMIT_AS never changes the program's exit status", "[integration][faults][shell]") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  WARN("skipped: a sanitizer's runtime needs more address space than any limit this test sets");
  return;
#else
  // The smallest limit (KiB) at which the program runs without nb, then nb
  // at limits from there up: each run exits as the program does (0). The
  // first 2 MiB above it are left out: the shim's own code takes about 1 MiB
  // of address space, as any preloaded library of its size would.
  const auto run_limited = [](const nbtest::TempDir& dir, long kib, bool with_nb, const std::string& args) {
    auto env = env_for(dir);
    env["NB_STACKS"] = "all";
    if (!with_nb) {
      env.erase("LD_PRELOAD");
      env["-LD_PRELOAD"] = "";  // nor one the tests were started with
    }
    return nbtest::run({"/bin/bash", "-c", "ulimit -v " + std::to_string(kib) + "; exec " + args}, env, dir.path());
  };
  const std::string memory = nbtest::program("memory") + " manifest.txt";
  long lo = 8000, hi = 2000000;
  {
    nbtest::TempDir dir;
    REQUIRE(run_limited(dir, hi, false, memory).exit_code == 0);
  }
  while (hi - lo > 1000) {
    nbtest::TempDir dir;
    const long mid = (lo + hi) / 2;
    (run_limited(dir, mid, false, memory).exit_code == 0 ? hi : lo) = mid;
  }
  for (long add = 2000; add <= 40000; add += 2000) {
    nbtest::TempDir dir;
    const auto r = run_limited(dir, hi + add, true, memory);
    INFO("limit " << hi + add << " KiB: " << r.err);
    CHECK(r.exit_code == 0);
  }
  // The program takes all the memory there is before it exits: nb writes
  // what it can, and the status stays the program's.
  for (long add : {80000L, 300000L, 600000L}) {
    nbtest::TempDir dir;
    const auto r = run_limited(dir, hi + add, true, memory);
    INFO("limit " << hi + add << " KiB: " << r.err);
    CHECK(r.exit_code == 0);
  }
  for (const char* left : {"0", "1024", "4096", "16384"}) {
    nbtest::TempDir dir;
    const long kib = 400000;
    const auto r = run_limited(dir, kib, true, nbtest::program("hostile") + " fill " + left);
    INFO("limit " << kib << " KiB: " << r.err);
    CHECK(r.exit_code == 0);
  }
#endif
}
