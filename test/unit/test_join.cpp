// Joining host and device records in the trace builder (no CUDA involved).
#include <catch2/catch.hpp>

#include <map>

#include "collector/builders.h"
#include "core/api.h"

using namespace nb;

namespace {

Record host(uint64_t id, uint16_t api, uint64_t start, uint64_t end, uint32_t first, uint32_t last) {
  Record r{};
  r.id = id;
  r.api = api;
  r.kind = api_info(api).kind;
  r.tid = 42;
  r.start = start;
  r.end = end;
  r.corr_first = first;
  r.corr_last = last;
  r.device = 0;
  return r;
}

DeviceRecord kernel(uint32_t corr, uint32_t stream, uint64_t start, uint64_t end, uint32_t name) {
  DeviceRecord d;
  d.kind = DeviceKind::Kernel;
  d.correlation = corr;
  d.stream = stream;
  d.start = start;
  d.end = end;
  d.name = name;
  return d;
}

constexpr int64_t kEpoch = 1700000000000000000;

OutputContext context(CuptiJoin join) {
  OutputContext ctx;
  ctx.pid = 1000;
  ctx.program = "t";
  ctx.time = TimeMap::offset_only(kEpoch);
  ctx.join_mode = join;
  ctx.device_traced = true;
  ctx.kernel_names = {"", "kernelA", "kernelB"};
  return ctx;
}

// What the timeline streams, kept (the builder's text views are literals).
struct Collected final : EventSink {
  std::vector<formats::Event> events;
  std::vector<formats::Flow> flows;
  std::vector<formats::Counter> counters;
  void event(const formats::Event& e) override { events.push_back(e); }
  void flow(const formats::Flow& f) override { flows.push_back(f); }
  void counter(const formats::Counter& c) override { counters.push_back(c); }
};

// A Session whose timeline goes to `sink`, with the names of context().
struct Rig {
  explicit Rig(CuptiJoin join, uint64_t hold_ns = 2000000000)
      : names(nullptr, {"", "kernelA", "kernelB"}), s(SessionLimits{}, &sink, setup(join, hold_ns), &names) {
    s.advance(TimeMap::offset_only(kEpoch), 0);
  }
  static TraceSetup setup(CuptiJoin join, uint64_t hold_ns) {
    TraceSetup t;
    t.pid = 1000;
    t.device_traced = true;
    t.join_mode = join;
    t.hold_ns = hold_ns;
    return t;
  }
  const JoinStats& finish() {
    s.finish_timeline();
    return s.timeline()->stats();
  }
  const std::string& name(uint32_t i) const { return (*names.all())[i]; }
  Collected sink;
  TraceNames names;
  Session s;
};

std::map<uint64_t, std::vector<formats::Flow>> flows_by_id(const Collected& t) {
  std::map<uint64_t, std::vector<formats::Flow>> m;
  for (const auto& f : t.flows) m[f.id].push_back(f);
  return m;
}

// Host event, by its call's start (ns after kEpoch) → its "correlation"
// argument (-1: none).
std::map<uint64_t, int64_t> host_correlations(const Collected& t) {
  std::map<uint64_t, int64_t> host_corr;
  for (const auto& e : t.events) {
    if (e.cat != formats::Category::CudaRuntime && e.cat != formats::Category::CudaDriver) continue;
    int64_t corr = -1;
    for (const auto& a : e.args) {
      if (std::string(a.key) == "correlation") corr = a.i;
    }
    host_corr[e.ts_ns - uint64_t(kEpoch)] = corr;
  }
  return host_corr;
}

}  // namespace

