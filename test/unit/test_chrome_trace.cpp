#include <catch2/catch.hpp>

#include "formats/chrome_trace.h"
#include "formats/text_encoding.h"
#include "test_support.h"

using namespace nb::formats;

namespace {
TraceData sample_trace() {
  TraceData t;
  t.names = {"cuLaunchKernel", "cudaMalloc", "name \"with\" quotes\\ and\ncontrol\x01 and bad \xff utf8"};
  t.base_time_ns = 1700000000000000000ull;
  DeviceProperties d;
  d.id = 0;
  d.name = "Fake CUDA Device";
  d.total_global_mem = 1ull << 30;
  d.compute_major = 9;
  d.num_sms = 132;
  d.warp_size = 32;
  t.devices.push_back(d);
  t.top_level_ints = {{"cuda_driver_version", 13000}};
  t.distributed = {true, 3, 8, 1, "nccl", "2.21.5"};
  t.processes.push_back({4242, "demo (rank 3, node7)", 4242});
  t.threads.push_back({4242, 4242, "main \"thread\"", 4242});
  Event e1;
  e1.name = 0;
  e1.cat = Category::CudaDriver;
  e1.pid = 4242;
  e1.tid = 4242;
  e1.ts_ns = t.base_time_ns + 1234567;
  e1.dur_ns = 8901;
  e1.args = {Arg::uinteger("External id", 5), Arg::view("kernel", "add<float>(\"x\")"),
             Arg::dim3("grid", 4, 1, 1), Arg::integer("result", -3), Arg::real("bw", 1.5),
             Arg::real("nan", 0.0 / 0.0)};
  Event e2;
  e2.name = 2;
  e2.cat = Category::CudaRuntime;
  e2.pid = 4242;
  e2.tid = 4243;
  e2.ts_ns = t.base_time_ns + 1000;
  e2.dur_ns = 0;
  t.events = {e1, e2};
  t.flows = {{5, 4242, 4242, t.base_time_ns + 1234567, true}, {5, 0, 7, t.base_time_ns + 2000000, false}};
  Counter c;
  c.name = 1;
  c.pid = 0;
  c.ts_ns = t.base_time_ns + 3000;
  c.values = {{"allocated", 1048576.0}, {"reserved", 2097152.0}};
  t.counters = {c};
  t.trace_name = "sample";
  t.table.rows = {{"cuLaunchKernel", 2, 17802, 8901, 8901, 0, true, false, 0},
                  {"name \"with\" quotes\\ and\ncontrol\x01 and bad \xff utf8", 1, 0, 0, 0, 0, false, true, 640}};
  t.table.options.sort = SortKey::DeviceTotal;
  t.table.options.max_rows = 12;
  t.table.options.title = "nb: demo (pid 4242)";
  t.table.footer.records = 2;
  t.table.footer.dropped = 1;
  t.table.footer.notes = {"Device records: 1", "Device memory: 0 allocations"};
  return t;
}
}  // namespace

TEST_CASE("microsecond timestamps are exact, with nanosecond precision", "[chrome]") {
  std::string s;
  append_us_from_ns(s, 1234567);
  REQUIRE(s == "1234.567");
  s.clear();
  append_us_from_ns(s, 5);
  REQUIRE(s == "0.005");
  s.clear();
  append_us_from_ns(s, -1500);
  REQUIRE(s == "-1.500");
  s.clear();
  append_us_from_ns(s, 9007199254740993);  // beyond a double's integer range
  REQUIRE(s == "9007199254740.993");
}

TEST_CASE("Chrome trace matches the golden file and parses", "[chrome][golden]") {
  const std::string out = chrome_trace_string(sample_trace());
  std::string note;
  INFO(note);
  CHECK(nbtest::matches_golden("chrome_trace_sample.json", out, note));
  INFO(note);

  nbtest::TempDir dir;
  nbtest::write_file(dir.file("t.json"), out);
  const auto doc = nbtest::nbread("trace", dir.file("t.json"));
  REQUIRE(doc["baseTimeNanoseconds"] == 1700000000000000000ull);
  REQUIRE(doc["deviceProperties"][0]["numSms"] == 132);
  bool saw_hostile = false;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] == 4243) {
      REQUIRE(e["name"] == "name \"with\" quotes\\ and\ncontrol\x01 and bad \xef\xbf\xbd utf8");
      saw_hostile = true;
    }
    if (e["ph"] == "X" && e["tid"] == 4242) {
      REQUIRE(e["ts"].get<double>() == Approx(1234.567));
      REQUIRE(e["args"]["grid"] == nlohmann::json::array({4, 1, 1}));
      REQUIRE(e["args"]["nan"] == 0);
    }
  }
  REQUIRE(saw_hostile);

  // The ranking table as data, under "nbTable".
  const auto& table = doc["nbTable"];
  REQUIRE(table["title"] == "nb: demo (pid 4242)");
  REQUIRE(table["sort"] == "device");
  REQUIRE(table["printedRows"] == 12);
  REQUIRE(table["rows"].size() == 2);
  REQUIRE(table["rows"][0]["name"] == "cuLaunchKernel");
  REQUIRE(table["rows"][0]["hostTotalNs"] == 17802);
  REQUIRE(table["rows"][1]["hasHost"] == false);
  REQUIRE(table["rows"][1]["deviceTotalNs"] == 640);
  REQUIRE(table["footer"]["dropped"] == 1);
  REQUIRE(table["footer"]["notes"][1] == "Device memory: 0 allocations");
}

TEST_CASE("an empty trace is still a valid file", "[chrome]") {
  TraceData t;
  nbtest::TempDir dir;
  nbtest::write_file(dir.file("t.json"), chrome_trace_string(t));
  const auto doc = nbtest::nbread("trace", dir.file("t.json"));
  for (const auto& e : doc["traceEvents"]) REQUIRE(e["ph"] == "M");  // the process's name only
  REQUIRE(doc["nbTable"]["rows"].empty());
}

TEST_CASE("an event's keys and text are escaped wherever the byte to escape falls", "[chrome]") {
  // The fast path scans 8 bytes at a time: put each byte that needs care
  // at each offset of a 20-byte text, and compare with the general escaper.
  const std::string specials = std::string("\"\\\n\x01\x1f\x7f\x80\xff", 8) + std::string(1, '\0');
  for (char special : specials) {
    for (size_t at = 0; at < 20; ++at) {
      std::string text(20, 'k');
      text[at] = special;
      Event e;
      e.args = {Arg::view(text, text)};
      const std::vector<std::string> names = {"n"};
      std::string fast;
      EventText(0, &names).event(fast, e);
      std::string want_text;
      append_json_escaped(want_text, text);
      const std::string want = "\"" + want_text + "\":\"" + want_text + "\"";
      INFO("byte " << static_cast<int>(static_cast<uint8_t>(special)) << " at " << at);
      CHECK(fast.find(want) != std::string::npos);
    }
  }
}
