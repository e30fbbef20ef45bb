// Device time on the fake CUDA + CUPTI stack: every piece of device work
// appears once, on its GPU and stream, joined to the host call that caused
// it with a bound arrow that never points backwards; the trace is laid out
// as Kineto's (what Perfetto and HTA need); the table ranks device time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "outputs.h"

using nlohmann::json;

namespace {

struct Expected {
  std::string kind, name, host_call;
  bool operator<(const Expected& o) const {
    return std::tie(kind, name, host_call) < std::tie(o.kind, o.name, o.host_call);
  }
  bool operator==(const Expected& o) const {
    return std::tie(kind, name, host_call) == std::tie(o.kind, o.name, o.host_call);
  }
};

std::multiset<Expected> expected_device_work(const std::string& manifest) {
  std::multiset<Expected> out;
  std::ifstream f(manifest);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::string tag;
    Expected e;
    std::getline(ss, tag, '\t');
    if (tag != "device") continue;
    std::getline(ss, e.kind, '\t');
    std::getline(ss, e.name, '\t');
    std::getline(ss, e.host_call, '\t');
    out.insert(e);
  }
  return out;
}

const char* kind_of(const std::string& cat) {
  if (cat == "kernel") return "kernel";
  if (cat == "gpu_memcpy") return "memcpy";
  if (cat == "gpu_memset") return "memset";
  return "";
}

bool is_device(const json& e) {
  return e["ph"] == "X" && (e["cat"] == "kernel" || e["cat"] == "gpu_memcpy" || e["cat"] == "gpu_memset");
}

// The checks every joined trace must pass; returns the device work seen.
std::multiset<Expected> check_joined_trace(const json& trace) {
  const std::map<uint64_t, json> host_by_id = nbtest::host_calls_by_correlation(trace);

  std::multiset<Expected> seen;
  std::map<uint64_t, std::vector<json>> flows;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "s" || e["ph"] == "f") flows[e["id"].get<uint64_t>()].push_back(e);
  }
  size_t device_events = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (!is_device(e)) continue;
    ++device_events;
    // What HTA needs on a GPU row.
    for (const char* k : {"ts", "dur", "name", "cat", "pid", "tid"}) REQUIRE(e.contains(k));
    REQUIRE(e["args"].contains("stream"));
    REQUIRE(e["args"].contains("correlation"));
    CHECK(e["tid"] == e["args"]["stream"]);
    CHECK(e["pid"] == e["args"]["device"]);
    INFO("device event " << e.dump());
    // Both sides carry the same correlation id (HTA joins on it).
    const auto host = host_by_id.find(e["args"]["correlation"].get<uint64_t>());
    REQUIRE(host != host_by_id.end());
    seen.insert({kind_of(e["cat"]), e["name"], host->second["name"]});
  }
  // Every flow is one "s" on the host call's thread at its start and one
  // "f" on the device event's track at its start, never earlier.
  size_t pairs = 0;
  for (const auto& [id, ends] : flows) {
    INFO("flow " << id);
    REQUIRE(ends.size() == 2);
    const json& s = ends[0]["ph"] == "s" ? ends[0] : ends[1];
    const json& f = ends[0]["ph"] == "f" ? ends[0] : ends[1];
    REQUIRE(s["ph"] == "s");
    REQUIRE(f["ph"] == "f");
    CHECK(f["bp"] == "e");
    CHECK(f["ts"].get<double>() >= s["ts"].get<double>());
    bool host_bound = false, device_bound = false;
    for (const auto& e : trace["traceEvents"]) {
      if (e["ph"] != "X") continue;
      if (e["pid"] == s["pid"] && e["tid"] == s["tid"] && e["ts"] == s["ts"] && !is_device(e)) host_bound = true;
      if (e["pid"] == f["pid"] && e["tid"] == f["tid"] && e["ts"] == f["ts"] && is_device(e)) device_bound = true;
    }
    CHECK(host_bound);
    CHECK(device_bound);
    ++pairs;
  }
  CHECK(pairs == device_events);
  return seen;
}

