#include "collector/builders.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "core/api.h"
#include "formats/stack_text.h"

namespace nb {

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

const char* copy_kind_name(uint64_t k) {
  switch (static_cast<CopyKind>(k)) {
    case CopyKind::HtoD: return "HtoD";
    case CopyKind::DtoH: return "DtoH";
    case CopyKind::DtoD: return "DtoD";
    case CopyKind::HtoH: return "HtoH";
    case CopyKind::Peer: return "PtoP";
    case CopyKind::Default: return "Default";
    case CopyKind::Unknown: break;
  }
  return "Unknown";
}

std::string thread_name(int64_t pid, uint32_t tid, const std::string& fallback) {
  // The name now, if the thread still runs: programs often name threads after
  // their first CUDA call (Python's threading, worker pools).
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
  std::string name;
  if (f && std::getline(f, name) && !name.empty()) return name;
  return fallback.empty() ? "thread " + std::to_string(tid) : fallback;
}

void add_record_args(const Record& r, const OutputContext& ctx, std::vector<formats::Arg>& a) {
  using formats::Arg;
  a.push_back(Arg::uinteger("External id", r.id));
  // Recorded into a graph being captured: its work runs with the graph's launches.
  if (r.flags & record_flag::kCaptured) a.push_back(Arg::uinteger("captured", 1));
  // Made after the program's end (teardown: not in the snapshot's history).
  if (r.flags & record_flag::kTeardown) a.push_back(Arg::uinteger("teardown", 1));
  switch (r.kind) {
    case Kind::Launch:
      if (r.name != 0 && r.name < ctx.kernel_names.size()) a.push_back(Arg::text("kernel", ctx.kernel_names[r.name]));
      a.push_back(Arg::dim3("grid", r.grid[0], r.grid[1], r.grid[2]));
      a.push_back(Arg::dim3("block", r.block[0], r.block[1], r.block[2]));
      a.push_back(Arg::uinteger("shared memory", r.shared_mem));
      a.push_back(Arg::text("stream handle", hex(r.stream)));
      break;
    case Kind::Graph:
      a.push_back(Arg::text("graph exec", hex(r.ptr)));
      a.push_back(Arg::text("stream handle", hex(r.stream)));
      break;
    case Kind::Memcpy:
      a.push_back(Arg::uinteger("bytes", r.bytes));
      a.push_back(Arg::text("kind", copy_kind_name(r.aux)));
      a.push_back(Arg::text("dst", hex(r.ptr)));
      a.push_back(Arg::text("src", hex(r.ptr2)));
      a.push_back(Arg::text("stream handle", hex(r.stream)));
      break;
    case Kind::Memset:
      a.push_back(Arg::uinteger("bytes", r.bytes));
      a.push_back(Arg::text("dst", hex(r.ptr)));
      a.push_back(Arg::text("stream handle", hex(r.stream)));
      break;
    case Kind::Alloc:
    case Kind::HostAlloc:
      a.push_back(Arg::uinteger("bytes", r.bytes));
      a.push_back(Arg::text("address", hex(r.ptr)));
      if (r.kind == Kind::Alloc) a.push_back(Arg::integer("device", r.device));
      if (r.kind == Kind::Alloc && r.result == 2) a.push_back(Arg::uinteger("device free", r.aux));
      break;
    case Kind::Free:
    case Kind::HostFree:
      a.push_back(Arg::text("address", hex(r.ptr)));
      break;
    case Kind::VmmCreate:
    case Kind::VmmRelease:
      a.push_back(Arg::text("handle", hex(r.ptr)));
      if (r.bytes) a.push_back(Arg::uinteger("bytes", r.bytes));
      break;
    case Kind::VmmMap:
    case Kind::VmmUnmap:
      a.push_back(Arg::text("address", hex(r.ptr)));
      a.push_back(Arg::uinteger("bytes", r.bytes));
      if (r.kind == Kind::VmmMap) a.push_back(Arg::text("handle", hex(r.ptr2)));
      break;
    case Kind::Sync:
      if (r.stream) a.push_back(Arg::text("stream handle", hex(r.stream)));
      break;
    default:
      break;
  }
  if (r.result != 0) a.push_back(Arg::integer("result", r.result));
}

formats::Category device_category(DeviceKind k) {
  switch (k) {
    case DeviceKind::Kernel: return formats::Category::Kernel;
    case DeviceKind::Memcpy: return formats::Category::GpuMemcpy;
    case DeviceKind::Memset: return formats::Category::GpuMemset;
  }
  return formats::Category::Kernel;
}

// CUPTI correlation id → index of the host record that made the call.
std::unordered_map<uint32_t, size_t> host_calls_by_correlation(const Session& s, const OutputContext& ctx) {
  std::unordered_map<uint32_t, size_t> by_corr;
  const RecordLog& recs = s.records();
  if (ctx.join_mode == CuptiJoin::Order) {
    std::unordered_map<uint64_t, size_t> by_id;
    by_id.reserve(recs.size());
    for (size_t i = 0; i < recs.size(); ++i) by_id.emplace(recs[i].id, i);
    for (const CorrelationLink& l : s.correlation_links()) {
      auto it = by_id.find(l.host_id);
      if (it != by_id.end()) by_corr.emplace(l.correlation, it->second);
    }
    return by_corr;
  }
  for (size_t i = 0; i < recs.size(); ++i) {
    if (recs[i].corr_first) by_corr.emplace(recs[i].corr_first, i);
    if (recs[i].corr_last && recs[i].corr_last != recs[i].corr_first) by_corr.emplace(recs[i].corr_last, i);
  }
  return by_corr;
}

// Boxes on one track may nest but not partially overlap (Perfetto drops or
// splits those). Device timestamps of consecutive work on a stream can touch
// or cross by a few ns; clip the earlier box to where the next one starts.
uint64_t clip_partial_overlaps(std::vector<formats::Event>& events, size_t first) {
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> tracks;
  for (size_t i = first; i < events.size(); ++i) tracks[{events[i].pid, events[i].tid}].push_back(i);
  uint64_t clipped = 0;
  for (auto& [track, idx] : tracks) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return events[a].ts_ns < events[b].ts_ns; });
    for (size_t k = 1; k < idx.size(); ++k) {
      formats::Event& prev = events[idx[k - 1]];
      const formats::Event& next = events[idx[k]];
      const uint64_t prev_end = prev.ts_ns + prev.dur_ns;
      const uint64_t next_end = next.ts_ns + next.dur_ns;
      if (next.ts_ns < prev_end && next_end > prev_end) {
        prev.dur_ns = next.ts_ns - prev.ts_ns;
        ++clipped;
      }
    }
  }
  return clipped;
}

