// The recorder driven through its boundary (core/recorder.h) alone, as the
// shim drives it, with a Host of the test's own: no preload, no CUDA.
#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <string>

#include "core/api.h"
#include "core/clock.h"
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
      4242, "recorded", dir);
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
  for (int i = 0; i < 200 && !nbtest::file_exists(dir.file("w.w1.table.txt")); ++i) usleep(10000);
  CHECK(host.dormant.load() >= 1);
  CHECK_FALSE(control.arm_request.load());
  CHECK(nbtest::file_exists(dir.file("w.w1.trace.json.gz")));
  // Dormant before the files appear: a program that arms the next window
  // once it sees them is never disarmed right after.
  CHECK_FALSE(host.files_before_dormant.load());
  recorder->finish();
}
