// The program's regions as rows of the table (NVTX ranges by where they
// nest, nb's steps): calls, host and device time, total and self, adding up
// (a parent's total = its self + its children's totals), in a whole run's
// table and in a window's, and the same again from `nbprof stats`.
// test/programs/regions.cpp makes them.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>

#include <map>
#include <string>

#include "outputs.h"
#include "test_support.h"

namespace {

struct Region {
  uint64_t calls = 0, host_total = 0, host_self = 0, device_total = 0, device_self = 0;
};

// nbTable's regions, by path joined with '/'.
std::map<std::string, Region> regions_of(const nlohmann::json& trace) {
  std::map<std::string, Region> out;
  for (const auto& r : trace["nbTable"].value("regions", nlohmann::json::array())) {
    std::string key;
    for (const auto& p : r["path"]) key += (key.empty() ? "" : "/") + p.get<std::string>();
    out[key] = Region{r["calls"].get<uint64_t>(), r["hostTotalNs"].get<uint64_t>(), r["hostSelfNs"].get<uint64_t>(),
                      r["deviceTotalNs"].get<uint64_t>(), r["deviceSelfNs"].get<uint64_t>()};
  }
  return out;
}

// Events of category `cat` named `name`: how many, and their durations
// summed (ns, from the trace's µs with three decimals).
struct Spans {
  uint64_t count = 0, ns = 0;
};
Spans spans(const nlohmann::json& trace, const std::string& cat, const std::string& name) {
  Spans s;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != cat || e.value("name", "") != name) continue;
    ++s.count;
    s.ns += static_cast<uint64_t>(e["dur"].get<double>() * 1000.0 + 0.5);
  }
  return s;
}

// The table's sum and the timeline's spans agree to a few ns a span and
// the clock's rate: each converts ticks to ns on its own, the timeline as
// the run goes (the rate refined pass by pass), the table at the end.
bool near(uint64_t a, uint64_t b, uint64_t spans) {
  const uint64_t diff = a > b ? a - b : b - a;
  return diff <= 2 * spans + 2 + std::max(a, b) / 100;
}

nbtest::RunResult run_regions(const nbtest::TempDir& dir, const std::vector<std::string>& args,
                              const std::map<std::string, std::string>& env = {}) {
  auto e = nbtest::shim_env(dir.file("out"));
  e["NB_PRINT_TABLE"] = "0";
  for (const auto& [k, v] : env) e[k] = v;
  std::vector<std::string> argv{nbtest::program("regions")};
  argv.insert(argv.end(), args.begin(), args.end());
  return nbtest::run(argv, e, dir.path(), 60);
}

// The Regions block of a table's text.
std::string regions_block(const std::string& table) {
  const size_t at = table.find("Regions (NVTX ranges");
  return at == std::string::npos ? std::string() : table.substr(at, table.find("\n---", table.find("\n---", table.find("\n---", at) + 1) + 1) - at);
}

}  // namespace

TEST_CASE("regions: an NVTX range around 21 launches a step is a row with its calls, host and device time", "[regions]") {
  nbtest::TempDir dir;
  const auto r = run_regions(dir, {"6"});
  REQUIRE(r.exit_code == 0);
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  const auto regions = regions_of(trace);
  REQUIRE(regions.count("decode_step") == 1);
  const Region& g = regions.at("decode_step");
  CHECK(g.calls == 6);
  // Its host time is its spans on the timeline; it holds no range: self = total.
  const Spans host = spans(trace, "user_annotation", "decode_step");
  CHECK(host.count == 6);
  INFO("table " << g.host_total << " ns, timeline " << host.ns << " ns");
  CHECK(near(g.host_total, host.ns, host.count));
  CHECK(g.host_self == g.host_total);
  // Its device time is all of its 126 launches' kernels, launched directly in it.
  const Spans layer = spans(trace, "kernel", "layer");
  CHECK(layer.count == 126);
  CHECK(layer.ns > 0);
  CHECK(g.device_total == layer.ns);
  CHECK(g.device_self == layer.ns);
  const std::string table = nbtest::read_file(dir.file("out.table.txt"));
  CHECK(regions_block(table).find("\ndecode_step ") != std::string::npos);
  // nbprof stats prints the same block from the trace.
  const auto again = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out"), "--rows", "0"});
  CHECK(regions_block(again.out) == regions_block(table));
}

