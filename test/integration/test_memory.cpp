// The memory snapshot against what the program allocated, freed, leaked and
// failed to allocate.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
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

namespace {
// The line of `needle` in a test program's source (1-based), 0 if absent.
int source_line(const std::string& file, const std::string& needle) {
  std::ifstream f(std::string(NB_SOURCE_DIR) + "/test/programs/" + file);
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.find(needle) != std::string::npos) return n;
  }
  return 0;
}

bool has_frame(const nlohmann::json& frames, const std::string& file_suffix, int line, const std::string& name_part) {
  for (const auto& f : frames) {
    const std::string file = f["filename"];
    const std::string name = f["name"];
    if (file.size() >= file_suffix.size() && file.compare(file.size() - file_suffix.size(), file_suffix.size(), file_suffix) == 0 &&
        f["line"] == line && name.find(name_part) != std::string::npos) {
      return true;
    }
  }
  return false;
}
}  // namespace

TEST_CASE("stacks: the leak's surviving allocation names the leaking line and its callers", "[integration][memory][stacks]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "memory", {dir.file("manifest")},
                                      {{"FAKE_CUDA_MEM_BYTES", std::to_string(256 << 20)}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.snapshot["segments"].size() == 1);
  const int leak_line = source_line("memory.cpp", "CHECK_CU(cudaMalloc(&g_leak");
  const int call_line = source_line("memory.cpp", "  leak_one();");
  REQUIRE(leak_line > 0);
  REQUIRE(call_line > 0);
  const auto& block_frames = r.snapshot["segments"][0]["blocks"][0]["frames"];
  INFO(block_frames.dump(1));
  // Innermost first: the program's own frame is the first one, not nb's.
  REQUIRE(block_frames.size() >= 2);
  const std::string first = block_frames[0]["filename"];
  CHECK(first.find("memory.cpp") != std::string::npos);
  CHECK(has_frame(block_frames, "memory.cpp", leak_line, "leak_one"));
  CHECK(has_frame(block_frames, "memory.cpp", call_line, "main"));
  // The trace's alloc entry for it carries the same stack.
  bool traced = false;
  for (const auto& e : r.snapshot["device_traces"][0]) {
    if (e["action"] == "alloc" && e["addr"] == r.snapshot["segments"][0]["address"]) {
      traced = has_frame(e["frames"], "memory.cpp", leak_line, "leak_one");
    }
  }
  CHECK(traced);
}

TEST_CASE("stacks: libunwind and libdw come from the copies bundled next to the shim", "[integration][memory][stacks]") {
  // Machines without the -dev packages (the H200 image) must get the same
  // stacks: the build copies the libraries into nb-libs/ beside the shim.
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "memory", {dir.file("manifest")},
                                      {{"FAKE_CUDA_MEM_BYTES", std::to_string(256 << 20)}, {"NB_LOG", "debug"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  CHECK(r.run.err.find("native stacks through /") != std::string::npos);
  CHECK(r.run.err.find("/nb-libs/libunwind.so.8\n") != std::string::npos);
  CHECK(r.run.err.find("/nb-libs/libdw.so.1\n") != std::string::npos);
}

TEST_CASE("stacks: NB_STACKS=none records no frames", "[integration][memory][stacks]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "memory", {dir.file("manifest")},
                                      {{"FAKE_CUDA_MEM_BYTES", std::to_string(256 << 20)}, {"NB_STACKS", "none"}});
  REQUIRE(r.run.exit_code == 0);
  for (const auto& e : r.snapshot["device_traces"][0]) CHECK(e["frames"].empty());
  CHECK(r.table.find("Stacks taken") == std::string::npos);
}

TEST_CASE("snapshot invariants: blocks tile segments; the trace replays back to an empty device", "[integration][memory]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "memory", {dir.file("manifest")},
                                      {{"FAKE_CUDA_MEM_BYTES", std::to_string(256 << 20)}});
  REQUIRE(r.run.exit_code == 0);
  // Blocks tile their segment: contiguous, from its start, summing to its size.
  std::map<unsigned long long, unsigned long long> live;  // segment address → size
  for (const auto& seg : r.snapshot["segments"]) {
    unsigned long long at = seg["address"], total = 0;
    for (const auto& b : seg["blocks"]) {
      CHECK(b["address"] == at);
      at += b["size"].get<unsigned long long>();
      total += b["size"].get<unsigned long long>();
    }
    CHECK(total == seg["total_size"]);
    live[seg["address"]] = seg["total_size"];
  }
  // Backwards from the final state, MemoryViz's way: every segment_alloc /
  // segment_map finds its segment live, every segment_free / unmap finds it
  // gone; alloc / free_completed happen inside a live segment.
  const auto& trace = r.snapshot["device_traces"][0];
  for (auto it = trace.rbegin(); it != trace.rend(); ++it) {
    const std::string a = (*it)["action"];
    if (a == "oom") continue;
    const unsigned long long addr = (*it)["addr"], size = (*it)["size"];
    INFO(a << " at " << addr);
    if (a == "segment_free" || a == "segment_unmap") {
      CHECK(live.count(addr) == 0);
      live[addr] = size;
    } else if (a == "segment_alloc" || a == "segment_map") {
      REQUIRE(live.count(addr) == 1);
      CHECK(live[addr] == size);
      live.erase(addr);
    } else {
      CHECK(live.count(addr) == 1);  // alloc, free_requested, free_completed: inside a live segment
    }
  }
  CHECK(live.empty());
}