void check_no_partial_overlaps(const json& trace) {
  std::map<std::pair<long, long>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") tracks[{e["pid"].get<long>(), e["tid"].get<long>()}].push_back({e["ts"], e["dur"]});
  }
  for (auto& [track, boxes] : tracks) {
    std::sort(boxes.begin(), boxes.end());
    for (size_t i = 1; i < boxes.size(); ++i) {
      const double prev_end = boxes[i - 1].first + boxes[i - 1].second;
      const double end = boxes[i].first + boxes[i].second;
      const bool partial = boxes[i].first < prev_end && end > prev_end;
      INFO("track " << track.first << "/" << track.second << " box " << i);
      CHECK_FALSE(partial);
    }
  }
}

}  // namespace

TEST_CASE("device work: each piece once, joined to its host call by a bound arrow", "[integration][device]") {
  // Ids "every": the fake hands an id to every call, so the order join
  // sees gaps (ids of calls that made no work) and must wait them out.
  for (const char* correlation : {"outer", "inner"}) {
    for (const char* join : {"order", "callback", "order/every"}) {
    DYNAMIC_SECTION("CUPTI correlation " << correlation << ", join " << join) {
      nbtest::TempDir dir;
      const bool every = std::string(join) == "order/every";
      const auto r = nbtest::run_recorded(dir, "device", {dir.file("manifest")},
                                          {{"FAKE_CUPTI_CORRELATION", correlation},
                                           {"NB_CUPTI_JOIN", every ? "order" : join},
                                           {"FAKE_CUPTI_IDS", every ? "every" : "work"}});
      INFO(r.run.err);
      REQUIRE(r.run.exit_code == 0);
      const auto expected = expected_device_work(dir.file("manifest"));
      REQUIRE(expected.size() == 18);
      const auto seen = check_joined_trace(r.trace);
      for (const auto& e : expected) {
        INFO(e.kind << " " << e.name << " from " << e.host_call);
        CHECK(seen.count(e) == expected.count(e));
      }
      CHECK(seen.size() == expected.size());
      check_no_partial_overlaps(r.trace);
    }
    }
  }
}

// A trace of test/programs/threads.cpp: its kernels, and how many are joined
// to the very call that launched them (launch i of thread t had grid
// (i + 1, t + 1) on both sides).
static std::pair<long, long> kernels_and_exact_joins(const nlohmann::json& trace) {
  const auto host_by_id = nbtest::host_calls_by_correlation(trace);
  long kernels = 0, exact = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    ++kernels;
    const auto host = host_by_id.find(e["args"]["correlation"].get<uint64_t>());
    if (host != host_by_id.end()) exact += host->second["args"]["grid"] == e["args"]["grid"];
  }
  return {kernels, exact};
}

TEST_CASE("16 threads launching at once: every kernel joined to the very call that launched it", "[integration][device][threads]") {
  for (const char* join : {"order", "callback"}) {
    DYNAMIC_SECTION("join " << join) {
      nbtest::TempDir dir;
      const auto r = nbtest::run_recorded(dir, "threads", {dir.file("manifest"), "16", "500"}, {{"NB_CUPTI_JOIN", join}});
      INFO(r.run.err);
      REQUIRE(r.run.exit_code == 0);
      const auto [kernels, exact] = kernels_and_exact_joins(r.trace);
      CHECK(kernels == 16 * 500);
      CHECK(exact == kernels);
    }
  }
}

TEST_CASE("a thread held up inside a launch after its kernel ran still gets its kernel", "[integration][device][threads]") {
  // The kernel's record reaches the collector, with those of later launches
  // of other threads, while the launching call has not returned (so its
  // host record is not in the ring yet).
  for (const char* join : {"order", "callback"}) {
    DYNAMIC_SECTION("join " << join) {
      nbtest::TempDir dir;
      const auto r = nbtest::run_recorded(dir, "threads", {dir.file("manifest"), "4", "200"},
                                          {{"NB_CUPTI_JOIN", join},
                                           {"NB_CUPTI_FLUSH_MS", "10"},
                                           {"FAKE_CUDA_SLOW_LAUNCH", "100:200"}});
      INFO(r.run.err);
      REQUIRE(r.run.exit_code == 0);
      const auto [kernels, exact] = kernels_and_exact_joins(r.trace);
      CHECK(kernels == 4 * 200);
      CHECK(exact == kernels);
    }
  }
}

