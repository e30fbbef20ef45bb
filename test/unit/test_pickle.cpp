#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "formats/memory_snapshot.h"
#include "formats/pickle_writer.h"
#include "test_support.h"

using namespace nb::formats;

namespace {
nlohmann::json python_load(const std::string& bytes) {
  nbtest::TempDir dir;
  nbtest::write_file(dir.file("p.pickle"), bytes);
  const auto r = nbtest::run({NB_PYTHON3, "-c",
                              "import json,pickle,sys\n"
                              "v = pickle.load(open(sys.argv[1], 'rb'))\n"
                              "print(json.dumps(v))\n",
                              dir.file("p.pickle")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.out);
}

SnapshotData sample_snapshot() {
  SnapshotData s;
  s.stacks.push_back({{"train.py", 12, "step"}, {"model.py", 3, "forward \xff"}});
  Segment seg;
  seg.device = 0;
  seg.address = 0x7f0000000000;
  seg.total_size = seg.allocated_size = seg.active_size = seg.requested_size = 4096;
  seg.stream = 0;
  seg.large = false;
  seg.stack = 1;
  seg.blocks.push_back({0x7f0000000000, 4096, 4096, BlockState::ActiveAllocated, 1});
  s.segments.push_back(seg);
  s.device_traces.resize(1);
  s.device_traces[0].push_back({Action::SegmentAlloc, 0x7f0000000000, 4096, 0, 1700000000000000, 0, 1});
  s.device_traces[0].push_back({Action::Alloc, 0x7f0000000000, 4096, 0, 1700000000000001, 0, 1});
  s.device_traces[0].push_back({Action::Oom, 0, 1ull << 40, 0, 1700000000000002, 123456, 0});
  s.allocator_settings = {{"recorded_by", "test"}};
  return s;
}
}  // namespace

TEST_CASE("integers, floats, strings and containers round-trip through Python", "[pickle]") {
  PickleWriter p;
  p.begin_list();
  const int64_t ints[] = {0, 1, 255, 256, 65535, 65536, -1, -129, INT32_MAX, INT32_MIN,
                          int64_t(INT32_MAX) + 1, int64_t(INT32_MIN) - 1, INT64_MAX, INT64_MIN,
                          int64_t(1) << 47, -(int64_t(1) << 40)};
  for (int64_t v : ints) { p.item(); p.integer(v); }
  p.item(); p.uinteger(UINT64_MAX);
  p.item(); p.uinteger(uint64_t(1) << 63);
  p.item(); p.real(1.25);
  p.item(); p.boolean(true);
  p.item(); p.none();
  p.item(); p.string(std::string(300, 'x'));
  p.item(); p.string("bad \xc3 utf8");
  p.item(); p.integer(7); p.integer(8); p.tuple2();
  p.end_list();
  const auto v = python_load(p.finish());
  size_t i = 0;
  for (int64_t expected : ints) REQUIRE(v[i++].get<int64_t>() == expected);
  REQUIRE(v[i++].get<uint64_t>() == UINT64_MAX);
  REQUIRE(v[i++].get<uint64_t>() == (uint64_t(1) << 63));
  REQUIRE(v[i++].get<double>() == 1.25);
  REQUIRE(v[i++] == true);
  REQUIRE(v[i++].is_null());
  REQUIRE(v[i++] == std::string(300, 'x'));
  REQUIRE(v[i++] == "bad \xef\xbf\xbd utf8");
  REQUIRE(v[i++] == nlohmann::json::array({7, 8}));
}

TEST_CASE("long lists are batched under several MARKs and load whole", "[pickle]") {
  PickleWriter p;
  p.begin_list();
  for (int i = 0; i < 2500; ++i) { p.item(); p.integer(i); }
  p.end_list();
  const auto v = python_load(p.finish());
  REQUIRE(v.size() == 2500);
  REQUIRE(v[2499] == 2499);
}

TEST_CASE("memo: a stack written once is shared by reference", "[pickle]") {
  const std::string bytes = memory_snapshot_pickle(sample_snapshot());
  std::string note;
  CHECK(nbtest::matches_golden("snapshot_sample.pickle", bytes, note));
  INFO(note);
  nbtest::TempDir dir;
  nbtest::write_file(dir.file("s.pickle"), bytes);
  const auto d = nbtest::nbread("snapshot", dir.file("s.pickle"));
  // Stack 1 appears 4 times (segment, block, two entries); its frame strings
  // are in the file once.
  size_t count = 0;
  for (size_t pos = bytes.find("train.py"); pos != std::string::npos; pos = bytes.find("train.py", pos + 1)) ++count;
  REQUIRE(count == 1);
  REQUIRE(d["segments"][0]["frames"][1]["name"] == "forward \xef\xbf\xbd");
  REQUIRE(d["segments"][0]["blocks"][0]["frames"][0]["filename"] == "train.py");
  REQUIRE(d["segments"][0]["segment_type"] == "small");
  REQUIRE(d["segments"][0]["segment_pool_id"] == nlohmann::json::array({0, 0}));
  const auto& trace = d["device_traces"][0];
  REQUIRE(trace[1]["action"] == "alloc");
  REQUIRE(trace[1]["time_us"] == 1700000000000001);
  REQUIRE(trace[2]["action"] == "oom");
  REQUIRE(trace[2]["device_free"] == 123456);
  REQUIRE(trace[2].find("addr") == trace[2].end());
  REQUIRE(d["allocator_settings"]["recorded_by"] == "test");
}

TEST_CASE("a snapshot written to a stream as it is made is the same bytes", "[pickle]") {
  SnapshotData s = sample_snapshot();
  // Enough entries for several pieces of the stream (about 40 bytes each).
  for (uint64_t i = 0; i < 100000; ++i) {
    s.device_traces[0].push_back({i % 2 ? Action::FreeCompleted : Action::Alloc, 0x7f0000000000 + 4096 * (i / 2), 4096,
                                  0, static_cast<int64_t>(1700000000000003 + i), 0, 1});
  }
  const std::string whole = memory_snapshot_pickle(s);
  std::ostringstream streamed;
  write_memory_snapshot(s, streamed);
  CHECK(whole.size() > (size_t(3) << 20));
  CHECK(streamed.str() == whole);
}
