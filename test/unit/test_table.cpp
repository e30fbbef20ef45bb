#include <catch2/catch.hpp>

#include "formats/folded_stacks.h"
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

TEST_CASE("rows with dropped calls: averages over the recorded calls, and the footer names them", "[table][drops]") {
  std::vector<TableRow> rows = {
      // 10 calls, 4 of them dropped: 6 recorded, 6 us in all.
      {"cuLaunchKernel", 10, 6000, 1000, 1000, 1, true, false, 0, 4},
      // Every call dropped: no time is known.
      {"cuMemFree_v2", 3, 0, 0, 0, 0, true, false, 0, 3},
      {"cuMemAlloc_v2", 2, 400, 200, 200, 0, true, false, 0, 0},
  };
  TableOptions opt;
  opt.sort = SortKey::Name;
  TableFooter footer;
  footer.records = 8;
  footer.dropped = 7;
  const std::string t = format_ranking_table(rows, opt, footer);
  INFO(t);
  const auto line = [&](const std::string& name) {
    const size_t at = t.find(" " + name + "  ");
    REQUIRE(at != std::string::npos);
    return t.substr(at, t.find('\n', at) - at);
  };
  // The average is 6 us / 6, not 6 us / 10.
  CHECK(line("cuLaunchKernel").find("1.000us") != std::string::npos);
  CHECK(line("cuLaunchKernel").find("0.600us") == std::string::npos);
  CHECK(line("cuMemFree_v2").find("      -  ") != std::string::npos);
  CHECK(t.find("Calls: 15, records: 8, dropped: 7") != std::string::npos);
  CHECK(t.find("Host times of rows with dropped calls cover the recorded calls only: cuLaunchKernel (6 of 10 "
               "recorded), cuMemFree_v2 (0 of 3 recorded)\n") != std::string::npos);

  // Many such rows: the first six named, the others counted.
  std::vector<TableRow> many;
  for (int i = 0; i < 9; ++i) many.push_back({"api" + std::to_string(i), 2, 10, 10, 10, 0, true, false, 0, 1});
  const std::string m = format_ranking_table(many, opt, footer);
  CHECK(m.find("api5 (1 of 2 recorded) and 3 more\n") != std::string::npos);
  // No drops: no such line.
  CHECK(format_ranking_table({{"cuInit", 1, 10, 10, 10, 0, true, false, 0, 0}}, opt, footer)
            .find("Host times of rows") == std::string::npos);
}

TEST_CASE("regions: a tree under the table, each under its parent, siblings by total", "[table][golden]") {
  std::vector<TableRow> rows = {{"k", 10, 0, 0, 0, 0, false, true, 100000},
                                {"cuLaunchKernel", 10, 5000, 500, 500, 0, true, false, 0}};
  // Given in no particular order; "lost/child" has no parent row.
  std::vector<RegionRow> regions = {
      {{"step", "mlp"}, 4, 4000, 4000, 60000, 60000},
      {{"ProfilerStep"}, 4, 20000, 20000, 100000, 100000},
      {{"step"}, 4, 12000, 2000, 100000, 10000},
      {{"step", "attention"}, 4, 6000, 5000, 30000, 20000},
      {{"step", "attention", "softmax"}, 4, 1000, 1000, 10000, 10000},
      {{"lost", "child"}, 1, 100, 100, 0, 0},
  };
  TableOptions opt;
  opt.sort = SortKey::DeviceTotal;
  const std::string t = format_ranking_table(rows, opt, {}, regions);
  std::string note;
  CHECK(nbtest::matches_golden("ranking_table_regions.txt", t, note));
  INFO(note);
  const size_t block = t.find("Regions (NVTX ranges");
  REQUIRE(block != std::string::npos);
  // Depth first; siblings by device total: mlp (60 us) before attention (30 us).
  const std::vector<std::string> order = {"\nProfilerStep ", "\nstep ", "\n  mlp ", "\n  attention ", "\n    softmax ",
                                          "\n  child "};
  size_t at = block;
  for (const std::string& name : order) {
    const size_t next = t.find(name, at);
    INFO(name);
    REQUIRE(next != std::string::npos);
    at = next;
  }
  // Self Device % is of the table's device time (100 us): steps hold the
  // ranges' work too, so the regions' selves may sum past 100%.
  CHECK(t.find("   60.000us        60.00%") != std::string::npos);
  // Sorted by host time instead: attention (6 us) before mlp (4 us).
  opt.sort = SortKey::HostTotal;
  const std::string h = format_ranking_table(rows, opt, {}, regions);
  CHECK(h.find("\n  attention ") < h.find("\n  mlp "));
  // --rows applies to the regions too.
  opt.max_rows = 2;
  const std::string two = format_ranking_table(rows, opt, {}, regions);
  CHECK(two.find("(4 more regions not shown)") != std::string::npos);
  CHECK(two.find("\n  mlp ") == std::string::npos);
}

TEST_CASE("folded stacks: one line per stack, outermost first, weights added, what a line cannot hold made visible",
          "[table]") {
  const std::vector<FoldedLine> lines = {
      {{"main (a.cpp:3)", "step (b.py:9)", "k"}, 5},
      {{"main (a.cpp:3)", "k"}, 7},
      {{"main (a.cpp:3)", "step (b.py:9)", "k"}, 10},  // the first again
      {{"odd;name\nhere", "k"}, 1},
      {{"never ran"}, 0},
  };
  CHECK(format_folded(lines) ==
        "main (a.cpp:3);k 7\n"
        "main (a.cpp:3);step (b.py:9);k 15\n"
        "odd:name here;k 1\n");
  CHECK(folded_frame({"model.py", 12, "forward"}) == "forward (model.py:12)");
  CHECK(folded_frame({"/usr/lib/libcuda.so.1", 0, "libcuda.so.1+0x1234"}) == "libcuda.so.1+0x1234 (/usr/lib/libcuda.so.1)");
}