TEST_CASE("trace: device memory counters follow allocations and frees", "[integration][memory]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "memory", {dir.file("manifest")},
                                      {{"FAKE_CUDA_MEM_BYTES", std::to_string(256 << 20)}});
  REQUIRE(r.run.exit_code == 0);
  std::vector<nlohmann::json> counters;
  for (const auto& e : r.trace["traceEvents"]) {
    if (e["ph"] == "C") counters.push_back(e);
  }
  // One point per allocation, free, map and unmap (the OOM changes nothing).
  const auto m = nbtest::read_manifest(dir.file("manifest"));
  REQUIRE(counters.size() == m.allocs.size() + m.frees.size() + 2);
  double peak = 0, prev_ts = -1;
  for (const auto& c : counters) {
    CHECK(c["pid"] == 0);  // GPU 0's process, beside its streams
    CHECK(c["args"]["reserved"].get<double>() >= c["args"]["allocated"].get<double>());
    CHECK(c["ts"].get<double>() >= prev_ts);
    prev_ts = c["ts"];
    peak = std::max(peak, c["args"]["allocated"].get<double>());
  }
  CHECK(counters.back()["args"]["allocated"] == (3 << 20));  // the leak
  // The stream-ordered 64 KiB allocation: its pool (the fake's, like
  // CUDA's) holds a 2 MiB chunk for it, which "reserved" shows.
  bool pool_gap = false;
  for (const auto& c : counters) {
    const double gap = c["args"]["reserved"].get<double>() - c["args"]["allocated"].get<double>();
    if (gap == (2 << 20) - 65536) pool_gap = true;
  }
  CHECK(pool_gap);
  CHECK(peak == 9441536);  // the table's peak for this program
}

TEST_CASE("stacks: NB_STACKS=all puts each call's stack on its trace event", "[integration][memory][stacks]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "memory", {dir.file("manifest")},
                                      {{"FAKE_CUDA_MEM_BYTES", std::to_string(256 << 20)}, {"NB_STACKS", "all"}});
  REQUIRE(r.run.exit_code == 0);
  const int leak_line = source_line("memory.cpp", "CHECK_CU(cudaMalloc(&g_leak");
  size_t with_stack = 0, calls = 0;
  bool leak_seen = false;
  const auto stacks = nbtest::stack_texts(r.trace);
  for (const auto& e : nbtest::host_calls(r.trace)) {
    ++calls;
    if (!e["args"].contains("stack")) continue;
    ++with_stack;
    // Each stack is written once; events refer to it by id.
    REQUIRE(stacks.count(e["args"]["stack"].get<uint64_t>()));
    const std::string s = stacks.at(e["args"]["stack"].get<uint64_t>());
    if (s.find("memory.cpp:" + std::to_string(leak_line) + ")") != std::string::npos) leak_seen = true;
  }
  CHECK(calls > 0);
  CHECK(with_stack == calls);
  CHECK(leak_seen);
  // The footer says what the stacks cost: one per call, about one in nine
  // of them timed (gaps of 1 to 15).
  INFO(r.table);
  CHECK(r.table.find("Stacks taken on the calling threads in the run so far: " + std::to_string(calls) + ", ") != std::string::npos);
  const std::string timed_key = "; timed ";
  const size_t at = r.table.find(timed_key);
  REQUIRE(at != std::string::npos);
  const size_t timed = std::stoul(r.table.substr(at + timed_key.size()));
  CHECK(timed * 16 >= calls);
  CHECK(timed * 2 <= calls);
}

namespace {
// Runs test/programs/py_alloc.py under the shim on the fake runtime.
nbtest::Recorded run_python_alloc(const nbtest::TempDir& dir, const std::vector<std::string>& args) {
  nbtest::Recorded r;
  std::vector<std::string> argv = {NB_PYTHON3, std::string(NB_SOURCE_DIR) + "/test/programs/py_alloc.py"};
  argv.insert(argv.end(), args.begin(), args.end());
  r.run = nbtest::run(argv, nbtest::shim_env(dir.file("out")), dir.path());
  if (nbtest::file_exists(dir.file("out.memory.pickle"))) r.snapshot = nbtest::nbread("snapshot", dir.file("out.memory.pickle"));
  return r;
}

// The stack of the live segment of `size` bytes.
nlohmann::json frames_of_segment(const nlohmann::json& snapshot, unsigned long long size) {
  for (const auto& seg : snapshot["segments"]) {
    if (seg["total_size"] == size) return seg["blocks"][0]["frames"];
  }
  return nlohmann::json::array();
}
}  // namespace

