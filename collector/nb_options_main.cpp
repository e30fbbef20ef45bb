// nb-options: prints the NB_* table, so that nbprof (a shell script) and the
// README take their list of variables from the same table as the shim.
//   nb-options          tab-separated: NAME TYPE DEFAULT HELP
//   nb-options --check  reads the environment and prints any problems
//   nb-options --prefix PID -- PROGRAM [ARGS...]
//                       the output prefix the shim will use in PROGRAM run
//                       with this environment as process PID (what
//                       `exec PROGRAM ARGS` from the caller gives)
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/options.h"
#include "core/settings.h"

namespace {

std::string on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string full = (dir.empty() ? "." : dir) + "/" + name;
    if (access(full.c_str(), X_OK) == 0) return full;
  }
  return name;
}

// The command line the process will have once the kernel has run a `#!`
// script's interpreter (and env the program it names).
std::vector<std::string> command_line_after_exec(std::vector<std::string> argv) {
  // `python3` may itself be a wrapper script (pyenv's shims are bash): it
  // ends in a Python with the same arguments.
  if (nb::is_python_name(argv[0].substr(argv[0].rfind('/') + 1))) return argv;
  const std::string path = on_path(argv[0]);
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line) || line.compare(0, 2, "#!") != 0) return argv;
  std::istringstream words(line.substr(2));
  std::vector<std::string> interp;
  std::string w;
  if (words >> w) interp.push_back(w);
  std::string rest;
  std::getline(words, rest);
  const size_t b = rest.find_first_not_of(" \t");
  if (b != std::string::npos) interp.push_back(rest.substr(b, rest.find_last_not_of(" \t\r") - b + 1));
  if (interp.empty()) return argv;
  std::vector<std::string> out = interp;
  out.push_back(path);
  out.insert(out.end(), argv.begin() + 1, argv.end());
  const std::string first = out[0].substr(out[0].rfind('/') + 1);
  if (first == "env") {
    // env NAME=VALUE... [-S] PROGRAM ARGS: PROGRAM's command line.
    std::vector<std::string> words_after;
    for (size_t i = 1; i < out.size(); ++i) {
      std::istringstream split(out[i]);
      std::string part;
      if (i == 1) {
        while (split >> part) words_after.push_back(part);
      } else {
        words_after.push_back(out[i]);
      }
    }
    size_t i = 0;
    while (i < words_after.size() && (words_after[i][0] == '-' || words_after[i].find('=') != std::string::npos)) ++i;
    if (i < words_after.size()) return std::vector<std::string>(words_after.begin() + i, words_after.end());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const auto env = [](const char* n) { return static_cast<const char*>(std::getenv(n)); };
  if (argc > 1 && std::strcmp(argv[1], "--check") == 0) {
    std::vector<std::string> problems;
    nb::parse_options(env, problems);
    for (const auto& p : problems) std::printf("%s\n", p.c_str());
    return problems.empty() ? 0 : 1;
  }
  if (argc > 4 && std::strcmp(argv[1], "--prefix") == 0 && std::strcmp(argv[3], "--") == 0) {
    nb::ProcessFacts p;
    p.pid = std::strtol(argv[2], nullptr, 10);
    p.argv = command_line_after_exec(std::vector<std::string>(argv + 4, argv + argc));
    p.short_name = p.argv[0].substr(p.argv[0].rfind('/') + 1);
    p.host = nb::short_host_name();
    char cwd[PATH_MAX];
    p.cwd = getcwd(cwd, sizeof cwd) != nullptr ? cwd : "";
    std::printf("%s\n", nb::read_settings(env, p).prefix.c_str());
    return 0;
  }
  for (const auto& o : nb::option_table()) {
    std::printf("%s\t%s\t%s\t%s\n", o.name, o.type, o.default_value, o.help);
  }
  return 0;
}
