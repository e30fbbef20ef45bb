// The README's NB_* table must match the option table the shim reads.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <sstream>

#include "core/options.h"
#include "test_support.h"

TEST_CASE("README lists every NB_* variable with its default", "[readme]") {
  const std::string readme = nbtest::read_file(nbtest::source_dir() + "/README.md");
  // Default column: `value`, or (empty) for an empty default.
  const std::regex row(R"(^\| `(NB_[A-Z_]+)` \| [a-z]+ \| (?:`([^`]*)`|\(empty\)) \|)");
  std::map<std::string, std::string> documented;
  std::istringstream lines(readme);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) documented[m[1]] = m[2].matched ? m[2].str() : "";
  }
  std::map<std::string, std::string> actual;
  for (const auto& o : nb::option_table()) actual[o.name] = o.default_value;
  CHECK(documented == actual);
}

TEST_CASE("docs/performance.md stays a reference a user can read: at most 300 lines", "[readme]") {
  // Today's figures, each with its command; how they were reached belongs
  // in git. Past 300 lines, condense (or move a topic to its own page).
  const std::string perf = nbtest::read_file(nbtest::source_dir() + "/docs/performance.md");
  size_t lines = 0;
  for (char c : perf) lines += c == '\n';
  CHECK(lines <= 300);
}
