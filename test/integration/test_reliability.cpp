// Rows of docs/reliability.md not covered elsewhere: the shim preloaded
// twice, outputs in places that cannot hold them, planted symlinks, umask.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <string>

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
