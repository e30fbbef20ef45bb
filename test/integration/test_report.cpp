// nbprof report on real runs: test/programs/mem_patterns.py (ctypes) and
// mem_patterns.c (native), each in its three modes, recorded under the shim
// on the fake CUDA stack with a step per cudaDeviceSynchronize; the report's
// --json must give the verdict each program was written to show, name the
// line that holds the memory, and state the numbers behind it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>

#include "test_support.h"

namespace {

constexpr unsigned long long kMiB = 1ull << 20;

struct Program {
  std::string file;  // under test/programs
  bool python;
};
const Program kPython{"mem_patterns.py", true};
const Program kNative{"mem_patterns.c", false};

// The line of `file` (under test/programs) marked with `marker`.
int marked_line(const std::string& file, const std::string& marker) {
  std::ifstream f(std::string(NB_SOURCE_DIR) + "/test/programs/" + file);
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.find(marker) != std::string::npos) return n;
  }
  return 0;
}

struct Reported {
  nbtest::RunResult run, report;
  nlohmann::json json;  // the report's --json; null if it did not parse
  std::string prefix;
};

// Records `mode` of the program (a step per cudaDeviceSynchronize, a 64 MiB
// device) and runs `nbprof report` on it with `args`.
Reported record_and_report(const nbtest::TempDir& dir, const Program& p, const std::string& mode,
                           const std::vector<std::string>& args = {"--json"}) {
  Reported r;
  r.prefix = dir.file("out");
  auto env = nbtest::shim_env(r.prefix);
  env["NB_STEP"] = "sync";
  env["NB_PRINT_TABLE"] = "0";
  env["FAKE_CUDA_MEM_BYTES"] = std::to_string(64 * kMiB);
  const std::vector<std::string> argv =
      p.python ? std::vector<std::string>{NB_PYTHON3, std::string(NB_SOURCE_DIR) + "/test/programs/" + p.file, mode}
               : std::vector<std::string>{nbtest::program("mem_patterns"), mode};
  r.run = nbtest::run(argv, env, dir.path());
  std::vector<std::string> report{NB_NBPROF_PATH, "report", r.prefix};
  report.insert(report.end(), args.begin(), args.end());
  r.report = nbtest::run(report, {{"-LD_PRELOAD", ""}}, dir.path(), 120);
  if (std::find(args.begin(), args.end(), "--json") != args.end()) {
    r.json = nlohmann::json::parse(r.report.out, nullptr, false);
    if (r.json.is_discarded()) r.json = nullptr;
  }
  return r;
}

// "file:line" as the report names a frame.
std::string where(const Program& p, const std::string& marker) {
  return p.file + ":" + std::to_string(marked_line(p.file, marker));
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The picture came out beside the run: a PNG.
void check_picture(const nlohmann::json& j, const std::string& prefix) {
  INFO(j["picture"].dump());
  REQUIRE(j["picture"]["path"].is_string());
  CHECK(j["picture"]["path"] == prefix + ".memory.png");
  CHECK(nbtest::read_file(prefix + ".memory.png").rfind("\x89PNG\r\n\x1a\n", 0) == 0);
}

void check_leak(const Program& p) {
  nbtest::TempDir dir;
  const auto r = record_and_report(dir, p, "leak");
  INFO(r.run.err << r.report.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.report.exit_code == 0);
  REQUIRE(!r.json.is_null());
  const auto& dev = r.json["devices"][0];
  const auto& leak = dev["verdicts"]["leak"];
  INFO(leak.dump(1));
  CHECK(leak["found"] == true);
  CHECK(leak["bytes_per_step"] == 1 * kMiB);
  REQUIRE(!leak["stacks"].empty());
  const auto& top = leak["stacks"][0];
  const std::string leak_line = where(p, "@leak");
  CHECK(top["where"] == leak_line);
  CHECK(top["share"].get<double>() > 0.95);
  CHECK(top["bytes_per_step"] == 1 * kMiB);
  if (p.python) {
    CHECK(ends_with(top["top_python"]["file"], "/" + p.file));
  } else {
    CHECK(top["top_python"].is_null());
    CHECK(top["top_native"]["function"] == "leak_step");
  }
  CHECK(dev["verdicts"]["sawtooth"]["found"] == false);
  CHECK(dev["verdicts"]["fragmentation"]["found"] == false);
  CHECK(r.json["steps"]["count"] == 8);
  // The program's end, not what teardown left: the weights and the eight
  // kept buffers are live there, and their frees are counted as teardown.
  INFO(dev["end"].dump(1));
  CHECK(dev["end"]["live_bytes"] == 16 * kMiB);
  bool kept_at_end = false;
  for (const auto& g : dev["end"]["live"]) kept_at_end |= g["where"] == leak_line && g["bytes"] == 8 * kMiB;
  CHECK(kept_at_end);
  CHECK(top["live_at_end_bytes"] == 8 * kMiB);
  CHECK(dev["teardown"]["frees"] == 9);
  CHECK(dev["teardown"]["bytes"] == 16 * kMiB);
  CHECK(r.json["program_end_us"].is_number());
  CHECK(dev["peak"]["bytes"] == 20 * kMiB);
  check_picture(r.json, r.prefix);
}

void check_sawtooth(const Program& p) {
  nbtest::TempDir dir;
  const auto r = record_and_report(dir, p, "sawtooth");
  INFO(r.run.err << r.report.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.report.exit_code == 0);
  REQUIRE(!r.json.is_null());
  const auto& v = r.json["devices"][0]["verdicts"];
  INFO(v.dump(1));
  CHECK(v["sawtooth"]["found"] == true);
  CHECK(v["sawtooth"]["every_step"] == true);
  CHECK(v["sawtooth"]["baseline_bytes"] == 8 * kMiB);
  CHECK(v["sawtooth"]["rise_bytes"] == 15 * kMiB);  // 4 + 5 + 6 MiB
  CHECK(v["leak"]["found"] == false);
  CHECK(v["fragmentation"]["found"] == false);
  const auto& peak = r.json["devices"][0]["peak"];
  CHECK(peak["bytes"] == 23 * kMiB);
  CHECK(peak["stacks"][0]["where"] == where(p, "@sawtooth"));
  CHECK(peak["stacks"][0]["bytes"] == 15 * kMiB);
}

void check_fragmentation(const Program& p) {
  nbtest::TempDir dir;
  const auto r = record_and_report(dir, p, "fragmentation");
  INFO(r.run.err << r.report.err);
  REQUIRE(r.run.exit_code == 0);
  REQUIRE(r.report.exit_code == 0);
  REQUIRE(!r.json.is_null());
  const auto& f = r.json["devices"][0]["verdicts"]["fragmentation"];
  INFO(f.dump(1));
  CHECK(f["found"] == true);
  REQUIRE(f["ooms"].size() == 1);
  const auto& oom = f["ooms"][0];
  CHECK(oom["request_bytes"] == 60 * kMiB);
  CHECK(oom["device_free_bytes"] == 56 * kMiB);  // 64 MiB less the 8 MiB of weights
  CHECK(oom["pool_unused_bytes"] == 24 * kMiB);  // the pool keeps the steps' six 4 MiB blocks
  CHECK(oom["explained"] == true);
  CHECK(oom["largest_free_block_bytes"].is_null());  // nb sees no pool's layout
  CHECK(oom["where"] == where(p, "@oom"));
  // At the end the weights are live and the pool still holds its 24 MiB.
  CHECK(f["at_end"]["gap_bytes"] == 24 * kMiB);
  CHECK(f["at_end"]["allocated_bytes"] == 8 * kMiB);
  CHECK(r.json["devices"][0]["verdicts"]["leak"]["found"] == false);
}

}  // namespace

