// The preloaded library exports its hooks and nothing else: no fmt, spdlog,
// libstdc++ or unwinder symbols that could meet the host program's own.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include "core/api.h"
#include "outputs.h"
#include "test_support.h"

TEST_CASE("exported symbols are exactly the hook table, the look-up entry points and NVTX's", "[hygiene]") {
  const auto r = nbtest::run({"/usr/bin/nm", "-D", "--defined-only", nbtest::shim_path()});
  REQUIRE(r.exit_code == 0);
  std::set<std::string> exported;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    // Version definitions (GLIBC_2.34, libcudart.so.13, ...) are listed as
    // absolute symbols; they are not code.
    if (line.find(" A ") != std::string::npos) continue;
    const auto sp = line.find_last_of(' ');
    std::string sym = line.substr(sp + 1);
    if (const auto at = sym.find('@'); at != std::string::npos) sym = sym.substr(0, at);
    exported.insert(sym);
  }
  // InitializeInjectionNvtx2 is the one export that is not a hook: NVTX
  // looks it up in the library NVTX_INJECTION64_PATH names.
  // kill and raise: for programs that end themselves with an exit signal
  // (shim/exit_signals.cpp); the exec family: the image being replaced
  // writes its files first (shim/exec_hooks.cpp); __libc_start_main and
  // exit: the program's end (shim/program_end.cpp).
  std::set<std::string> expected = {"dlsym", "cuGetProcAddress", "cuGetProcAddress_v2", "InitializeInjectionNvtx2",
                                    "kill", "raise", "cuptiSubscribe", "cuptiActivityRegisterCallbacks",
                                    "execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve",
                                    "__libc_start_main", "exit"};
  for (uint16_t id = 0; id < nb::kApiCount; ++id) expected.insert(nb::api_info(id).symbol);
  CHECK(exported == expected);
}

TEST_CASE("the shim does not depend on shared fmt, spdlog or libunwind", "[hygiene]") {
  const auto r = nbtest::run({"/usr/bin/readelf", "-d", nbtest::shim_path()});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("libfmt") == std::string::npos);
  CHECK(r.out.find("libspdlog") == std::string::npos);
  CHECK(r.out.find("libunwind") == std::string::npos);
}

TEST_CASE("C++ exceptions, in the program and in a library it loads, still go through the program's unwinder when nb takes stacks", "[hygiene]") {
  nbtest::TempDir dir;
  auto env = std::map<std::string, std::string>{{"NB_STACKS", "all"}};
  env["LD_LIBRARY_PATH"] = nbtest::fake_cuda_dir() + ":" + nbtest::program("");
  const auto r = nbtest::run_recorded(dir, "exceptions", {}, env);
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  CHECK(r.run.out.find("caught 1000\n") != std::string::npos);
  // And in a library the program loads: caught inside it, and thrown out of it.
  CHECK(r.run.out.find("library caught 1000, program caught 100 from it\n") != std::string::npos);
  CHECK(r.run.out.find("unwinder ") != std::string::npos);
  CHECK(r.run.out.find("libunwind") == std::string::npos);      // libgcc_s's, not the one nb loaded
  CHECK(r.run.out.find("unw_backtrace hidden") != std::string::npos);
  // And the stack was taken (from libunwind, privately).
  bool stacked = false;
  for (const auto& e : nbtest::host_calls(r.trace)) stacked |= e["args"].contains("stack");
  CHECK(stacked);
}
