// Shared by the Catch2 tests: files, temporary directories, child processes
// (the shim is tested in real child processes), golden files, and reading
// outputs through test/tools/nbread.py (Python's own json and pickle).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nbtest {

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& data);
bool file_exists(const std::string& path);
std::vector<std::string> list_dir(const std::string& dir);

// A fresh directory under $TMPDIR (or /tmp), removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct RunResult {
  int exit_code = -1;    // -1 if killed by a signal
  int signal = 0;
  std::string out, err;
};

// Runs argv[0] (a path) with the current environment plus `env` (value ""
// with key prefixed by '-' removes a variable), in `cwd`, with a timeout.
// $NB_TEST_PRELOAD_FIRST (a sanitizer's runtime, set by test/sanitizers.sh)
// goes first in a non-empty LD_PRELOAD.
// `meanwhile(pid)`, if given, runs once the program has started (to signal
// it at the right moment), before the wait for its end.
RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
              const std::string& cwd = "", int timeout_s = 60,
              const std::function<void(pid_t)>& meanwhile = nullptr);

// Environment that preloads the shim over the fake CUDA stack.
std::map<std::string, std::string> shim_env(const std::string& out_prefix);

// Paths of the build (set by meson through compile definitions).
std::string source_dir();
std::string shim_path();
std::string fake_cuda_dir();
std::string program(const std::string& name);  // a test program's path

// Compares with test/golden/<name>; NB_UPDATE_GOLDEN=1 rewrites it instead.
bool matches_golden(const std::string& name, const std::string& actual, std::string& diff_note);

// nbread.py <kind> <path>: throws std::runtime_error with its stderr if a
// check fails.
nlohmann::json nbread(const std::string& kind, const std::string& path);

}  // namespace nbtest