// A trace of test/programs/capture.cpp: launch i of a phase has grid (i + 1)
// and `phase` bytes of shared memory; phase 2 is captured, its nodes run
// with the graph launches; phases 1, 2, 4 and 5 look alike to the join.
// `phases`: the eager phases the trace holds (a window may start late).
static void check_capture_trace(const nlohmann::json& trace, const std::map<int, int>& phases) {
  const auto host_by_id = nbtest::host_calls_by_correlation(trace);
  int captured = 0;
  for (const auto& e : nbtest::host_calls(trace)) {
    if (e["args"].contains("captured")) {
      ++captured;
      // Only the calls made between begin and end capture.
      if (e["args"].contains("grid")) CHECK(e["args"]["shared memory"] == 2);
    }
  }
  CHECK(captured == 4);  // 3 launches and a set
  std::map<int, int> per_phase;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    INFO(e.dump());
    const auto host = host_by_id.find(e["args"]["correlation"].get<uint64_t>());
    REQUIRE(host != host_by_id.end());
    const auto& h = host->second;
    CHECK_FALSE(h["args"].contains("captured"));
    const int phase = e["args"]["shared memory"].get<int>();
    ++per_phase[phase];
    if (phase == 2) {
      CHECK(h["name"].get<std::string>().find("GraphLaunch") != std::string::npos);
    } else {
      CHECK(h["args"]["grid"] == e["args"]["grid"]);
      CHECK(h["args"]["shared memory"] == phase);
    }
  }
  CHECK(per_phase == phases);
}

TEST_CASE("stream capture: captured calls wait for no record; every kernel joins its own launch", "[integration][device]") {
  for (const char* mode : {"driver", "runtime"}) {
    for (const char* ids : {"work", "every", "work/tograph"}) {
      DYNAMIC_SECTION(mode << ", fake CUPTI ids " << ids) {
        nbtest::TempDir dir;
        const bool to_graph = std::string(ids) == "work/tograph";
        const auto r = nbtest::run_recorded(dir, "capture", to_graph ? std::vector<std::string>{mode, "tograph"}
                                                                     : std::vector<std::string>{mode},
                                            {{"FAKE_CUPTI_IDS", to_graph ? "work" : ids}});
        INFO(r.run.err);
        REQUIRE(r.run.exit_code == 0);
        check_capture_trace(r.trace, {{1, 4}, {2, 15}, {3, 5}, {4, 4}, {5, 3}});
        CHECK(r.table.find("with no device record") == std::string::npos);
      }
    }
  }
}

TEST_CASE("stream capture begun while nb was dormant: its calls are still known as captured", "[integration][device][windows]") {
  // NB_TRIGGER=signal: the program arms nb just after the capture began.
  for (const char* mode : {"driver", "runtime"}) {
    DYNAMIC_SECTION(mode) {
      nbtest::TempDir dir;
      auto env = nbtest::shim_env(dir.file("out"));
      env["NB_TRIGGER"] = "signal";
      env["NB_PRINT_TABLE"] = "0";
      const auto run = nbtest::run({nbtest::program("capture"), mode, "raise"}, env, dir.path(), 60);
      INFO(run.err);
      REQUIRE(run.exit_code == 0);
      const auto trace = nbtest::nbread("trace", dir.file("out.w1.trace.json.gz"));
      check_capture_trace(trace, {{2, 15}, {3, 5}, {4, 4}, {5, 3}});
      CHECK(nbtest::read_file(dir.file("out.w1.table.txt")).find("with no device record") == std::string::npos);
    }
  }
}

TEST_CASE("without the periodic flush, the final flush still brings every record", "[integration][device]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "device", {dir.file("manifest")}, {{"NB_CUPTI_FLUSH_MS", "0"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  const auto expected = expected_device_work(dir.file("manifest"));
  REQUIRE(expected.size() == 18);
  CHECK(check_joined_trace(r.trace).size() == expected.size());
}

