// The recorder driven through its boundary (core/recorder.h) alone, as the
// shim drives it, with a Host of the test's own: no preload, no CUDA.
#include <algorithm>
#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/api.h"
#include "core/clock.h"
#include "core/drop_counts.h"
#include "core/recorder.h"
#include "core/ring.h"
#include "test_support.h"

using namespace nb;

namespace {

class TestHost final : public Host {
 public:
  void* driver_function(const char*) override { return nullptr; }  // no driver: nothing to wait for
  void own_thread() override { own_threads.fetch_add(1); }
  void go_dormant() override {
    dormant.fetch_add(1);
    if (!watched.empty() && nbtest::file_exists(watched)) files_before_dormant = true;
  }
  void exit_signal(int) override {}
  std::string nccl_version() override { return ""; }
  std::atomic<int> own_threads{0}, dormant{0};
  std::string watched;  // a file that must not exist yet when nb goes dormant
  std::atomic<bool> files_before_dormant{false};
};

Settings settings_for(const std::map<std::string, std::string>& env, const std::string& dir) {
  return read_settings(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      ProcessFacts{4242, "recorded", {}, "host", dir});
}

void record(ThreadSlot& slot, uint16_t api, Kind kind, uint64_t ptr, uint64_t bytes) {
  Record* r = slot.ring.reserve();
  REQUIRE(r != nullptr);
  clear_record(r);
  r->tid = slot.tid.load();
  r->api = api;
  r->kind = kind;
  r->ptr = ptr;
  r->bytes = bytes;
  r->device = 0;
  r->start = now_ticks();
  r->end = now_ticks();
  slot.ring.publish();
}

}  // namespace

TEST_CASE("recorder: records pushed into a ring come out as the three files", "[recorder]") {
  choose_tick_source(false);
  nbtest::TempDir dir;
  const Settings settings =
      settings_for({{"NB_OUT", "out/run-%p"}, {"NB_DEVICE", "0"}, {"NB_PRINT_TABLE", "0"}, {"NB_STACKS", "none"}},
                   dir.path());
  ThreadRegistry registry(64);
  NameTable names;
  Control control;
  TestHost host;
  RecorderSetup setup;
  setup.settings = &settings;
  setup.registry = &registry;
  setup.names = &names;
  setup.control = &control;
  std::unique_ptr<Recorder> recorder = make_recorder(setup, host);
  CHECK(recorder->cupti() == nullptr);
  REQUIRE(recorder->start());

  ThreadSlot* slot = registry.acquire(static_cast<uint32_t>(syscall(SYS_gettid)));
  REQUIRE(slot != nullptr);
  record(*slot, kApi_cuMemAlloc_v2, Kind::Alloc, 0x10000, 4096);
  record(*slot, kApi_cuMemFree_v2, Kind::Free, 0x10000, 0);
  record(*slot, kApi_cuMemAlloc_v2, Kind::Alloc, 0x20000, 8192);
  control.lost_at_start.store(3);  // counted as dropped, said in the footer
  recorder->finish();
  recorder->finish();  // idempotent

  CHECK(host.own_threads.load() >= 1);  // the collector thread said it is nb's own
  const std::string prefix = dir.file("out/run-4242");
  const auto trace = nbtest::nbread("trace", prefix + ".trace.json.gz");
  int allocs = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("name", "") == "cuMemAlloc_v2") ++allocs;
  }
  CHECK(allocs == 2);
  const auto snapshot = nbtest::nbread("snapshot", prefix + ".memory.pickle");
  CHECK(snapshot.dump().find("8192") != std::string::npos);
  const std::string table = nbtest::read_file(prefix + ".table.txt");
  CHECK(table.find("cuMemAlloc_v2") != std::string::npos);
  CHECK(table.find("came while another thread was starting nb: 3") != std::string::npos);
}

