#include <catch2/catch.hpp>

#include "formats/ranking_table.h"
#include "test_support.h"

using namespace nb::formats;

TEST_CASE("durations use torch.profiler's units", "[table]") {
  REQUIRE(format_duration_ns(0) == "0.000us");
  REQUIRE(format_duration_ns(1500) == "1.500us");
  REQUIRE(format_duration_ns(2500000) == "2.500ms");
  REQUIRE(format_duration_ns(3000000000ull) == "3.000s");
}

TEST_CASE("ranking table matches the golden file", "[table][golden]") {
  std::vector<TableRow> rows = {
      {"cudaMalloc", 3, 3000, 500, 2000, 0, true, false, 0},
      {"cuLaunchKernel", 1000, 2000000, 1000, 9000, 2, true, false, 0},
      {"a very long kernel name that goes on and on and on beyond fifty-five characters", 1, 10, 10, 10, 0,
       true, false, 0},
      {"bad\nname\x01", 2, 20, 10, 10, 0, true, false, 0},
  };
  TableOptions opt;
  opt.title = "nb: demo (pid 1)";
  TableFooter footer;
  footer.records = 1006;
  footer.dropped = 4;
  footer.notes = {"Device memory: 3 allocations"};
  const std::string all = format_ranking_table(rows, opt, footer);
  std::string note;
  CHECK(nbtest::matches_golden("ranking_table.txt", all, note));
  INFO(note);
  // Sorted by host total: the launch row first.
  REQUIRE(all.find("cuLaunchKernel") < all.find("cudaMalloc"));
  opt.max_rows = 1;
  const std::string top = format_ranking_table(rows, opt, footer);
  REQUIRE(top.find("cudaMalloc") == std::string::npos);
  REQUIRE(top.find("(3 more rows not shown)") != std::string::npos);
}

TEST_CASE("device columns appear once a row has device time", "[table]") {
  std::vector<TableRow> rows = {{"k", 2, 0, 0, 0, 0, false, true, 4000},
                                {"cuLaunchKernel", 2, 100, 50, 50, 0, true, false, 0}};
  TableOptions opt;
  opt.sort = SortKey::DeviceTotal;
  const std::string t = format_ranking_table(rows, opt, {});
  REQUIRE(t.find("Self Device") != std::string::npos);
  REQUIRE(t.find("Self Device time total: 4.000us") != std::string::npos);
  // Sorted by device time: the kernel first.
  const size_t k_line = t.find("                                                      k");
  REQUIRE(k_line != std::string::npos);
  REQUIRE(k_line < t.find("cuLaunchKernel"));
}
