// Every path to the driver, on the fake stack, with the real shim preloaded:
// each call the program made appears exactly once, with the right name,
// thread and kernel name; nothing appears that the program did not do.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <tuple>

#include "outputs.h"

using nlohmann::json;

TEST_CASE("each call on each path appears once with its name, thread and kernel", "[integration][paths]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "paths", {dir.file("manifest")});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(!r.trace.is_null());
  const auto m = nbtest::read_manifest(dir.file("manifest"));
  REQUIRE(m.calls.size() > 30);

  using Key = std::tuple<std::string, long, std::string>;
  std::multiset<Key> expected, recorded;
  for (const auto& c : m.calls) expected.insert({c.name, c.tid, c.kernel});
  for (const auto& e : nbtest::host_calls(r.trace)) {
    std::string kernel = "-";
    if (e.contains("args") && e["args"].contains("kernel")) kernel = e["args"]["kernel"];
    recorded.insert({e["name"].get<std::string>(), e["tid"].get<long>(), kernel});
  }
  std::vector<Key> missing, extra;
  std::set_difference(expected.begin(), expected.end(), recorded.begin(), recorded.end(), std::back_inserter(missing));
  std::set_difference(recorded.begin(), recorded.end(), expected.begin(), expected.end(), std::back_inserter(extra));
  for (const auto& [n, t, k] : missing) UNSCOPED_INFO("missing: " << n << " tid " << t << " kernel " << k);
  for (const auto& [n, t, k] : extra) UNSCOPED_INFO("extra: " << n << " tid " << t << " kernel " << k);
  CHECK(missing.empty());
  CHECK(extra.empty());

  // Two threads, each with its own tid and a thread_name record.
  std::set<long> tids;
  for (const auto& c : m.calls) tids.insert(c.tid);
  REQUIRE(tids.size() == 2);
  std::set<long> named;
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") named.insert(e["tid"].get<long>());
  }
  for (long t : tids) CHECK(named.count(t) == 1);

  // Runtime calls are cuda_runtime, driver calls cuda_driver; no record
  // is written twice (a thread's calls have distinct start times).
  std::set<std::pair<long, std::string>> starts;
  for (const auto& e : nbtest::host_calls(r.trace)) {
    const std::string name = e["name"];
    CHECK(e["cat"] == (name.rfind("cuda", 0) == 0 ? "cuda_runtime" : "cuda_driver"));
    CHECK(starts.insert({e["tid"].get<long>(), e["ts"].dump()}).second);
  }

  // Each allocation once in the snapshot, each free once.
  std::multiset<std::pair<unsigned long long, unsigned long long>> allocs;
  size_t frees = 0;
  for (const auto& e : r.snapshot["device_traces"][0]) {
    if (e["action"] == "alloc") allocs.insert({e["addr"].get<unsigned long long>(), e["size"].get<unsigned long long>()});
    if (e["action"] == "free_completed") ++frees;
  }
  CHECK(allocs == m.allocs);
  CHECK(frees == m.frees.size());
}

TEST_CASE("host calls are on the wall clock, in order on each thread, never overlapping",
          "[integration][paths][clock]") {
  nbtest::TempDir dir;
  const auto before = std::chrono::system_clock::now();
  const auto r = nbtest::run_recorded(dir, "paths", {dir.file("manifest")});
  const auto after = std::chrono::system_clock::now();
  REQUIRE(r.run.exit_code == 0);
  const auto to_ns = [](auto t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  const double base = r.trace["baseTimeNanoseconds"].get<double>();
  std::map<long, std::vector<std::pair<double, double>>> per_thread;
  for (const auto& e : nbtest::host_calls(r.trace)) {
    const double start_ns = base + e["ts"].get<double>() * 1000;
    const double dur_ns = e["dur"].get<double>() * 1000;
    CHECK(start_ns >= static_cast<double>(to_ns(before)) - 1e6);
    CHECK(start_ns + dur_ns <= static_cast<double>(to_ns(after)) + 1e6);
    CHECK(dur_ns >= 0);
    per_thread[e["tid"].get<long>()].push_back({start_ns, dur_ns});
  }
  for (auto& [tid, calls] : per_thread) {
    // Events stream out as they are joined, not in time order (viewers
    // sort them): in time order, no two calls of a thread overlap.
    std::sort(calls.begin(), calls.end());
    for (size_t i = 1; i < calls.size(); ++i) {
      INFO("thread " << tid << " call " << i);
      CHECK(calls[i - 1].first + calls[i - 1].second <= calls[i].first + 1);  // 1 ns: rounding
    }
  }
}

TEST_CASE("a runtime call that lands in the driver is recorded once, at the runtime level",
          "[integration][paths]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "paths", {dir.file("manifest")});
  REQUIRE(r.run.exit_code == 0);
  // The fake runtime's cudaMalloc reaches cuMemAlloc_v2 through the wrapped
  // cuGetProcAddress answer: the trace must hold the cudaMalloc only. Driver
  // calls are only those the program made itself (counted in the manifest).
  const auto m = nbtest::read_manifest(dir.file("manifest"));
  long manifest_driver_allocs = std::count_if(m.calls.begin(), m.calls.end(),
                                              [](const auto& c) { return c.name == "cuMemAlloc_v2"; });
  long trace_driver_allocs = 0;
  for (const auto& e : nbtest::host_calls(r.trace)) trace_driver_allocs += e["name"] == "cuMemAlloc_v2";
  REQUIRE(trace_driver_allocs == manifest_driver_allocs);
}
