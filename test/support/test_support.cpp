#include "test_support.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace nbtest {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) out.emplace_back(e->d_name);
    }
    closedir(d);
  }
  return out;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/nbtest-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempDir::~TempDir() {
  if (std::getenv("NB_KEEP_TEST_FILES") == nullptr) {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) { /* best effort */ }
  }
}

RunResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              const std::string& cwd, int timeout_s, const std::function<void(pid_t)>& meanwhile) {
  TempDir io;
  const std::string out_path = io.file("out"), err_path = io.file("err");

  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) merged[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [k, v] : env) {
    if (!k.empty() && k[0] == '-') merged.erase(k.substr(1));
    else merged[k] = v;
  }
  // A sanitizer build (test/sanitizers.sh) names its runtime here: a
  // sanitized library preloaded into a program that does not load the runtime
  // itself (python3, /bin/sh) needs it loaded first.
  if (const char* first = std::getenv("NB_TEST_PRELOAD_FIRST"); first && *first) {
    if (const auto it = merged.find("LD_PRELOAD"); it != merged.end() && !it->second.empty()) {
      it->second = std::string(first) + ":" + it->second;
    }
  }
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    // The programs start with the signals nb handles at their default
    // action, whatever the runner inherited (under nohup SIGHUP is ignored,
    // and a program that wants a signal ignored sets it itself).
    for (const int sig : {SIGHUP, SIGINT, SIGTERM}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  if (meanwhile) meanwhile(pid);
  RunResult r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.err = "timed out after " + std::to_string(timeout_s) + " s\n";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = read_file(out_path);
  r.err += read_file(err_path);
  return r;
}

std::string source_dir() { return NB_SOURCE_DIR; }
std::string shim_path() { return NB_SHIM_PATH; }
std::string fake_cuda_dir() { return NB_FAKE_CUDA_DIR; }
std::string program(const std::string& name) { return std::string(NB_PROGRAMS_DIR) + "/" + name; }

std::map<std::string, std::string> shim_env(const std::string& out_prefix) {
  return {{"LD_PRELOAD", shim_path()},
          {"LD_LIBRARY_PATH", fake_cuda_dir()},
          {"NB_OUT", out_prefix},
          {"NB_LOG", "warn"}};
}

bool matches_golden(const std::string& name, const std::string& actual, std::string& note) {
  const std::string path = source_dir() + "/test/golden/" + name;
  if (const char* u = std::getenv("NB_UPDATE_GOLDEN"); u && *u == '1') {
    write_file(path, actual);
    note = "updated " + path;
    return true;
  }
  if (!file_exists(path)) {
    note = "golden file missing: " + path + " (run with NB_UPDATE_GOLDEN=1 to create it)";
    return false;
  }
  const std::string expected = read_file(path);
  if (expected == actual) return true;
  size_t i = 0;
  while (i < expected.size() && i < actual.size() && expected[i] == actual[i]) ++i;
  note = "differs from " + path + " at byte " + std::to_string(i) + ": expected \"" +
         expected.substr(i, 80) + "\" got \"" + actual.substr(i, 80) + "\"";
  return false;
}

nlohmann::json nbread(const std::string& kind, const std::string& path) {
  // The checker, not the program under test: on a loaded 2-core machine
  // (the sanitizer builds) a large trace can take it past a minute.
  constexpr int kCheckerTimeout = 300;
  const RunResult r = run({NB_PYTHON3, source_dir() + "/test/tools/nbread.py", kind, path},
                          {{"-LD_PRELOAD", ""}}, "", kCheckerTimeout);
  if (r.exit_code != 0) throw std::runtime_error("nbread " + kind + " " + path + ": " + r.err);
  return nlohmann::json::parse(r.out);
}

}  // namespace nbtest
