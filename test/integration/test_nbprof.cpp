// nbprof, the front door: options map to NB_* variables from the shim's own
// table, booleans work as bare flags, and a run writes the files.
#include <catch2/catch.hpp>

#include "outputs.h"

TEST_CASE("nbprof maps options to NB_* variables; a bare boolean means 1", "[integration][nbprof]") {
  const auto r = nbtest::run({NB_NBPROF_PATH, "--dry-run", "--torch-allocs", "--stacks", "all", "--print-table", "0",
                              "-o", "x/run", "--", "prog", "arg"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("NB_TORCH_ALLOCS=1") != std::string::npos);
  CHECK(r.out.find("NB_STACKS=all") != std::string::npos);
  CHECK(r.out.find("NB_PRINT_TABLE=0") != std::string::npos);
  CHECK(r.out.find("NB_OUT=x/run") != std::string::npos);
  CHECK(r.out.find("libnb_shim.so") != std::string::npos);
  CHECK(r.out.find(" prog arg") != std::string::npos);

  const auto bad = nbtest::run({NB_NBPROF_PATH, "--no-such-option", "1", "--", "prog"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("unknown option --no-such-option") != std::string::npos);
  const auto missing = nbtest::run({NB_NBPROF_PATH, "--stacks"});
  CHECK(missing.exit_code != 0);
}

TEST_CASE("nbprof runs a program under the shim and writes its files", "[integration][nbprof]") {
  nbtest::TempDir dir;
  // nbprof sets LD_PRELOAD and NB_OUT itself; the fake CUDA stack stands in for a GPU.
  const std::map<std::string, std::string> env = {
      {"LD_LIBRARY_PATH", nbtest::fake_cuda_dir()}, {"-LD_PRELOAD", ""}, {"-NB_OUT", ""}};
  const auto r = nbtest::run({NB_NBPROF_PATH, "-o", dir.file("out"), "--print-table", "0", "--",
                              nbtest::program("memory"), dir.file("manifest")},
                             env, dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(nbtest::file_exists(dir.file("out.trace.json")));
  CHECK(nbtest::file_exists(dir.file("out.memory.pickle")));
  CHECK(nbtest::file_exists(dir.file("out.table.txt")));
}

TEST_CASE("nbprof steps suggests the kernel that ends each step", "[integration][nbprof][windows]") {
  nbtest::TempDir dir;
  const std::map<std::string, std::string> env = {
      {"LD_LIBRARY_PATH", nbtest::fake_cuda_dir()}, {"-LD_PRELOAD", ""}, {"-NB_OUT", ""}};
  // A steady loop: 3 layer kernels close together, then lm_head, every
  // 50 ms (long enough that a loaded machine's sleep overshoot stays a
  // small part of it).
  const auto r = nbtest::run({NB_NBPROF_PATH, "steps", "-o", dir.file("census"), "--",
                              nbtest::program("steps"), "12", "sleep_us=50000"},
                             env, dir.path());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("suggested: NB_STEP='kernel:lm_head'") != std::string::npos);
  const std::string file = nbtest::read_file(dir.file("census.steps.txt"));
  CHECK(file.find("kernel:lm_head") != std::string::npos);
  // And the suggestion works: a window of exactly the steps asked for.
  auto e = nbtest::shim_env(dir.file("out"));
  e["NB_STEP"] = "kernel:lm_head";
  e["NB_ACTIVE"] = "3";
  e["NB_WAIT"] = "2";
  e["NB_PRINT_TABLE"] = "0";
  const auto w = nbtest::run({nbtest::program("steps"), "10"}, e, dir.path());
  REQUIRE(w.exit_code == 0);
  CHECK(nbtest::file_exists(dir.file("out.w1.trace.json")));
}
