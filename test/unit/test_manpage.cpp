// nbprof(1) is generated from the option table at build time: every NB_*
// option has its entry there, with the table's default and meaning, and no
// entry names an option the table does not have.
#include <catch2/catch.hpp>

#include <cctype>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include "test_support.h"

namespace {

// The man page's literal text back as typed: \- is '-', \e a backslash, \&
// nothing.
std::string untroff(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) { out += s[i]; continue; }
    const char c = s[++i];
    if (c == '-') out += '-';
    else if (c == 'e') out += '\\';
    else if (c == '&') continue;
    else { out += '\\'; out += c; }
  }
  return out;
}

}  // namespace

TEST_CASE("nbprof(1) lists every NB_* option with its default and meaning", "[readme][man]") {
  // The table, as nb-options prints it: NAME TYPE DEFAULT HELP.
  const auto table = nbtest::run({NB_OPTIONS_TOOL});
  REQUIRE(table.exit_code == 0);
  using Entry = std::tuple<std::string, std::string, std::string>;  // flag, default, help
  std::map<std::string, Entry> actual;
  std::istringstream rows(table.out);
  std::string row;
  while (std::getline(rows, row)) {
    std::istringstream cells(row);
    std::string name, type, def, help;
    std::getline(cells, name, '\t');
    std::getline(cells, type, '\t');
    std::getline(cells, def, '\t');
    std::getline(cells, help, '\t');
    std::string flag = "--";
    for (char c : name.substr(3)) flag += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    actual[name] = {flag, def, help};
  }
  REQUIRE(actual.size() > 20);

  // The man page: ".TP", "\fB--flag\fR \fItype\fR" or "... [\fIbool\fR]",
  // "(\fBNB_NAME\fR; default \fBvalue\fR)" or "...; default empty)", help.
  const std::string man = nbtest::read_file(NB_MANPAGE_PATH);
  std::istringstream lines(man);
  std::vector<std::string> l;
  for (std::string line; std::getline(lines, line);) l.push_back(line);
  const std::regex flag_line(R"(^\\fB(\\-\\-[a-z\\-]+)\\fR (\[?)\\fI[a-z]+\\fR\]?$)");
  const std::regex var_line(R"(^\(\\fB(NB_[A-Z_]+)\\fR; default (?:\\fB(.*)\\fR|empty)\)$)");
  std::map<std::string, Entry> documented;
  for (size_t i = 0; i + 3 < l.size(); ++i) {
    std::smatch f, v;
    if (l[i] != ".TP" || !std::regex_match(l[i + 1], f, flag_line)) continue;
    REQUIRE(std::regex_match(l[i + 2], v, var_line));
    documented[v[1]] = {untroff(f[1]), v[2].matched ? untroff(v[2]) : "", untroff(l[i + 3])};
  }
  CHECK(documented == actual);
  CHECK(man.find(".TH NBPROF 1 \"\" \"nb " NB_VERSION "\"") == 0);
}