TEST_CASE("report: a Python program that keeps a buffer per step in a global list is a leak, named by its line",
          "[integration][report][python]") {
  check_leak(kPython);
}

TEST_CASE("report: a native program that keeps a buffer per step is a leak, named by its line",
          "[integration][report]") {
  check_leak(kNative);
}

TEST_CASE("report: a Python program that frees what each step allocated is a sawtooth, no leak",
          "[integration][report][python]") {
  check_sawtooth(kPython);
}

TEST_CASE("report: a native program that frees what each step allocated is a sawtooth, no leak",
          "[integration][report]") {
  check_sawtooth(kNative);
}

TEST_CASE("report: a Python program whose pool keeps freed memory, then an OOM, is fragmentation",
          "[integration][report][python]") {
  check_fragmentation(kPython);
}

TEST_CASE("report: a native program whose pool keeps freed memory, then an OOM, is fragmentation",
          "[integration][report]") {
  check_fragmentation(kNative);
}

TEST_CASE("report: the text names the verdicts and the picture; --out puts the picture elsewhere",
          "[integration][report]") {
  nbtest::TempDir dir;
  const auto r = record_and_report(dir, kNative, "leak", {"--out", dir.file("pic.png")});
  INFO(r.run.err << r.report.err);
  REQUIRE(r.report.exit_code == 0);
  const std::string& text = r.report.out;
  INFO(text);
  CHECK(text.find("leak: YES") != std::string::npos);
  CHECK(text.find("+1.0 MiB per step") != std::string::npos);
  CHECK(text.find("leak_step (" + where(kNative, "@leak") + ")") != std::string::npos);
  CHECK(text.find("sawtooth: no") != std::string::npos);
  CHECK(text.find("fragmentation: no") != std::string::npos);
  CHECK(text.find("Picture: " + dir.file("pic.png") + "\n") != std::string::npos);
  CHECK(nbtest::file_exists(dir.file("pic.png")));
  CHECK_FALSE(nbtest::file_exists(dir.file("out.memory.png")));
}

TEST_CASE("report: a run that is not there, or no run named, is one line and status 2", "[integration][report]") {
  nbtest::TempDir dir;
  const auto none = nbtest::run({NB_NBPROF_PATH, "report"});
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("nbprof report: which run?") == 0);
  const auto missing = nbtest::run({NB_NBPROF_PATH, "report", dir.file("nothere")});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err == "nbprof report: no run at " + dir.file("nothere") + " (no " + dir.file("nothere") +
                           ".memory.pickle or " + dir.file("nothere") + ".trace.json.gz)\n");
  const auto bad = nbtest::run({NB_NBPROF_PATH, "report", dir.file("x"), "--colour"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("nbprof report: unknown option --colour") == 0);
}
