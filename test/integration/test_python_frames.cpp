// shim/python_frames.cpp against real interpreters, outside the shim: the
// probe library driven through ctypes (test/programs/py_frames_check.py; both
// ways of capturing: with the GIL, and from a call that released it) and a
// program that loads libpython late and embeds it (py_frames_embed.cpp).
// Runs the build's python3, /usr/bin/python3, and any listed in
// NB_TEST_PYTHONS (colon-separated paths).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <set>
#include <sstream>

#include "test_support.h"

namespace {

std::vector<std::string> interpreters() {
  std::vector<std::string> candidates = {NB_PYTHON3, "/usr/bin/python3"};
  if (const char* more = std::getenv("NB_TEST_PYTHONS")) {
    std::istringstream list(more);
    for (std::string p; std::getline(list, p, ':');) {
      if (!p.empty()) candidates.push_back(p);
    }
  }
  // The same interpreter once, whichever way it was named (pyenv's shim
  // resolves through `sys.executable`).
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& py : candidates) {
    if (!nbtest::file_exists(py)) continue;
    const auto r = nbtest::run({py, "-c", "import os, sys; print(os.path.realpath(sys.executable))"});
    if (r.exit_code != 0 || !seen.insert(r.out).second) continue;
    out.push_back(py);
  }
  return out;
}

// The interpreter's shared libpython, or "" (a static build without one).
std::string libpython_of(const std::string& py) {
  const auto r = nbtest::run({py, "-c",
                              "import os, sysconfig as s; "
                              "print(os.path.join(s.get_config_var('LIBDIR') or '', s.get_config_var('INSTSONAME') or ''))"});
  std::string path = r.out.substr(0, r.out.find('\n'));
  return r.exit_code == 0 && path.find(".so") != std::string::npos && nbtest::file_exists(path) ? path : "";
}

}  // namespace

TEST_CASE("python frames: named with the GIL and without it, the same", "[integration][python]") {
  const auto pythons = interpreters();
  REQUIRE(!pythons.empty());
  for (const auto& py : pythons) {
    const auto r = nbtest::run({py, nbtest::source_dir() + "/test/programs/py_frames_check.py",
                                nbtest::program("libpy_frames_probe.so")}, {}, "", 120);
    INFO(py << "\n" << r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find(": PASS") != std::string::npos);
    CHECK(r.out.find("FAIL") == std::string::npos);
  }
}

TEST_CASE("python frames: a libpython loaded late, globally or locally, and embedded", "[integration][python]") {
  int ran = 0;
  for (const auto& py : interpreters()) {
    const std::string lib = libpython_of(py);
    if (lib.empty()) {
      WARN("no shared libpython for " << py);
      continue;
    }
    for (const char* mode : {"global", "local"}) {
      for (const char* when : {"loaded", "initialized"}) {
        const auto r = nbtest::run({nbtest::program("py_frames_embed"), lib, mode, when}, {}, "", 120);
        INFO(lib << " " << mode << " " << when << "\n" << r.out << r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("PASS") != std::string::npos);
        ++ran;
      }
    }
  }
  CHECK(ran > 0);
}