// The track of a thread's ProfilerStep spans. A step nb cuts ends at the
// call that ended it, which may lie inside one of the program's own NVTX
// ranges, so on the thread's own track a step and a range could overlap in
// part, which viewers cannot nest: steps get a track of their own. Thread
// ids stay below 2^22 (pid_max), so these never meet a real one.
int64_t step_track(uint32_t tid) { return (int64_t{1} << 29) + tid; }

// Spans of the program's own structure: ProfilerStep#N for each recorded
// step (NB_STEP), on its thread's step track, and each NVTX range as
// `user_annotation` on its thread, as torch.profiler writes them; and each NVTX range again as
// `gpu_user_annotation` over the device work its calls launched, on the
// stream of the first of it.
void add_annotations(const Session& s, const OutputContext& ctx,
                     const std::unordered_map<uint32_t, size_t>& by_corr, formats::TraceData& t) {
  using formats::Category;
  const auto span = [&](uint32_t name, Category cat, int64_t pid, int64_t tid, uint64_t start, uint64_t end) {
    formats::Event e;
    e.name = name;
    e.cat = cat;
    e.pid = pid;
    e.tid = tid;
    e.ts_ns = static_cast<uint64_t>(ctx.time.epoch_ns(start));
    e.dur_ns = end >= start ? ctx.time.duration_ns(end - start) : 0;
    return e;
  };
  for (const OutputContext::StepSpan& st : ctx.steps) {
    const uint32_t name = static_cast<uint32_t>(t.names.size());
    t.names.push_back("ProfilerStep#" + std::to_string(st.number));
    t.events.push_back(span(name, Category::UserAnnotation, ctx.pid, step_track(st.tid), st.start, st.end));
  }
  const std::vector<Record>& ranges = s.nvtx_ranges();
  if (ranges.empty()) return;
  const auto name_of = [&](uint32_t id) { return static_cast<uint32_t>(kApiCount + id); };
  // Ranges by thread, in start order, to find those enclosing a launch.
  std::map<uint32_t, std::vector<size_t>> by_tid;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Record& r = ranges[i];
    t.events.push_back(span(name_of(r.name), Category::UserAnnotation, ctx.pid, r.tid, r.start, r.end));
    by_tid[r.tid].push_back(i);
  }
  for (auto& [tid, idx] : by_tid) {
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return ranges[a].start < ranges[b].start; });
  }
  struct Cover {
    uint64_t start = UINT64_MAX, end = 0;  // monotonic ns of device work
    uint32_t device = 0, stream = 0;
  };
  std::vector<Cover> cover(ranges.size());
  const RecordLog& recs = s.records();
  s.device_records().for_each([&](const DeviceRecord& d) {
    auto host = by_corr.find(d.correlation);
    if (host == by_corr.end()) return;
    const Record& h = recs[host->second];
    auto tr = by_tid.find(h.tid);
    if (tr == by_tid.end()) return;
    const std::vector<size_t>& idx = tr->second;
    // Enclosing ranges start at or before the call; nested ones are close
    // before it, so a bounded look back finds them.
    auto it = std::upper_bound(idx.begin(), idx.end(), h.start,
                               [&](uint64_t v, size_t i) { return v < ranges[i].start; });
    for (int look = 0; it != idx.begin() && look < 64; ++look) {
      --it;
      const Record& r = ranges[*it];
      if (r.end < h.start) continue;
      Cover& c = cover[*it];
      if (c.start == UINT64_MAX) {
        c.device = d.device;
        c.stream = d.stream;
      }
      c.start = std::min(c.start, d.start);
      c.end = std::max(c.end, d.end);
    }
  });
  for (size_t i = 0; i < ranges.size(); ++i) {
    const Cover& c = cover[i];
    if (c.start == UINT64_MAX) continue;
    formats::Event e;
    e.name = name_of(ranges[i].name);
    e.cat = Category::GpuUserAnnotation;
    e.pid = c.device;
    e.tid = c.stream;
    e.ts_ns = static_cast<uint64_t>(ctx.time.epoch_from_mono(c.start));
    e.dur_ns = c.end >= c.start ? c.end - c.start : 0;
    t.events.push_back(std::move(e));
  }
}