TEST_CASE("recorder: a time-stepped trigger window ends through Control and Host", "[recorder]") {
  choose_tick_source(false);
  nbtest::TempDir dir;
  const Settings settings = settings_for({{"NB_OUT", "w"}, {"NB_DEVICE", "0"}, {"NB_PRINT_TABLE", "0"},
                                          {"NB_TRIGGER", "signal"}, {"NB_STACKS", "none"}},
                                         dir.path());
  ThreadRegistry registry(64);
  NameTable names;
  Control control;
  TestHost host;
  host.watched = dir.file("w.w1.table.txt");
  RecorderSetup setup;
  setup.settings = &settings;
  setup.registry = &registry;
  setup.names = &names;
  setup.control = &control;
  std::unique_ptr<Recorder> recorder = make_recorder(setup, host);
  REQUIRE(recorder->start());
  // Armed, as the shim's hook does after SIGUSR2 ...
  control.arm_step.store(0);
  control.arm_tick.store(now_ticks());
  control.armed.store(true);
  ThreadSlot* slot = registry.acquire(static_cast<uint32_t>(syscall(SYS_gettid)));
  REQUIRE(slot != nullptr);
  record(*slot, kApi_cuMemAlloc_v2, Kind::Alloc, 0x30000, 512);
  usleep(50000);
  // ... and the next SIGUSR2 ends the window: the recorder takes the request
  // and asks the shim to go dormant, then writes window 1.
  control.arm_request.store(true);
  for (int i = 0; i < 3000 && !nbtest::file_exists(dir.file("w.w1.table.txt")); ++i) usleep(10000);
  CHECK(host.dormant.load() >= 1);
  CHECK_FALSE(control.arm_request.load());
  CHECK(nbtest::file_exists(dir.file("w.w1.trace.json.gz")));
  // Dormant before the files appear: a program that arms the next window
  // once it sees them is never disarmed right after.
  CHECK_FALSE(host.files_before_dormant.load());
  recorder->finish();
}

namespace {

// One call's record, as the hooks make it: `result` is what the call returned.
void record_call(ThreadSlot& slot, uint16_t api, Kind kind, uint64_t ptr, int16_t result) {
  Record* r = slot.ring.reserve();
  REQUIRE(r != nullptr);
  clear_record(r);
  r->tid = slot.tid.load();
  r->api = api;
  r->kind = kind;
  r->ptr = ptr;
  r->bytes = 256;
  r->result = result;
  // One after the other, each 1000 ticks long.
  static uint64_t next = 0;
  next = std::max(next, now_ticks());  // not before the recorder that reads it began
  r->start = next;
  r->end = next + 1000;
  next += 2000;
  slot.ring.publish();
}

// A call whose record the full ring could not take: counted as the shim's
// drop path counts it.
void drop_call(ThreadSlot& slot, uint16_t api, int32_t rc) {
  REQUIRE(slot.ring.reserve() == nullptr);
  DroppedCall::own(slot.drops, api).returned(rc);
}

// The "# of Calls" and "Errors" cells of the table's row `name`.
std::pair<long, long> calls_and_errors(const std::string& table, const std::string& name) {
  const size_t at = table.find(" " + name + "  ");
  REQUIRE(at != std::string::npos);
  std::istringstream line(table.substr(at, table.find('\n', at) - at));
  std::vector<std::string> cells;
  for (std::string c; line >> c;) cells.push_back(c);
  REQUIRE(cells.size() >= 3);
  return {std::stol(cells[cells.size() - 2]), std::stol(cells.back())};
}

}  // namespace

