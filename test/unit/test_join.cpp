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

OutputContext context(CuptiJoin join) {
  OutputContext ctx;
  ctx.pid = 1000;
  ctx.program = "t";
  ctx.time = TimeMap::offset_only(1700000000000000000);
  ctx.join_mode = join;
  ctx.device_traced = true;
  ctx.kernel_names = {"", "kernelA", "kernelB"};
  return ctx;
}

std::map<uint64_t, std::vector<formats::Flow>> flows_by_id(const formats::TraceData& t) {
  std::map<uint64_t, std::vector<formats::Flow>> m;
  for (const auto& f : t.flows) m[f.id].push_back(f);
  return m;
}

}  // namespace

TEST_CASE("callback join: first or last correlation id of a host call finds its device work", "[join]") {
  Session s(SessionLimits{});
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
  JoinStats js;
  const auto t = build_trace(s, context(CuptiJoin::Callback), &js);
  CHECK(js.device_records == 5);
  CHECK(js.joined == 4);
  const auto flows = flows_by_id(t);
  CHECK(flows.size() == 4);
  for (const auto& [id, ends] : flows) {
    REQUIRE(ends.size() == 2);
    CHECK(ends[0].start);
    CHECK_FALSE(ends[1].start);
    CHECK(ends[0].tid == 42);
    CHECK(ends[1].ts_ns >= ends[0].ts_ns);
  }
  // Host events carry the correlation id their device work matched.
  std::map<uint64_t, int64_t> host_corr;
  for (const auto& e : t.events) {
    if (e.cat != formats::Category::CudaRuntime && e.cat != formats::Category::CudaDriver) continue;
    uint64_t id = 0;
    int64_t corr = -1;
    for (const auto& a : e.args) {
      if (std::string(a.key) == "External id") id = a.u;
      if (std::string(a.key) == "correlation") corr = a.i;
    }
    host_corr[id] = corr;
  }
  CHECK(host_corr[7] == 11);
  CHECK(host_corr[8] == 12);
  CHECK(host_corr[9] == 13);
}

TEST_CASE("order join: correlation links map device work to host records", "[join]") {
  Session s(SessionLimits{});
  s.consume(host(7, kApi_cuLaunchKernel, 1000, 2000, 0, 0));
  s.consume(CorrelationLink{7, 55});
  s.consume(kernel(55, 7, 2500, 2600, 1));
  s.consume(kernel(56, 7, 2700, 2800, 1));  // no link: not joined
  JoinStats js;
  const auto t = build_trace(s, context(CuptiJoin::Order), &js);
  CHECK(js.device_records == 2);
  CHECK(js.joined == 1);
  CHECK(t.flows.size() == 2);
}

TEST_CASE("most calls unjoined: missing device records blame another client, present ones the join", "[join]") {
  // 10 launches; the device records either never came (another CUPTI client
  // took them) or came with correlation ids no host call carries (a join
  // that does not work).
  for (const bool records_came : {false, true}) {
    DYNAMIC_SECTION((records_came ? "records came" : "records missing")) {
      Session s(SessionLimits{});
      for (uint32_t i = 0; i < 10; ++i) {
        s.consume(host(100 + i, kApi_cuLaunchKernel, 1000 * (i + 1), 1000 * (i + 1) + 500, 10 + i, 10 + i));
        if (records_came) s.consume(kernel(500 + i, 7, 1000 * (i + 1) + 600, 1000 * (i + 1) + 700, 1));
      }
      JoinStats js;
      const OutputContext ctx = context(CuptiJoin::Callback);
      build_trace(s, ctx, &js);
      CHECK(js.work_calls == 10);
      CHECK(js.work_without_device == 10);
      const auto footer = build_table_footer(s, ctx, js);
      std::string notes;
      for (const auto& n : footer.notes) notes += n + "\n";
      INFO(notes);
      CHECK(notes.find("Calls that make device work with no device record: 10 of 10") != std::string::npos);
      CHECK((notes.find("another CUPTI client") != std::string::npos) == !records_came);
      CHECK((notes.find("the join failed") != std::string::npos) == records_came);
    }
  }
}

TEST_CASE("device events: GPU and stream tracks, names, partial overlaps clipped", "[join]") {
  Session s(SessionLimits{});
  s.consume(kernel(1, 7, 1000, 2000, 1));
  s.consume(kernel(2, 7, 1900, 2500, 2));  // crosses the previous box's end
  s.consume(kernel(3, 9, 1000, 3000, 1));
  JoinStats js;
  const auto t = build_trace(s, context(CuptiJoin::None), &js);
  CHECK(js.overlaps_clipped == 1);
  CHECK(t.flows.empty());
  bool gpu = false;
  for (const auto& p : t.processes) gpu |= p.pid == 0 && p.name == "GPU 0";
  CHECK(gpu);
  std::map<int64_t, std::string> streams;
  for (const auto& th : t.threads) {
    if (th.pid == 0) streams[th.tid] = th.name;
  }
  CHECK(streams == std::map<int64_t, std::string>{{7, "stream 7"}, {9, "stream 9"}});
  const formats::Event* first = nullptr;
  for (const auto& e : t.events) {
    if (e.cat == formats::Category::Kernel && e.tid == 7 && e.ts_ns == 1700000000000001000ull) first = &e;
  }
  REQUIRE(first != nullptr);
  CHECK(first->dur_ns == 900);  // clipped to where the next box starts
  CHECK(t.names[first->name] == "kernelA");
}