TEST_CASE("regions: nested ranges add up, total = self + children, in the whole run and in a window", "[regions]") {
  const auto check_nested = [](const nlohmann::json& trace, uint64_t steps) {
    const auto regions = regions_of(trace);
    REQUIRE(regions.count("outer") == 1);
    REQUIRE(regions.count("outer/inner") == 1);
    const Region& outer = regions.at("outer");
    const Region& inner = regions.at("outer/inner");
    CHECK(outer.calls == steps);
    CHECK(inner.calls == steps);
    // Device: "a" is launched in outer itself, "b" in inner.
    const Spans a = spans(trace, "kernel", "a"), b = spans(trace, "kernel", "b");
    CHECK(a.count == 5 * steps);
    CHECK(b.count == 5 * steps);
    CHECK(outer.device_self == a.ns);
    CHECK(inner.device_self == b.ns);
    CHECK(inner.device_total == b.ns);
    CHECK(outer.device_total == outer.device_self + inner.device_total);
    // Host: each the sum of its own spans; the parent's self is what its
    // spans hold beyond its child's.
    const Spans outer_spans = spans(trace, "user_annotation", "outer"), inner_spans = spans(trace, "user_annotation", "inner");
    CHECK(near(outer.host_total, outer_spans.ns, steps));
    CHECK(near(inner.host_total, inner_spans.ns, steps));
    CHECK(inner.host_self == inner.host_total);
    CHECK(outer.host_total == outer.host_self + inner.host_total);
    CHECK(outer.host_self > 0);
  };
  SECTION("whole run") {
    nbtest::TempDir dir;
    REQUIRE(run_regions(dir, {"8", "nested"}).exit_code == 0);
    const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
    check_nested(trace, 8);
    // The table shows the tree: inner under outer, indented.
    const std::string block = regions_block(nbtest::read_file(dir.file("out.table.txt")));
    const size_t outer_at = block.find("\nouter "), inner_at = block.find("\n  inner ");
    CHECK(outer_at != std::string::npos);
    CHECK(inner_at != std::string::npos);
    CHECK(outer_at < inner_at);
  }
  SECTION("a window of 3 steps, cut at each end of \"outer\"") {
    nbtest::TempDir dir;
    REQUIRE(run_regions(dir, {"8", "nested"}, {{"NB_STEP", "nvtx:outer"}, {"NB_WAIT", "2"}, {"NB_ACTIVE", "3"}}).exit_code == 0);
    const auto trace = nbtest::nbread("trace", dir.file("out.w1.trace.json.gz"));
    check_nested(trace, 3);
    // nb's steps are a row of their own: every step's span and its work.
    const auto regions = regions_of(trace);
    REQUIRE(regions.count("ProfilerStep") == 1);
    const Region& steps = regions.at("ProfilerStep");
    CHECK(steps.calls == 3);
    CHECK(steps.device_total == regions.at("outer").device_total);
    CHECK(steps.host_total >= regions.at("outer").host_total);
    const auto again = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out.w1"), "--rows", "0"});
    CHECK(regions_block(again.out) == regions_block(nbtest::read_file(dir.file("out.w1.table.txt"))));
  }
}

TEST_CASE("folded stacks: with launch stacks, device time by the launching stack, summing to the table's", "[regions]") {
  nbtest::TempDir dir;
  REQUIRE(run_regions(dir, {"4", "nested"}, {{"NB_STACKS", "launch"}}).exit_code == 0);
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  const std::string folded = nbtest::read_file(dir.file("out.device.folded"));
  // name of the leaf → weight, and every line names the program's own source.
  std::map<std::string, uint64_t> by_leaf;
  uint64_t sum = 0;
  size_t at = 0;
  while (at < folded.size()) {
    const size_t end = folded.find('\n', at);
    REQUIRE(end != std::string::npos);
    const std::string line = folded.substr(at, end - at);
    at = end + 1;
    const size_t space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    const uint64_t w = std::stoull(line.substr(space + 1));
    const std::string stack = line.substr(0, space);
    by_leaf[stack.substr(stack.rfind(';') + 1)] += w;
    sum += w;
    CHECK(stack.find("regions.cpp:") != std::string::npos);
  }
  CHECK(by_leaf["a"] == spans(trace, "kernel", "a").ns);
  CHECK(by_leaf["b"] == spans(trace, "kernel", "b").ns);
  uint64_t device = 0;
  for (const auto& row : trace["nbTable"]["rows"]) device += row["deviceTotalNs"].get<uint64_t>();
  CHECK(sum == device);
  // The host one has the launches under their stacks, the rest under "[no stack]".
  const std::string host = nbtest::read_file(dir.file("out.host.folded"));
  CHECK(host.find(";cudaLaunchKernel ") != std::string::npos);
  CHECK(host.find("[no stack];cudaDeviceSynchronize ") != std::string::npos);
  // nbprof stats --folded writes the same two files from the trace alone.
  REQUIRE(::unlink(dir.file("out.device.folded").c_str()) == 0);
  REQUIRE(::unlink(dir.file("out.host.folded").c_str()) == 0);
  const auto again = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out.trace.json.gz"), "--folded"});
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(nbtest::read_file(dir.file("out.device.folded")) == folded);
  CHECK(nbtest::read_file(dir.file("out.host.folded")) == host);
  // Without launch stacks there is nothing to draw: no folded files, and
  // nbprof stats --folded says why.
  nbtest::TempDir plain;
  REQUIRE(run_regions(plain, {"2"}).exit_code == 0);
  CHECK_FALSE(nbtest::file_exists(plain.file("out.device.folded")));
  CHECK_FALSE(nbtest::file_exists(plain.file("out.host.folded")));
  const auto none = nbtest::run({NB_NBPROF_PATH, "stats", plain.file("out"), "--folded"});
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no folded stacks") != std::string::npos);
  CHECK_FALSE(nbtest::file_exists(plain.file("out.device.folded")));
}