// "nbRun": the steps, the memory curve by device and the program's end, for
// `nbprof report` (the same facts as the events, readable without them).
void add_run_summary(const Session& s, const OutputContext& ctx, formats::TraceData& t) {
  formats::RunSummary& run = t.run;
  run.present = true;
  if (ctx.program_end != 0 && ctx.program_end >= ctx.window_from && ctx.program_end <= ctx.window_to) {
    run.program_end_ns = ctx.time.epoch_ns(ctx.program_end);
  }
  for (const OutputContext::StepSpan& st : ctx.steps) {
    run.steps.push_back({st.number, ctx.time.epoch_ns(st.start),
                         st.end >= st.start ? ctx.time.duration_ns(st.end - st.start) : 0, st.tid});
  }
  std::map<int, std::vector<formats::RunSummary::Point>> by_device;
  for (const MemoryPoint& p : s.memory().curve()) {
    if (p.ticks < ctx.window_from || p.ticks > ctx.window_to) continue;
    by_device[p.device].push_back({ctx.time.epoch_ns(p.ticks), p.allocated, p.reserved});
  }
  for (auto& [device, points] : by_device) run.memory.emplace_back(device, std::move(points));
  run.teardown_frees = s.memory().counts().teardown_frees;
  run.teardown_bytes = s.memory().counts().teardown_bytes;
}

}  // namespace

