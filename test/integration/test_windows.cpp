// Recording windows (NB_STEP, NB_WAIT/WARMUP/ACTIVE/REPEAT, NB_TRIGGER) on
// the seed's loop (test/programs/steps.cpp): each launch of step i has grid
// x = i + 1, so a window's kernels say exactly which steps it holds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "outputs.h"
#include "test_support.h"

namespace {

struct Window {
  nlohmann::json trace, snapshot;
  std::string table;
  std::vector<std::string> steps;  // ProfilerStep names, in order
  std::map<int, int> kernels;      // grid x (step + 1) → kernels
};

struct Run {
  nbtest::RunResult run;
  std::map<int, Window> windows;  // by N of <prefix>.wN.*
};

Run run_steps(const nbtest::TempDir& dir, const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env, const std::string& program = "steps") {
  auto e = nbtest::shim_env(dir.file("out"));
  e["NB_PRINT_TABLE"] = "0";
  for (const auto& [k, v] : env) e[k] = v;
  std::vector<std::string> argv{nbtest::program(program)};
  argv.insert(argv.end(), args.begin(), args.end());
  Run r;
  r.run = nbtest::run(argv, e, dir.path(), 60);
  for (int n = 1; n < 10; ++n) {
    const std::string prefix = dir.file("out.w" + std::to_string(n));
    if (!nbtest::file_exists(prefix + ".trace.json.gz")) continue;
    Window w;
    // Each window's files stand alone: the trace passes the layout checks,
    // the snapshot MemoryViz's.
    w.trace = nbtest::nbread("trace", prefix + ".trace.json.gz");
    w.snapshot = nbtest::nbread("snapshot", prefix + ".memory.pickle");
    w.table = nbtest::read_file(prefix + ".table.txt");
    for (const auto& ev : w.trace["traceEvents"]) {
      const std::string name = ev.value("name", "");
      if (name.rfind("ProfilerStep#", 0) == 0) w.steps.push_back(name);
      if (ev.value("cat", "") == "kernel") ++w.kernels[ev["args"]["grid"][0].get<int>()];
    }
    r.windows[n] = std::move(w);
  }
  return r;
}

std::vector<std::string> step_names(int first, int count) {
  std::vector<std::string> out;
  for (int i = first; i < first + count; ++i) out.push_back("ProfilerStep#" + std::to_string(i));
  return out;
}

// Steps [first, first + count) of the program, 4 kernels each.
std::map<int, int> kernels_of_steps(int first, int count) {
  std::map<int, int> out;
  for (int i = first; i < first + count; ++i) out[i + 1] = 4;
  return out;
}

// Wait 2, warmup 1, active 4: one window of steps 3 to 6 (16 kernels, 4
// copies), all of it joined by `join`.
void check_steps_3_to_6_joined(const std::vector<std::string>& args, std::map<std::string, std::string> env,
                               const std::string& join) {
  nbtest::TempDir dir;
  env.insert({{"NB_STEP", "kernel:lm_head"}, {"NB_WAIT", "2"}, {"NB_WARMUP", "1"}, {"NB_ACTIVE", "4"}, {"NB_REPEAT", "1"}});
  const Run r = run_steps(dir, args, env);
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.windows.size() == 1);
  const Window& w = r.windows.at(1);
  INFO(w.table);
  CHECK(w.kernels == kernels_of_steps(3, 4));
  CHECK(w.table.find("joined to their host call (" + join + "): 20 of 20") != std::string::npos);
}

}  // namespace

