// nb-options: prints the NB_* table, so that nbprof (a shell script) and the
// README take their list of variables from the same table as the shim.
//   nb-options          tab-separated: NAME TYPE DEFAULT HELP
//   nb-options --check  reads the environment and prints any problems
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/options.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--check") == 0) {
    std::vector<std::string> problems;
    nb::parse_options([](const char* n) { return std::getenv(n); }, problems);
    for (const auto& p : problems) std::printf("%s\n", p.c_str());
    return problems.empty() ? 0 : 1;
  }
  for (const auto& o : nb::option_table()) {
    std::printf("%s\t%s\t%s\t%s\n", o.name, o.type, o.default_value, o.help);
  }
  return 0;
}
