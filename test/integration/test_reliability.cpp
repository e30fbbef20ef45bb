// Rows of docs/reliability.md not covered elsewhere: the shim preloaded
// twice, outputs in places that cannot hold them, planted symlinks, umask.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

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
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json"));
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
  REQUIRE(symlink(victim.c_str(), dir.file("out.trace.json").c_str()) == 0);
  const auto r = run_steps(dir, {{"NB_OVERWRITE", "1"}});
  CHECK(r.exit_code == 0);
  CHECK(nbtest::read_file(victim) == "precious");
  CHECK(r.err.find("out.trace.json") != std::string::npos);  // said why it was not written
}

TEST_CASE("output files are created with the user's umask", "[integration][reliability]") {
  nbtest::TempDir dir;
  const auto r = run_steps(dir, {}, "umask 077;");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  struct stat st {};
  REQUIRE(stat(dir.file("out.trace.json").c_str(), &st) == 0);
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
    if (f.size() > 11 && f.compare(f.size() - 11, 11, ".trace.json") == 0) traces.push_back(f);
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
    if (f.size() > 11 && f.compare(f.size() - 11, 11, ".trace.json") == 0) counts.push_back(launches_in(dir.file(f)));
  }
  std::sort(counts.begin(), counts.end());
  CHECK(counts == std::vector<int>{2, 3});
}