TEST_CASE("device trace layout: GPU processes, stream threads, device properties", "[integration][device]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "device", {dir.file("manifest")});
  REQUIRE(r.run.exit_code == 0);
  const auto& props = r.trace["deviceProperties"];
  REQUIRE(props.size() >= 1);
  CHECK(props[0]["name"] == "Fake CUDA Device");
  CHECK(props[0]["numSms"].get<int>() > 0);
  std::set<long> stream_tids;
  for (const auto& e : r.trace["traceEvents"]) {
    if (is_device(e)) stream_tids.insert(e["tid"].get<long>());
  }
  REQUIRE(stream_tids.size() >= 3);  // s1, s2, the legacy/per-thread streams
  bool gpu_named = false;
  std::set<long> named_streams;
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name" && e["pid"] == 0 && e["args"]["name"] == "GPU 0") gpu_named = true;
    if (e["name"] == "thread_name" && e["pid"] == 0) {
      CHECK(e["args"]["name"] == "stream " + std::to_string(e["tid"].get<long>()));
      named_streams.insert(e["tid"].get<long>());
    }
  }
  CHECK(gpu_named);
  CHECK(named_streams == stream_tids);
  // Kernel events carry Kineto's fields.
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "kernel") {
      for (const char* k : {"device", "context", "stream", "correlation", "registers per thread",
                            "shared memory", "grid", "block", "queued"}) {
        CHECK(e["args"].contains(k));
      }
    }
    if (e["ph"] == "X" && (e["cat"] == "gpu_memcpy" || e["cat"] == "gpu_memset")) {
      CHECK(e["args"].contains("bytes"));
      CHECK(e["args"].contains("memory bandwidth (GB/s)"));
    }
  }
}

TEST_CASE("the table ranks kernels by device time, with device totals", "[integration][device]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "device", {dir.file("manifest")}, {{"FAKE_CUPTI_KERNEL_NS", "5000"}});
  REQUIRE(r.run.exit_code == 0);
  INFO(r.table);
  CHECK(r.table.find("Self Device") != std::string::npos);
  CHECK(r.table.find("Self Device time total") != std::string::npos);
  // kernelA ran 4 times, kernelB 3, node_kernel 3 (5 us each): kernelA's row
  // comes first among the kernels.
  const size_t a = r.table.find("kernelA(float*)"), b = r.table.find("kernelB(float*, int)");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  CHECK(a < b);
  CHECK(r.table.find("joined to their host call (order): 18 of 18") != std::string::npos);
  CHECK(r.table.find("nb's own cost on the calling threads, estimated") != std::string::npos);
}

TEST_CASE("join mode none: device work without arrows", "[integration][device]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "device", {dir.file("manifest")}, {{"NB_CUPTI_JOIN", "none"}});
  REQUIRE(r.run.exit_code == 0);
  size_t device_events = 0, flows = 0;
  CHECK(nbtest::host_calls_by_correlation(r.trace).empty());
  for (const auto& e : r.trace["traceEvents"]) {
    if (is_device(e)) ++device_events;
    if (e["ph"] == "s" || e["ph"] == "f") ++flows;
  }
  CHECK(device_events == 18);
  CHECK(flows == 0);
}

TEST_CASE("without CUPTI, or with CUPTI taken, the host timeline and the snapshot still come out",
          "[integration][device]") {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"NB_CUPTI_LIB", "/nonexistent/libcupti.so.13"}}, "device time not recorded: cannot load NB_CUPTI_LIB"},
      {{{"FAKE_CUPTI_BUSY", "1"}}, "device time not recorded: CUPTI is already used by another tool"},
      {{{"FAKE_CUPTI_FAIL", "1"}}, "device time not recorded: cuptiActivityRegisterCallbacks"},
      {{{"NB_DEVICE", "0"}}, ""},
  };
  for (const auto& [env, line] : cases) {
    nbtest::TempDir dir;
    const auto r = nbtest::run_recorded(dir, "device", {dir.file("manifest")}, env);
    INFO(r.run.err);
    REQUIRE(r.run.exit_code == 0);
    REQUIRE(!r.trace.is_null());
    REQUIRE(!r.snapshot.is_null());
    CHECK(nbtest::host_calls(r.trace).size() > 10);
    for (const auto& e : r.trace["traceEvents"]) CHECK_FALSE(is_device(e));
    if (!line.empty()) {
      CHECK(r.run.err.find("nb: " + line) != std::string::npos);
      // Said once.
      CHECK(r.run.err.find("device time not recorded") == r.run.err.rfind("device time not recorded"));
    }
    CHECK(r.table.find("No device time") != std::string::npos);
  }
}