TEST_CASE("stacks: Python frames of a thread holding the GIL, among the native ones", "[integration][memory][stacks][python]") {
  nbtest::TempDir dir;
  const auto r = run_python_alloc(dir, {});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  const auto frames = frames_of_segment(r.snapshot, 5 << 20);
  INFO(frames.dump(1));
  const std::string script = "py_alloc.py";
  const int alloc = source_line(script, "# @alloc"), step = source_line(script, "# @step"),
            main_line = source_line(script, "# @main_gil");
  REQUIRE(alloc > 0);
  // Innermost first: the Python caller of cudaMalloc, its caller, the module.
  CHECK(has_frame(frames, script, alloc, "allocate"));
  CHECK(has_frame(frames, script, step, "model_step"));
  CHECK(has_frame(frames, script, main_line, "<module>"));
  // Interleaved: native frames (ctypes, libffi) come before the first
  // Python frame, and none of the interpreter's evaluation frames remain.
  size_t first_python = frames.size();
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::string f = frames[i]["filename"];
    if (f.size() > 3 && f.compare(f.size() - 3, 3, ".py") == 0) {
      first_python = i;
      break;
    }
  }
  CHECK(first_python > 0);
  CHECK(first_python < frames.size());
  for (const auto& f : frames) CHECK(f["name"] != "_PyEval_EvalFrameDefault");
}

TEST_CASE("stacks: Python frames of a thread that released the GIL, as PyTorch's operators do", "[integration][memory][stacks][python]") {
  nbtest::TempDir dir;
  const auto r = run_python_alloc(dir, {"nogil"});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  const auto frames = frames_of_segment(r.snapshot, 7 << 20);  // the ctypes.CDLL allocation
  INFO(frames.dump(1));
  const std::string script = "py_alloc.py";
  CHECK(has_frame(frames, script, source_line(script, "# @alloc"), "allocate"));
  CHECK(has_frame(frames, script, source_line(script, "# @step"), "model_step"));
  CHECK(has_frame(frames, script, source_line(script, "# @main_nogil"), "<module>"));
  for (const auto& f : frames) CHECK(f["name"] != "_PyEval_EvalFrameDefault");
}

// The snapshot is the state at the program's end: for a Python program, when
// its interpreter begins finalizing; what teardown frees after that is
// counted and marked in the trace, and the history stops at the end, so that
// MemoryViz's backward replay from the segments stays consistent.
TEST_CASE("the program's end: a Python leak is live in the snapshot, teardown frees are counted", "[integration][memory][python]") {
  nbtest::TempDir dir;
  auto env = nbtest::shim_env(dir.file("out"));
  env["NB_PRINT_TABLE"] = "0";
  const std::string script = std::string(NB_SOURCE_DIR) + "/test/programs/py_teardown.py";
  const auto run = nbtest::run({NB_PYTHON3, script}, env, dir.path());
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto snapshot = nbtest::nbread("snapshot", dir.file("out.memory.pickle"));
  const int leak_line = [&] {
    std::istringstream lines(nbtest::read_file(script));
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      if (line.find("# @leak") != std::string::npos) return n;
    }
    return 0;
  }();
  REQUIRE(leak_line > 0);
  int leaked = 0;
  for (const auto& seg : snapshot["segments"]) {
    bool from_leak = false;
    for (const auto& f : seg["blocks"][0]["frames"]) {
      from_leak |= f["filename"].get<std::string>().find("py_teardown.py") != std::string::npos && f["line"] == leak_line;
    }
    leaked += seg["total_size"] == (2 << 20) && from_leak;
  }
  CHECK(leaked == 24);
  CHECK(snapshot["segments"].size() == 24);
  // No history entry after the end: every free in it is one of the scratch buffers.
  int frees = 0;
  for (const auto& e : snapshot["device_traces"][0]) frees += e["action"] == "free_completed";
  CHECK(frees == 24);
  const std::string table = nbtest::read_file(dir.file("out.table.txt"));
  CHECK(table.find("live at end 50331648 B") != std::string::npos);
  CHECK(table.find("Freed during teardown (after the program's end, not in \"live at end\"): 24 allocations, 50331648 B") !=
        std::string::npos);
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  int teardown_calls = 0;
  for (const auto& e : trace["traceEvents"]) teardown_calls += e.contains("args") && e["args"].value("teardown", 0) == 1;
  CHECK(teardown_calls == 24);
  CHECK(trace["nbRun"]["teardown"]["frees"] == 24);
  CHECK(!trace["nbRun"]["programEnd"].is_null());
}

TEST_CASE("the program's end: for a native program, when main returns, before the atexit handlers", "[integration][memory]") {
  nbtest::TempDir dir;
  const auto r = nbtest::run_recorded(dir, "hostile", {"atexit_free"}, {{"NB_PRINT_TABLE", "0"}});
  INFO(r.run.err);
  REQUIRE(r.run.exit_code == 0);
  // The 3 MiB buffer the handler frees was live at the end.
  bool kept = false;
  for (const auto& seg : r.snapshot["segments"]) kept |= seg["total_size"] == (3 << 20);
  CHECK(kept);
  CHECK(r.table.find("Freed during teardown (after the program's end, not in \"live at end\"): 1 allocations, 3145728 B") !=
        std::string::npos);
}