formats::TraceData build_trace(const Session& s, const OutputContext& ctx, JoinStats* stats) {
  formats::TraceData t;
  // Event names: the API names (index = ApiId), then the NameTable's names
  // (index = kApiCount + name id) for device work.
  t.names.reserve(kApiCount + ctx.kernel_names.size());
  for (uint16_t id = 0; id < kApiCount; ++id) t.names.emplace_back(api_info(id).name);
  for (const std::string& n : ctx.kernel_names) t.names.push_back(n);
  const auto device_name = [&](uint32_t name) { return static_cast<uint32_t>(kApiCount + name); };

  const RecordLog& recs = s.records();
  const ChunkedLog<DeviceRecord>& dev = s.device_records();
  int64_t first_epoch = recs.empty() ? ctx.time.epoch0 : ctx.time.epoch_ns(s.first());
  dev.for_each([&](const DeviceRecord& d) { first_epoch = std::min(first_epoch, ctx.time.epoch_from_mono(d.start)); });
  // A step span begins where the step before it ended, which can be before
  // the window's first call; NVTX ranges may begin before any call.
  for (const OutputContext::StepSpan& st : ctx.steps) first_epoch = std::min(first_epoch, ctx.time.epoch_ns(st.start));
  for (const Record& r : s.nvtx_ranges()) first_epoch = std::min(first_epoch, ctx.time.epoch_ns(r.start));
  t.base_time_ns = static_cast<uint64_t>(first_epoch) - static_cast<uint64_t>(first_epoch) % 1000000000ull;
  t.devices = ctx.devices;

  t.processes.push_back({ctx.pid, ctx.program, ctx.pid});
  for (const auto& [tid, name] : s.threads()) {
    t.threads.push_back({ctx.pid, static_cast<int64_t>(tid), thread_name(ctx.pid, tid, name),
                         static_cast<int64_t>(tid)});
  }
  // Each thread that ended steps has a track of its own for them, right
  // below it (same sort index, larger tid).
  std::set<uint32_t> step_threads;
  for (const OutputContext::StepSpan& st : ctx.steps) step_threads.insert(st.tid);
  for (uint32_t tid : step_threads) {
    t.threads.push_back({ctx.pid, step_track(tid), "ProfilerStep (thread " + std::to_string(tid) + ")",
                         static_cast<int64_t>(tid)});
  }

  // Join: each device record to the host call that caused it.
  const auto by_corr = host_calls_by_correlation(s, ctx);
  std::vector<uint32_t> host_corr(recs.size(), 0);
  JoinStats js;
  t.events.reserve(recs.size() + dev.size());
  std::map<std::pair<uint32_t, uint32_t>, bool> streams;  // (device, stream) seen
  std::map<uint32_t, bool> gpus;
  uint64_t next_flow = 1;
  dev.for_each([&](const DeviceRecord& d) {
    ++js.device_records;
    formats::Event e;
    e.name = device_name(d.name);
    e.cat = device_category(d.kind);
    e.pid = d.device;
    e.tid = d.stream;
    e.ts_ns = static_cast<uint64_t>(ctx.time.epoch_from_mono(d.start));
    e.dur_ns = d.end >= d.start ? d.end - d.start : 0;
    auto host = by_corr.find(d.correlation);
    const bool joined = host != by_corr.end();
    using formats::Arg;
    if (joined) e.args.push_back(Arg::uinteger("External id", recs[host->second].id));
    if (d.kind == DeviceKind::Kernel) e.args.push_back(Arg::integer("queued", 0));
    e.args.push_back(Arg::integer("device", d.device));
    e.args.push_back(Arg::integer("context", d.context));
    e.args.push_back(Arg::integer("stream", d.stream));
    e.args.push_back(Arg::integer("correlation", d.correlation));
    if (d.kind == DeviceKind::Kernel) {
      e.args.push_back(Arg::integer("registers per thread", d.registers));
      e.args.push_back(Arg::integer("shared memory", d.shared_memory));
      e.args.push_back(Arg::dim3("grid", static_cast<uint32_t>(d.grid[0]), static_cast<uint32_t>(d.grid[1]),
                                 static_cast<uint32_t>(d.grid[2])));
      e.args.push_back(Arg::dim3("block", static_cast<uint32_t>(d.block[0]), static_cast<uint32_t>(d.block[1]),
                                 static_cast<uint32_t>(d.block[2])));
    } else {
      e.args.push_back(Arg::uinteger("bytes", d.bytes));
      e.args.push_back(Arg::real("memory bandwidth (GB/s)",
                                 e.dur_ns ? static_cast<double>(d.bytes) / static_cast<double>(e.dur_ns) : 0.0));
    }
    if (d.graph_id) {
      e.args.push_back(Arg::uinteger("graph id", d.graph_id));
      e.args.push_back(Arg::uinteger("graph node id", d.graph_node_id));
    }
    if (joined) {
      ++js.joined;
      const Record& r = recs[host->second];
      if (host_corr[host->second] == 0) host_corr[host->second] = d.correlation;
      const uint64_t id = next_flow++;
      t.flows.push_back({id, ctx.pid, static_cast<int64_t>(r.tid),
                         static_cast<uint64_t>(ctx.time.epoch_ns(r.start)), true});
      t.flows.push_back({id, e.pid, e.tid, e.ts_ns, false});
    }
    streams[{d.device, d.stream}] = true;
    gpus[d.device] = true;
    t.events.push_back(std::move(e));
  });
  js.overlaps_clipped = clip_partial_overlaps(t.events, 0);
  if (ctx.device_traced && ctx.join_mode != CuptiJoin::None) {
    for (size_t i = 0; i < recs.size(); ++i) {
      if (!makes_device_work(recs[i])) continue;
      ++js.work_calls;
      if (host_corr[i] == 0) ++js.work_without_device;
    }
  }

  // Memory curves, under each GPU's timeline: the sawtooth of a training
  // step, a leak's rising floor, the gap of what pools keep.
  const auto& curve = s.memory().curve();
  add_run_summary(s, ctx, t);
  if (!curve.empty()) {
    const uint32_t counter_name = static_cast<uint32_t>(t.names.size());
    t.names.emplace_back("Device memory (bytes)");
    t.counters.reserve(curve.size());
    for (const MemoryPoint& p : curve) {
      if (p.ticks < ctx.window_from || p.ticks > ctx.window_to) continue;
      formats::Counter c;
      c.name = counter_name;
      c.pid = p.device;
      c.ts_ns = static_cast<uint64_t>(ctx.time.epoch_ns(p.ticks));
      c.values = {{"allocated", static_cast<double>(p.allocated)}, {"reserved", static_cast<double>(p.reserved)}};
      t.counters.push_back(std::move(c));
      gpus[static_cast<uint32_t>(p.device)] = true;
    }
  }

  for (const auto& [gpu, seen] : gpus) {
    t.processes.push_back({static_cast<int64_t>(gpu), "GPU " + std::to_string(gpu),
                           static_cast<int64_t>(gpu) + 0x10000000});
  }
  for (const auto& [key, seen] : streams) {
    t.threads.push_back({static_cast<int64_t>(key.first), static_cast<int64_t>(key.second),
                         "stream " + std::to_string(key.second), static_cast<int64_t>(key.second)});
  }

  // NB_STACKS: a call's stack as one short text argument (formats/
  // stack_text.h), built once per distinct stack.
  std::vector<std::string> stack_texts(ctx.stacks.size());
  const auto stack_text = [&](uint32_t id) -> const std::string& {
    std::string& text = stack_texts[id];
    if (text.empty()) text = formats::trace_stack_text(ctx.stacks[id]);
    return text;
  };
  for (size_t i = 0; i < recs.size(); ++i) {
    const Record& r = recs[i];
    formats::Event e;
    e.name = r.api < kApiCount ? r.api : 0;
    e.cat = api_info(r.api).runtime ? formats::Category::CudaRuntime : formats::Category::CudaDriver;
    e.pid = ctx.pid;
    e.tid = r.tid;
    e.ts_ns = static_cast<uint64_t>(ctx.time.epoch_ns(r.start));
    e.dur_ns = r.end >= r.start ? ctx.time.duration_ns(r.end - r.start) : 0;
    add_record_args(r, ctx, e.args);
    if (r.stack != 0 && r.stack < ctx.stacks.size()) e.args.push_back(formats::Arg::text("stack", stack_text(r.stack)));
    if (host_corr[i]) e.args.push_back(formats::Arg::integer("correlation", host_corr[i]));
    if (ctx.debug_args && (r.corr_first || r.corr_last)) {
      // Which of the ids CUPTI handed out during the call matched (first =
      // the outermost traced API, last = the innermost): NB_LOG=debug.
      e.args.push_back(formats::Arg::integer("cupti first", r.corr_first));
      e.args.push_back(formats::Arg::integer("cupti last", r.corr_last));
    }
    t.events.push_back(std::move(e));
  }
  add_annotations(s, ctx, by_corr, t);
  t.trace_name = ctx.prefix + ".trace.json";
  // The ranking table as write_outputs prints it, as data ("nbTable"): `nbprof stats`.
  t.table = {build_table_rows(s, ctx), {ctx.table_sort, ctx.table_rows, table_title(ctx)},
             build_table_footer(s, ctx, js)};
  if (stats) *stats = js;
  return t;
}

}  // namespace nb
