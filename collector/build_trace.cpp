#include "collector/builders.h"

#include <fstream>

#include "core/api.h"

namespace nb {

namespace {

std::string thread_name(int64_t pid, uint32_t tid, const std::string& fallback) {
  // The name now, if the thread still runs: programs often name threads after
  // their first CUDA call (Python's threading, worker pools).
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
  std::string name;
  if (f && std::getline(f, name) && !name.empty()) return name;
  return fallback.empty() ? "thread " + std::to_string(tid) : fallback;
}

// "nbRun": the steps, the memory curve by device and the program's end, for
// `nbprof report` (the same facts as the events, readable without them, as
// long as the run kept them all: RunLog's bounds).
void add_run_summary(const Session& s, const OutputContext& ctx, formats::TraceData& t) {
  formats::RunSummary& run = t.run;
  run.present = true;
  if (ctx.program_end != 0 && ctx.program_end >= ctx.window_from && ctx.program_end <= ctx.window_to) {
    run.program_end_ns = ctx.time.epoch_ns(ctx.program_end);
  }
  const RunLog& log = s.run_log();
  run.steps_complete = log.steps_complete;
  for (const RunLog::Step& st : log.steps) {
    if (st.start < ctx.window_from) continue;
    run.steps.push_back({st.number, ctx.time.epoch_ns(st.start),
                         st.end >= st.start ? ctx.time.duration_ns(st.end - st.start) : 0, st.tid});
  }
  run.memory_complete = log.points_complete;
  std::map<int, std::vector<formats::RunSummary::Point>> by_device;
  for (const MemoryPoint& p : log.points) {
    if (p.ticks < ctx.window_from || p.ticks > ctx.window_to) continue;
    by_device[p.device].push_back({ctx.time.epoch_ns(p.ticks), p.allocated, p.reserved});
  }
  for (auto& [device, points] : by_device) run.memory.emplace_back(device, std::move(points));
  run.teardown_frees = s.memory().counts().teardown_frees;
  run.teardown_bytes = s.memory().counts().teardown_bytes;
}

}  // namespace

uint64_t trace_base_ns(int64_t epoch_ns) {
  const uint64_t e = static_cast<uint64_t>(epoch_ns);
  return e - e % 1000000000ull;
}

formats::TraceData build_trace_frame(const Session& s, const OutputContext& ctx, uint64_t base_ns) {
  formats::TraceData t;
  t.base_time_ns = base_ns;
  t.devices = ctx.devices;
  t.distributed = ctx.distributed;
  // The host (and rank) in the process's name: traces of many processes
  // side by side (nbprof merge) say whose each is.
  std::string name = ctx.program + " (";
  if (ctx.distributed.present) name += "rank " + std::to_string(ctx.distributed.rank) + ", ";
  name += (ctx.host.empty() ? std::string("pid ") + std::to_string(ctx.pid) : ctx.host) + ")";
  t.processes.push_back({ctx.pid, name, ctx.pid});
  for (const auto& [tid, name] : s.threads()) {
    t.threads.push_back({ctx.pid, static_cast<int64_t>(tid), thread_name(ctx.pid, tid, name),
                         static_cast<int64_t>(tid)});
  }
  const TraceBuilder& tl = *s.timeline();
  // Each thread that ended steps has a track of its own for them, right
  // below it (same sort index, larger tid).
  for (uint32_t tid : tl.step_threads()) {
    t.threads.push_back({ctx.pid, (int64_t{1} << 29) + tid, "ProfilerStep (thread " + std::to_string(tid) + ")",
                         static_cast<int64_t>(tid)});
  }
  for (uint32_t gpu : tl.gpus()) {
    t.processes.push_back({static_cast<int64_t>(gpu), "GPU " + std::to_string(gpu), static_cast<int64_t>(gpu) + 0x10000000});
  }
  for (const auto& [device, stream] : tl.streams()) {
    t.threads.push_back({static_cast<int64_t>(device), static_cast<int64_t>(stream), "stream " + std::to_string(stream),
                         static_cast<int64_t>(stream)});
  }
  for (uint32_t id : tl.stacks_used()) {
    if (id < ctx.stacks.size()) t.stacks.emplace_back(id, ctx.stacks[id]);
  }
  t.stacks_ts_ns = tl.first_ns() == INT64_MAX ? base_ns : static_cast<uint64_t>(tl.first_ns());
  // A flight recorder's file starts later: its stacks sit where it starts.
  if (ctx.window_from != 0) {
    t.stacks_ts_ns = std::max<uint64_t>(t.stacks_ts_ns, static_cast<uint64_t>(ctx.time.epoch_ns(ctx.window_from)));
  }
  add_run_summary(s, ctx, t);
  t.trace_name = ctx.prefix + ".trace.json";
  // The ranking table as write_outputs prints it, as data ("nbTable"): `nbprof stats`.
  t.table.rows = build_table_rows(s, ctx);
  t.table.regions = build_region_rows(s, ctx);
  if (ctx.folded) {
    t.table.sources = build_source_rows(s, ctx);
    t.table.device_folded = build_device_folded(s, ctx);
    t.table.host_folded = build_host_folded(s, ctx);
  }
  t.table.options = {ctx.table_sort, ctx.table_rows, table_title(ctx)};
  t.table.footer = build_table_footer(s, ctx, tl.stats());
  return t;
}

}  // namespace nb
