// The memory snapshot against what the program allocated, freed, leaked and
// failed to allocate.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "outputs.h"

TEST_CASE("snapshot: allocations, frees, a leak and an OOM match the program", "[integration][memory]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "memory", {dir.file("manifest")},
                                      {{"FAKE_CUDA_MEM_BYTES", std::to_string(256 << 20)}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(!r.snapshot.is_null());
  const auto m = nbtest::read_manifest(dir.file("manifest"));

  std::multiset<std::pair<unsigned long long, unsigned long long>> allocs;
  std::multiset<unsigned long long> freed;
  std::vector<nlohmann::json> ooms;
  size_t maps = 0, unmaps = 0;
  for (const auto& e : r.snapshot["device_traces"][0]) {
    const std::string a = e["action"];
    if (a == "alloc") allocs.insert({e["addr"].get<unsigned long long>(), e["size"].get<unsigned long long>()});
    if (a == "free_completed") freed.insert(e["addr"].get<unsigned long long>());
    if (a == "oom") ooms.push_back(e);
    maps += a == "segment_map";
    unmaps += a == "segment_unmap";
  }
  // Every allocation the program made is there once with its size, plus the
  // one virtual-memory mapping, which is drawn as an allocation too.
  for (const auto& as : m.allocs) {
    INFO("allocation at " << as.first << " of " << as.second);
    CHECK(allocs.count(as) == m.allocs.count(as));
  }
  CHECK(allocs.size() == m.allocs.size() + 1);
  CHECK(maps == 1);
  CHECK(unmaps == 1);
  CHECK(freed.size() == m.frees.size() + 1);  // + the unmap
  for (auto f : m.frees) CHECK(freed.count(f) == static_cast<size_t>(std::count(m.frees.begin(), m.frees.end(), f)));

  // The leak is the one live segment, with its size: the allocation the
  // program never freed (addresses are reused, so count per address).
  REQUIRE(r.snapshot["segments"].size() == 1);
  const auto& seg = r.snapshot["segments"][0];
  unsigned long long leaked = 0;
  for (const auto& as : m.allocs) {
    const auto allocs_here = std::count_if(m.allocs.begin(), m.allocs.end(), [&](const auto& x) { return x.first == as.first; });
    if (std::count(m.frees.begin(), m.frees.end(), as.first) < allocs_here) leaked = as.first;
  }
  CHECK(seg["address"] == leaked);
  CHECK(seg["total_size"] == (3 << 20));
  CHECK(seg["blocks"][0]["state"] == "active_allocated");

  // The OOM with the requested size and the device's free memory.
  REQUIRE(ooms.size() == 1);
  CHECK(ooms[0]["size"] == m.ooms.at(0));
  CHECK(ooms[0]["device_free"].get<unsigned long long>() > 0);
  CHECK(ooms[0]["device_free"].get<unsigned long long>() <= (256ull << 20));

  // Times are epoch microseconds (after 2020, not in the future by much).
  const long long t0 = r.snapshot["device_traces"][0][0]["time_us"];
  CHECK(t0 > 1577836800000000LL);
}

TEST_CASE("the memory ring keeps the newest NB_MEM_MAX_ENTRIES entries", "[integration][memory]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "memory", {dir.file("manifest")},
                                      {{"FAKE_CUDA_MEM_BYTES", std::to_string(256 << 20)},
                                       {"NB_MEM_MAX_ENTRIES", "7"}});
  REQUIRE(r.run.exit_code == 0);
  const auto& trace = r.snapshot["device_traces"][0];
  REQUIRE(trace.size() == 7);
  CHECK(trace[6]["action"] == "oom");  // the newest survives
  CHECK(r.table.find("Memory history entries overwritten") != std::string::npos);
}