TEST_CASE("callback join: first or last correlation id of a host call finds its device work", "[join]") {
  Rig rig(CuptiJoin::Callback);
  Session& s = rig.s;
  // A runtime launch whose kernel carries the inner (last) id, a driver
  // launch whose kernel carries its only id, a graph launch with two kernels.
  s.consume(host(7, kApi_cudaLaunchKernel, 1000, 2000, 10, 11));
  s.consume(host(8, kApi_cuLaunchKernel, 3000, 4000, 12, 12));
  s.consume(host(9, kApi_cuGraphLaunch, 5000, 6000, 13, 13));
  s.consume(kernel(11, 7, 2500, 2600, 1));
  s.consume(kernel(12, 7, 4500, 4600, 2));
  s.consume(kernel(13, 13, 6500, 6600, 1));
  s.consume(kernel(13, 13, 6700, 6800, 1));
  s.consume(kernel(99, 7, 7000, 7100, 2));  // launched by a call we did not record
  const JoinStats js = rig.finish();
  CHECK(js.device_records == 5);
  CHECK(js.joined == 4);
  CHECK(js.work_without_device == 0);
  const auto flows = flows_by_id(rig.sink);
  CHECK(flows.size() == 4);
  for (const auto& [id, ends] : flows) {
    REQUIRE(ends.size() == 2);
    CHECK(ends[0].start);
    CHECK_FALSE(ends[1].start);
    CHECK(ends[0].tid == 42);
    CHECK(ends[1].ts_ns >= ends[0].ts_ns);
  }
  // Host events carry the correlation id of their first device record
  // (HTA joins the two on it).
  const auto host_corr = host_correlations(rig.sink);
  CHECK(host_corr.at(1000) == 11);  // the calls of records 7, 8 and 9
  CHECK(host_corr.at(3000) == 12);
  CHECK(host_corr.at(5000) == 13);
}

TEST_CASE("order join: a call waits for its device record, then carries its correlation id", "[join]") {
  Rig rig(CuptiJoin::Order);
  Session& s = rig.s;
  s.consume(host(7, kApi_cuLaunchKernel, 1000, 2000, 0, 0));
  s.consume(host(8, kApi_cuMemAlloc_v2, 2100, 2200, 0, 0));  // makes no device work: out at once
  CHECK(host_correlations(rig.sink).count(2100) == 1);  // record 8
  CHECK(host_correlations(rig.sink).count(1000) == 0);  // record 7: held for its device record
  const CorrelationLink link{7, 55, 42, 1000};
  s.consume(kernel(55, 7, 2500, 2600, 1), &link);
  s.consume(kernel(56, 7, 2700, 2800, 1));  // no link: not joined
  CHECK(host_correlations(rig.sink).at(1000) == 55);
  const JoinStats js = rig.finish();
  CHECK(js.device_records == 2);
  CHECK(js.joined == 1);
  CHECK(js.released_unjoined == 0);
  REQUIRE(rig.sink.flows.size() == 2);
  CHECK(rig.sink.flows[0].ts_ns == uint64_t(kEpoch) + 1000);  // from the call's start
  CHECK(rig.sink.flows[0].tid == 42);
}

TEST_CASE("order join: a call whose device record does not come goes out after the hold, without an id", "[join]") {
  Rig rig(CuptiJoin::Order, 1000000);  // hold 1 ms
  Session& s = rig.s;
  s.advance(TimeMap::offset_only(kEpoch), 5000000);
  s.consume(host(7, kApi_cuLaunchKernel, 1000, 2000, 0, 0));
  s.advance(TimeMap::offset_only(kEpoch), 5500000);
  CHECK(host_correlations(rig.sink).count(1000) == 0);  // still within the hold
  s.advance(TimeMap::offset_only(kEpoch), 6500000);
  REQUIRE(host_correlations(rig.sink).count(1000) == 1);
  CHECK(host_correlations(rig.sink).at(1000) == -1);
  const JoinStats js = rig.finish();
  CHECK(js.released_unjoined == 1);
  CHECK(js.work_without_device == 1);
}