TEST_CASE("windows: kernel marker, wait 4 warmup 2 active 8: exactly those 8 steps", "[integration][windows]") {
  nbtest::TempDir dir;
  const Run r = run_steps(dir, {"32"}, {{"NB_STEP", "kernel:lm_head"}, {"NB_WAIT", "4"}, {"NB_WARMUP", "2"},
                                        {"NB_ACTIVE", "8"}, {"NB_REPEAT", "1"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.windows.size() == 1);
  const Window& w = r.windows.at(1);
  CHECK(w.steps == step_names(6, 8));
  CHECK(w.kernels == kernels_of_steps(6, 8));
  CHECK(w.table.find("Window 1: steps 6 to 13") != std::string::npos);
  // The files of a window are not written twice, and no whole-run files.
  CHECK_FALSE(nbtest::file_exists(dir.file("out.trace.json.gz")));
}

TEST_CASE("windows: repeat 2 gives two complete, separately loadable sets", "[integration][windows]") {
  nbtest::TempDir dir;
  const Run r = run_steps(dir, {"40"}, {{"NB_STEP", "kernel:lm_head"}, {"NB_WAIT", "4"}, {"NB_WARMUP", "2"},
                                        {"NB_ACTIVE", "8"}, {"NB_REPEAT", "2"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.windows.size() == 2);
  CHECK(r.windows.at(1).kernels == kernels_of_steps(6, 8));
  CHECK(r.windows.at(2).steps == step_names(20, 8));
  CHECK(r.windows.at(2).kernels == kernels_of_steps(20, 8));
  for (const auto& [n, w] : r.windows) CHECK(w.snapshot["device_traces"].is_array());
}

TEST_CASE("windows: sync marker with skip_first", "[integration][windows]") {
  nbtest::TempDir dir;
  // A step ends at each synchronous copy to the host, the last call of each
  // program step: steps line up with the program's.
  const Run r = run_steps(dir, {"16"}, {{"NB_STEP", "sync"}, {"NB_SKIP_FIRST", "3"}, {"NB_WAIT", "1"},
                                        {"NB_WARMUP", "1"}, {"NB_ACTIVE", "2"}});
  INFO(r.run.err);
  REQUIRE(r.windows.size() == 1);
  CHECK(r.windows.at(1).steps == step_names(5, 2));
  CHECK(r.windows.at(1).kernels == kernels_of_steps(5, 2));
}

TEST_CASE("windows: launches:N counts launches", "[integration][windows]") {
  nbtest::TempDir dir;
  const Run r = run_steps(dir, {"16"}, {{"NB_STEP", "launches:4"}, {"NB_WAIT", "2"}, {"NB_ACTIVE", "3"}});
  INFO(r.run.err);
  REQUIRE(r.windows.size() == 1);
  CHECK(r.windows.at(1).steps == step_names(2, 3));
  CHECK(r.windows.at(1).kernels == kernels_of_steps(2, 3));
}

TEST_CASE("windows: profiler-api records from cudaProfilerStart to cudaProfilerStop", "[integration][windows]") {
  nbtest::TempDir dir;
  const Run r = run_steps(dir, {"32", "profiler=10:14"}, {{"NB_STEP", "profiler-api"}});
  INFO(r.run.err);
  REQUIRE(r.windows.size() == 1);
  CHECK(r.windows.at(1).kernels == kernels_of_steps(10, 5));
  CHECK(r.windows.at(1).steps.size() == 1);
}

TEST_CASE("windows: time marker cuts steps by the clock", "[integration][windows]") {
  nbtest::TempDir dir;
  const Run r = run_steps(dir, {"60", "sleep_us=10000"}, {{"NB_STEP", "time:100ms"}, {"NB_WAIT", "1"}, {"NB_ACTIVE", "2"}});
  INFO(r.run.err);
  REQUIRE(r.windows.size() == 1);
  const Window& w = r.windows.at(1);
  CHECK(w.steps == step_names(1, 2));
  // Each step lasts at least 100 ms (longer when the collector comes late
  // on a loaded machine), and the window holds the program steps of its
  // time: at least one, at most one per 10 ms of it and the two at its ends.
  double window_us = 0;
  for (const auto& ev : w.trace["traceEvents"]) {
    if (ev.value("name", "").rfind("ProfilerStep#", 0) != 0) continue;
    CHECK(ev["dur"].get<double>() >= 99000);
    window_us += ev["dur"].get<double>();
  }
  int steps = 0;
  for (const auto& [grid, n] : w.kernels) steps += n / 4;
  CHECK(steps >= 1);
  CHECK(steps <= window_us / 10000 + 2);
}

TEST_CASE("windows: a program that exits early writes the partial window, saying so", "[integration][windows]") {
  nbtest::TempDir dir;
  const Run r = run_steps(dir, {"20"}, {{"NB_STEP", "kernel:lm_head"}, {"NB_WAIT", "4"}, {"NB_ACTIVE", "40"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.windows.size() == 1);
  CHECK(r.windows.at(1).steps == step_names(4, 16));
  CHECK(r.windows.at(1).kernels == kernels_of_steps(4, 16));
  CHECK(r.windows.at(1).table.find("Partial window: the program exited after 16 of its 40 steps") != std::string::npos);
}

TEST_CASE("trigger: dormant until SIGUSR2, then the schedule; armed again by the next", "[integration][windows][trigger]") {
  nbtest::TempDir dir;
  // The program signals itself before steps 10 and 20, 20 ms apart; the
  // second once the first window's files are there (nb dormant again), not
  // at a moment that a loaded machine's collector may not have reached.
  const Run r = run_steps(dir, {"32", "raise=10,20", "gate=20:out.w1.table.txt", "sleep_us=20000"},
                          {{"NB_TRIGGER", "signal"}, {"NB_STEP", "kernel:lm_head"}, {"NB_ACTIVE", "4"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.windows.size() == 2);
  // The signal is noticed by step 10's first call; a dormant shim cannot
  // know that call began the step, so the window starts with step 11.
  CHECK(r.windows.at(1).kernels == kernels_of_steps(11, 4));
  CHECK(r.windows.at(2).kernels == kernels_of_steps(21, 4));
  CHECK(r.windows.at(1).steps.size() == 4);
  CHECK(r.windows.at(2).steps.size() == 4);
}

TEST_CASE("trigger: a signal in the middle of a step starts the window with the next whole step",
          "[integration][windows][trigger]") {
  nbtest::TempDir dir;
  // Step 10 gets the signal after its second launch; its two last launches
  // and its marker are recorded but belong to no window.
  const Run r = run_steps(dir, {"24", "raise_mid=10", "sleep_us=20000"},
                          {{"NB_TRIGGER", "signal"}, {"NB_STEP", "kernel:lm_head"}, {"NB_ACTIVE", "4"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.windows.size() == 1);
  CHECK(r.windows.at(1).kernels == kernels_of_steps(11, 4));
  CHECK(r.windows.at(1).steps.size() == 4);
}

TEST_CASE("trigger: without a schedule the next SIGUSR2 ends the window", "[integration][windows][trigger]") {
  nbtest::TempDir dir;
  const Run r = run_steps(dir, {"48", "raise=10,20", "sleep_us=20000"}, {{"NB_TRIGGER", "signal"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.windows.size() == 1);
  const auto& k = r.windows.at(1).kernels;
  REQUIRE_FALSE(k.empty());
  CHECK(k.begin()->first == 11);  // from step 10
  CHECK(k.rbegin()->first >= 20);  // to step 19, and what step 20 launched before the collector saw the signal
  // The collector notices within a pass or so (step 21 or 22); a loaded or
  // sanitized machine, later. Exit would have ended it at step 48.
  CHECK(k.rbegin()->first <= 40);
}

TEST_CASE("trigger: never armed, nothing is recorded or written", "[integration][windows][trigger]") {
  nbtest::TempDir dir;
  const Run r = run_steps(dir, {"8"}, {{"NB_TRIGGER", "signal"}, {"NB_ACTIVE", "2"}});
  INFO(r.run.err);
  CHECK(r.run.exit_code == 0);
  CHECK(r.windows.empty());
  CHECK_FALSE(nbtest::file_exists(dir.file("out.trace.json.gz")));
}

TEST_CASE("windows: NB_STEP without a schedule marks steps in the whole-run trace", "[integration][windows]") {
  nbtest::TempDir dir;
  auto e = nbtest::shim_env(dir.file("out"));
  e["NB_STEP"] = "kernel:lm_head";
  e["NB_PRINT_TABLE"] = "0";
  const auto run = nbtest::run({nbtest::program("steps"), "6"}, e, dir.path());
  REQUIRE(run.exit_code == 0);
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  std::vector<std::string> steps;
  for (const auto& ev : trace["traceEvents"]) {
    const std::string name = ev.value("name", "");
    if (name.rfind("ProfilerStep#", 0) == 0) steps.push_back(name);
  }
  CHECK(steps == step_names(0, 6));
}

TEST_CASE("windows: nvtx marker on a loop that marks each step with an NVTX range", "[integration][windows][nvtx]") {
  nbtest::TempDir dir;
  // One kernel per step here, at grid x = step + 1.
  const Run r = run_steps(dir, {"32"}, {{"NB_STEP", "nvtx:step"}, {"NB_WAIT", "4"}, {"NB_WARMUP", "2"},
                                        {"NB_ACTIVE", "8"}}, "nvtx_steps");
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  // NVTX answered through nb: levels 0, not -2 (no tool).
  CHECK(r.run.out.find("push -2") == std::string::npos);
  REQUIRE(r.windows.size() == 1);
  const Window& w = r.windows.at(1);
  CHECK(w.steps == step_names(6, 8));
  std::map<int, int> expected;
  for (int i = 6; i < 14; ++i) expected[i + 1] = 1;
  CHECK(w.kernels == expected);
  // The ranges themselves: user_annotation on the thread, and over the
  // device work they launched.
  std::map<std::string, int> cpu, gpu;
  for (const auto& ev : w.trace["traceEvents"]) {
    const std::string cat = ev.value("cat", "");
    if (cat == "user_annotation") ++cpu[ev["name"].get<std::string>()];
    if (cat == "gpu_user_annotation") ++gpu[ev["name"].get<std::string>()];
  }
  CHECK(cpu["step"] == 8);
  CHECK(cpu["inner"] == 8);
  CHECK(gpu["step"] == 8);
  CHECK(gpu["inner"] == 8);
}

TEST_CASE("nvtx: another tool named in NVTX_INJECTION64_PATH keeps NVTX; nb says it sees no ranges", "[integration][windows][nvtx]") {
  nbtest::TempDir dir;
  const std::string other = dir.file("libother_nvtx_tool.so");  // absent: NVTX then has no tool at all
  const Run r = run_steps(dir, {"8"}, {{"NB_STEP", "nvtx:step"}, {"NVTX_INJECTION64_PATH", other}}, "nvtx_steps");
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  // NVTX went to the library named, not to nb: it found none, so every
  // push answers -2 (no tool), as without nb.
  CHECK(r.run.out.find("push -2") != std::string::npos);
  CHECK(r.run.out.find("push 0") == std::string::npos);
  // One line says what nb gave up.
  CHECK(r.run.err.find("NVTX ranges not seen: NVTX_INJECTION64_PATH names another tool (" + other + "); NB_STEP=nvtx:step ends no step") !=
        std::string::npos);
}

TEST_CASE("windows: in both joins all device work of the window is joined (16 kernels, 4 copies)", "[integration][windows]") {
  for (const char* join : {"order", "callback"}) {
    DYNAMIC_SECTION("join " << join) {
      check_steps_3_to_6_joined({"20"}, {{"NB_CUPTI_JOIN", join}}, join);
    }
  }
}

TEST_CASE("windows: each window's footer says what the stacks taken in the run so far cost", "[integration][windows][stacks]") {
  nbtest::TempDir dir;
  const Run r = run_steps(dir, {"40"}, {{"NB_STEP", "kernel:lm_head"}, {"NB_WAIT", "4"}, {"NB_WARMUP", "2"},
                                        {"NB_ACTIVE", "8"}, {"NB_REPEAT", "2"}, {"NB_STACKS", "all"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.windows.size() == 2);
  const auto stacks_of = [](const Window& w) {
    const std::string key = "Stacks taken on the calling threads in the run so far: ";
    const size_t at = w.table.find(key);
    return at == std::string::npos ? size_t{0} : static_cast<size_t>(std::stoull(w.table.substr(at + key.size())));
  };
  INFO(r.windows.at(1).table << "\n" << r.windows.at(2).table);
  // Every call of a window had its stack taken, and the count runs on: by
  // the second window's table it holds both windows' calls (and those of the
  // steps around them, recorded too).
  const size_t first = stacks_of(r.windows.at(1)), second = stacks_of(r.windows.at(2));
  const size_t calls1 = nbtest::host_calls(r.windows.at(1).trace).size();
  const size_t calls2 = nbtest::host_calls(r.windows.at(2).trace).size();
  CHECK(calls1 > 0);
  CHECK(first >= calls1);
  CHECK(second >= first);
  CHECK(second >= calls1 + calls2);
}

TEST_CASE("steps cut inside the program's own NVTX ranges: no two spans on one track overlap in part",
          "[integration][windows][nvtx]") {
  nbtest::TempDir dir;
  // The step ends at the kernel launched inside each "step" range, so a
  // ProfilerStep span begins and ends inside ranges of the program's.
  const Run r = run_steps(dir, {"8"}, {{"NB_STEP", "kernel:step_kernel"}, {"NB_WAIT", "1"}, {"NB_ACTIVE", "4"}},
                          "nvtx_steps");
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.windows.count(1));
  const Window& w = r.windows.at(1);
  CHECK(w.steps.size() == 4);
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& ev : w.trace["traceEvents"]) {
    if (ev.value("ph", "") != "X") continue;
    const double ts = ev["ts"].get<double>();
    tracks[{ev["pid"].get<int64_t>(), ev["tid"].get<int64_t>()}].push_back({ts, ts + ev["dur"].get<double>()});
  }
  // Times are microseconds with three decimals, each rounded on its own:
  // spans that touch may seem to overlap by a nanosecond.
  constexpr double kRounding = 0.002;
  int partial = 0;
  for (auto& [track, spans] : tracks) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 0; i < spans.size(); ++i) {
      for (size_t j = i + 1; j < spans.size() && spans[j].first + kRounding < spans[i].second; ++j) {
        if (spans[j].second > spans[i].second + kRounding) ++partial;  // starts inside, ends outside
      }
    }
  }
  CHECK(partial == 0);
}

TEST_CASE("windows: a window's last records held in a CUPTI buffer of a busy device are forced out in time",
          "[integration][windows]") {
  // A device never idle: CUPTI's plain flush hands over no partly filled
  // buffer, and the program runs on for 4.5 s after the window at a pace
  // that fills none. The window's records come by a forced flush at its
  // 2-s deadline, nothing a window records being able to run then.
  check_steps_3_to_6_joined({"96", "sleep_us=50000"}, {{"FAKE_CUPTI_BUSY_DEVICE", "1"}}, "order");
}