namespace {
// The line of `marker` in test/programs/`file` (1-based), 0 if absent.
int marked_line(const std::string& file, const std::string& marker) {
  const std::string text = nbtest::read_file(std::string(NB_SOURCE_DIR) + "/test/programs/" + file);
  int n = 1;
  size_t at = 0;
  for (;;) {
    const size_t end = text.find('\n', at);
    if (text.substr(at, end == std::string::npos ? std::string::npos : end - at).find(marker) != std::string::npos) return n;
    if (end == std::string::npos) return 0;
    at = end + 1;
    ++n;
  }
}
}  // namespace

TEST_CASE("source lines: Python lines that launch, by the device time of their work, self and total", "[regions][python]") {
  nbtest::TempDir dir;
  auto env = nbtest::shim_env(dir.file("out"));
  env["NB_STACKS"] = "launch";
  env["NB_PRINT_TABLE"] = "0";
  const auto run =
      nbtest::run({NB_PYTHON3, std::string(NB_SOURCE_DIR) + "/test/programs/py_launch.py", "10"}, env, dir.path(), 60);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  const std::string script = "py_launch.py";
  const int attention = marked_line(script, "# @attention"), mlp = marked_line(script, "# @mlp"),
            step_attention = marked_line(script, "# @step_attention");
  REQUIRE(attention > 0);
  std::map<std::string, nlohmann::json> by_location;
  for (const auto& r : trace["nbTable"]["sources"]) by_location[r["location"].get<std::string>()] = r;
  const auto find = [&](int line, const std::string& function) -> nlohmann::json {
    const std::string tail = script + ":" + std::to_string(line) + " " + function;
    for (const auto& [loc, r] : by_location) {
      if (loc.size() >= tail.size() && loc.compare(loc.size() - tail.size(), tail.size(), tail) == 0) return r;
    }
    return nullptr;
  };
  const auto a = find(attention, "attention"), m = find(mlp, "mlp"), s = find(step_attention, "step");
  REQUIRE(!a.is_null());
  REQUIRE(!m.is_null());
  REQUIRE(!s.is_null());
  // 30 launches from attention's line, 10 from mlp's: their device time in
  // that ratio, all of it self; the caller's line holds attention's as total.
  CHECK(a["calls"] == 30);
  CHECK(m["calls"] == 10);
  const uint64_t kernel_ns = spans(trace, "kernel", "py_kernel").ns;
  CHECK(a["deviceSelfNs"].get<uint64_t>() + m["deviceSelfNs"].get<uint64_t>() == kernel_ns);
  CHECK(a["deviceSelfNs"].get<uint64_t>() == 3 * m["deviceSelfNs"].get<uint64_t>());
  CHECK(a["deviceTotalNs"] == a["deviceSelfNs"]);
  CHECK(s["deviceSelfNs"] == 0);
  CHECK(s["deviceTotalNs"] == a["deviceSelfNs"]);
  // The same table beside the run and from nbprof stats --by source.
  const std::string file = nbtest::read_file(dir.file("out.source.txt"));
  CHECK(file.find(script + ":" + std::to_string(attention) + " attention") != std::string::npos);
  const auto again = nbtest::run({NB_NBPROF_PATH, "stats", dir.file("out"), "--by", "source"});
  CHECK(again.exit_code == 0);
  CHECK(again.out == file);
  // The folded file's weights sum to the table's device time.
  const std::string folded = nbtest::read_file(dir.file("out.device.folded"));
  uint64_t sum = 0;
  for (size_t at = 0; at < folded.size();) {
    const size_t end = folded.find('\n', at);
    const std::string line = folded.substr(at, end - at);
    sum += std::stoull(line.substr(line.rfind(' ') + 1));
    at = end + 1;
  }
  CHECK(sum == kernel_ns);
}

TEST_CASE("regions: a range of a named NVTX domain is its row as domain:name, nested where it was pushed", "[regions]") {
  // nvtx_steps: "step" (global domain) holds "inner" of domain "nb.test",
  // which launches; a process range "run" around all.
  nbtest::TempDir dir;
  auto e = nbtest::shim_env(dir.file("out"));
  e["NB_PRINT_TABLE"] = "0";
  REQUIRE(nbtest::run({nbtest::program("nvtx_steps"), "5"}, e, dir.path(), 60).exit_code == 0);
  const auto trace = nbtest::nbread("trace", dir.file("out.trace.json.gz"));
  const auto regions = regions_of(trace);
  REQUIRE(regions.count("step/nb.test:inner") == 1);
  const Region& inner = regions.at("step/nb.test:inner");
  CHECK(inner.calls == 5);
  CHECK(inner.device_self == spans(trace, "kernel", "step_kernel").ns);
  CHECK(regions.at("step").device_total == inner.device_total);
  CHECK(regions.at("step").device_self == 0);
  // The timeline keeps the range's own name.
  CHECK(spans(trace, "user_annotation", "inner").count == 5);
  // A process range: host time only.
  REQUIRE(regions.count("run") == 1);
  CHECK(regions.at("run").calls == 1);
  CHECK(regions.at("run").host_total > 0);
}