TEST_CASE("most calls unjoined: missing device records blame another client, present ones the join", "[join]") {
  // 10 launches; the device records either never came (another CUPTI client
  // took them) or came with correlation ids no host call carries (a join
  // that does not work).
  for (const bool records_came : {false, true}) {
    DYNAMIC_SECTION((records_came ? "records came" : "records missing")) {
      Rig rig(CuptiJoin::Callback);
      Session& s = rig.s;
      for (uint32_t i = 0; i < 10; ++i) {
        s.consume(host(100 + i, kApi_cuLaunchKernel, 1000 * (i + 1), 1000 * (i + 1) + 500, 10 + i, 10 + i));
        if (records_came) s.consume(kernel(500 + i, 7, 1000 * (i + 1) + 600, 1000 * (i + 1) + 700, 1));
      }
      const JoinStats js = rig.finish();
      CHECK(js.work_calls == 10);
      CHECK(js.work_without_device == 10);
      const auto footer = build_table_footer(s, context(CuptiJoin::Callback), js);
      std::string notes;
      for (const auto& n : footer.notes) notes += n + "\n";
      INFO(notes);
      CHECK(notes.find("Calls that make device work with no device record: 10 of 10") != std::string::npos);
      CHECK((notes.find("another CUPTI client") != std::string::npos) == !records_came);
      CHECK((notes.find("the join failed") != std::string::npos) == records_came);
      // Records that nb dropped explain unjoined calls: not a failed join.
      OutputContext dropping = context(CuptiJoin::Callback);
      dropping.device_overflow = 5;
      std::string with_drops;
      for (const auto& n : build_table_footer(s, dropping, js).notes) with_drops += n + "\n";
      CHECK(with_drops.find("the join failed") == std::string::npos);
      CHECK((with_drops.find("records were dropped on the way") != std::string::npos) == records_came);
    }
  }
}

TEST_CASE("device events: GPU and stream tracks, names, partial overlaps clipped", "[join]") {
  Rig rig(CuptiJoin::None);
  Session& s = rig.s;
  s.consume(kernel(1, 7, 1000, 2000, 1));
  s.consume(kernel(2, 7, 1900, 2500, 2));  // crosses the previous box's end
  s.consume(kernel(3, 9, 1000, 3000, 1));
  const JoinStats js = rig.finish();
  CHECK(js.overlaps_clipped == 1);
  CHECK(rig.sink.flows.empty());
  const formats::TraceData t = build_trace_frame(s, context(CuptiJoin::None), trace_base_ns(kEpoch));
  bool gpu = false;
  for (const auto& p : t.processes) gpu |= p.pid == 0 && p.name == "GPU 0";
  CHECK(gpu);
  std::map<int64_t, std::string> streams;
  for (const auto& th : t.threads) {
    if (th.pid == 0) streams[th.tid] = th.name;
  }
  CHECK(streams == std::map<int64_t, std::string>{{7, "stream 7"}, {9, "stream 9"}});
  const formats::Event* first = nullptr;
  for (const auto& e : rig.sink.events) {
    if (e.cat == formats::Category::Kernel && e.tid == 7 && e.ts_ns == uint64_t(kEpoch) + 1000) first = &e;
  }
  REQUIRE(first != nullptr);
  CHECK(first->dur_ns == 900);  // clipped to where the next box starts
  CHECK(rig.name(first->name) == "kernelA");
}

TEST_CASE("NVTX ranges: a user_annotation span, and a gpu_user_annotation over its calls' device work", "[join]") {
  Rig rig(CuptiJoin::Order, 1000000);
  Session& s = rig.s;
  Record range{};
  range.kind = Kind::Nvtx;
  range.tid = 42;
  range.start = 900;
  range.end = 5000;
  range.name = 2;  // "kernelB" stands for the range's name
  s.consume(host(7, kApi_cuLaunchKernel, 1000, 2000, 0, 0));
  s.consume(host(8, kApi_cuLaunchKernel, 3000, 4000, 0, 0));
  s.consume(range);
  const CorrelationLink l7{7, 1, 42, 1000}, l8{8, 2, 42, 3000};
  s.consume(kernel(1, 7, 2500, 2600, 1), &l7);
  s.consume(kernel(2, 7, 4500, 4700, 1), &l8);
  s.advance(TimeMap::offset_only(kEpoch), 5000 + 2000000);  // past the hold after the range's end
  const formats::Event* span = nullptr;
  const formats::Event* gpu_span = nullptr;
  for (const auto& e : rig.sink.events) {
    if (e.cat == formats::Category::UserAnnotation) span = &e;
    if (e.cat == formats::Category::GpuUserAnnotation) gpu_span = &e;
  }
  REQUIRE(span != nullptr);
  CHECK(span->tid == 42);
  CHECK(span->dur_ns == 4100);
  REQUIRE(gpu_span != nullptr);
  CHECK(gpu_span->tid == 7);
  CHECK(gpu_span->ts_ns == uint64_t(kEpoch) + 2500);
  CHECK(gpu_span->dur_ns == 2200);
  CHECK(rig.name(gpu_span->name) == "kernelB");
}