TEST_CASE("recorder: calls whose record was dropped are in their row's calls and errors, not its times",
          "[recorder][drops]") {
  choose_tick_source(false);
  nbtest::TempDir dir;
  const Settings settings =
      settings_for({{"NB_OUT", "d"}, {"NB_DEVICE", "0"}, {"NB_PRINT_TABLE", "0"}, {"NB_STACKS", "none"}}, dir.path());
  ThreadRegistry registry(64);
  NameTable names;
  Control control;
  TestHost host;
  RecorderSetup setup;
  setup.settings = &settings;
  setup.registry = &registry;
  setup.names = &names;
  setup.control = &control;
  // Not started: no collector thread drains the ring while the test fills
  // it; finish() drains it once.
  std::unique_ptr<Recorder> recorder = make_recorder(setup, host);
  ThreadSlot* slot = registry.acquire(static_cast<uint32_t>(syscall(SYS_gettid)));
  REQUIRE(slot != nullptr);
  // 64 records: 40 launches (2 failed), 12 allocations and 12 frees, one of
  // them of an allocation whose record is dropped below.
  for (int i = 0; i < 40; ++i) record_call(*slot, kApi_cuLaunchKernel, Kind::Launch, 0, i < 2 ? 1 : 0);
  for (uint64_t i = 0; i < 12; ++i) record_call(*slot, kApi_cuMemAlloc_v2, Kind::Alloc, 0x10000 * (i + 1), 0);
  for (uint64_t i = 0; i < 11; ++i) record_call(*slot, kApi_cuMemFree_v2, Kind::Free, 0x10000 * (i + 1), 0);
  record_call(*slot, kApi_cuMemFree_v2, Kind::Free, 0x990000, 0);
  // The ring is full: 25 launches dropped (5 failed), 1 allocation and 2 frees.
  for (int i = 0; i < 25; ++i) drop_call(*slot, kApi_cuLaunchKernel, i % 5 == 0 ? 1 : 0);
  drop_call(*slot, kApi_cuMemAlloc_v2, 0);
  drop_call(*slot, kApi_cuMemFree_v2, 0);
  drop_call(*slot, kApi_cuMemFree_v2, 0);
  // 3 launches lost while another thread started nb, 1 of them failed.
  control.lost_at_start.store(3);
  DroppedCall::shared(control.lost_calls, kApi_cuLaunchKernel).returned(0);
  DroppedCall::shared(control.lost_calls, kApi_cuLaunchKernel).returned(0);
  DroppedCall::shared(control.lost_calls, kApi_cuLaunchKernel).returned(1);
  recorder->finish();

  const std::string prefix = dir.file("d");
  const std::string table = nbtest::read_file(prefix + ".table.txt");
  INFO(table);
  CHECK(calls_and_errors(table, "cuLaunchKernel") == std::make_pair(68L, 8L));
  CHECK(calls_and_errors(table, "cuMemAlloc_v2") == std::make_pair(13L, 0L));
  CHECK(calls_and_errors(table, "cuMemFree_v2") == std::make_pair(14L, 0L));
  CHECK(table.find("Calls: 95, records: 64, dropped: 31") != std::string::npos);
  // The host times are the recorded calls' (each took 1000 ticks): the
  // average is not diluted by calls without a time.
  CHECK(table.find("Host times of rows with dropped calls cover the recorded calls only: ") != std::string::npos);
  CHECK(table.find("cuLaunchKernel (40 of 68 recorded)") != std::string::npos);
  CHECK(table.find("cuMemAlloc_v2 (12 of 13 recorded)") != std::string::npos);
  CHECK(table.find("cuMemFree_v2 (12 of 14 recorded)") != std::string::npos);
  CHECK(table.find("Dropped because a thread's ring was full (raise NB_RING_RECORDS): 28") != std::string::npos);
  CHECK(table.find("came while another thread was starting nb: 3") != std::string::npos);
  // What the drops did to memory: a free of an allocation nb has no record
  // of, and allocations still live because their free was dropped.
  CHECK(table.find("Frees of addresses not seen allocated: 1 (1 allocation record was dropped; the rest, if any, "
                   "were made before recording began)") != std::string::npos);
  CHECK(table.find("Free records dropped: 2 (") != std::string::npos);

  // The trace's copy of the table carries the same counts, for nbprof stats.
  const auto trace = nbtest::nbread("trace", prefix + ".trace.json.gz");
  bool launch_row = false;
  for (const auto& row : trace["nbTable"]["rows"]) {
    if (row["name"] != "cuLaunchKernel") continue;
    launch_row = true;
    CHECK(row["calls"] == 68);
    CHECK(row["errors"] == 8);
    CHECK(row["droppedCalls"] == 28);
  }
  CHECK(launch_row);
}

TEST_CASE("recorder: a window's table counts the calls dropped while it recorded", "[recorder][drops]") {
  choose_tick_source(false);
  nbtest::TempDir dir;
  const Settings settings = settings_for({{"NB_OUT", "w"}, {"NB_DEVICE", "0"}, {"NB_PRINT_TABLE", "0"},
                                          {"NB_TRIGGER", "signal"}, {"NB_STACKS", "none"}},
                                         dir.path());
  ThreadRegistry registry(64);
  NameTable names;
  Control control;
  TestHost host;
  RecorderSetup setup;
  setup.settings = &settings;
  setup.registry = &registry;
  setup.names = &names;
  setup.control = &control;
  std::unique_ptr<Recorder> recorder = make_recorder(setup, host);
  REQUIRE(recorder->start());
  control.arm_step.store(0);
  control.arm_tick.store(now_ticks());
  control.armed.store(true);
  ThreadSlot* slot = registry.acquire(static_cast<uint32_t>(syscall(SYS_gettid)));
  REQUIRE(slot != nullptr);
  record_call(*slot, kApi_cuLaunchKernel, Kind::Launch, 0, 0);
  for (int i = 0; i < 7; ++i) DroppedCall::own(slot->drops, kApi_cuLaunchKernel).returned(i == 0 ? 1 : 0);
  usleep(50000);
  control.arm_request.store(true);  // ends the window
  for (int i = 0; i < 3000 && !nbtest::file_exists(dir.file("w.w1.table.txt")); ++i) usleep(10000);
  const std::string table = nbtest::read_file(dir.file("w.w1.table.txt"));
  INFO(table);
  CHECK(calls_and_errors(table, "cuLaunchKernel") == std::make_pair(8L, 1L));
  CHECK(table.find("cuLaunchKernel (1 of 8 recorded)") != std::string::npos);
  recorder->finish();
}
