#include "collector/trace_builder.h"

#include <algorithm>

#include "core/api.h"
#include "core/name_table.h"

namespace nb {

namespace {

// The collective an NCCL kernel's name gives: ncclDevKernel_AllReduce_Sum_f32_RING_LL
// (NCCL 2.19 on), ncclKernel_AllGather_RING_LL_Sum_int8_t (before), mangled
// or not; "" for any other kernel, and for NCCL's generic kernels, whose
// name says nothing of it.
constexpr std::string_view kCollectives[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                             "Reduce",    "SendRecv",  "AllToAll"};
// Its index in kCollectives, or -1.
int nccl_collective(std::string_view name) {
  for (std::string_view prefix : {std::string_view("ncclDevKernel_"), std::string_view("ncclKernel_")}) {
    const size_t at = name.find(prefix);
    if (at == std::string_view::npos) continue;
    std::string_view rest = name.substr(at + prefix.size());
    rest = rest.substr(0, rest.find_first_of("_(<"));
    for (size_t i = 0; i < std::size(kCollectives); ++i) {
      if (rest == kCollectives[i]) return static_cast<int>(i);
    }
    return -1;
  }
  return -1;
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

formats::Category device_category(DeviceKind k) {
  switch (k) {
    case DeviceKind::Kernel: return formats::Category::Kernel;
    case DeviceKind::Memcpy: return formats::Category::GpuMemcpy;
    case DeviceKind::Memset: return formats::Category::GpuMemset;
  }
  return formats::Category::Kernel;
}

// The track of a thread's ProfilerStep spans. A step nb cuts ends at the
// call that ended it, which may lie inside one of the program's own NVTX
// ranges, so on the thread's own track a step and a range could overlap in
// part, which viewers cannot nest: steps get a track of their own. Thread
// ids stay below 2^22 (pid_max), so these never meet a real one.
int64_t step_track(uint32_t tid) { return (int64_t{1} << 29) + tid; }

// Device work kept per thread for NVTX ranges' device spans. At this many
// the older half is merged pairwise: memory stays bounded, and only a range
// that begins between two merged calls gets a span a call too wide or
// narrow at its start.
constexpr size_t kMaxCovers = size_t(1) << 16;

// Calls whose event was written before all their device records came,
// remembered for the arrows of the rest.
constexpr size_t kMaxWritten = size_t(1) << 16;

}  // namespace

TraceNames::TraceNames(const NameTable* table, std::vector<std::string> fixed)
    : table_(table), fixed_(std::move(fixed)) {
  names_.reserve(kApiCount + 1);
  for (uint16_t id = 0; id < kApiCount; ++id) names_.emplace_back(api_info(id).name);
  names_.emplace_back("Device memory (bytes)");
}

uint32_t TraceNames::counter() const { return kApiCount; }

uint32_t TraceNames::kernel(uint32_t name_id) {
  const size_t index = size_t(kApiCount) + 1 + name_id;
  if (index >= names_.size()) {
    // A name the table got since the last look: take all the new ones.
    const std::vector<std::string> all = table_ ? table_->snapshot() : fixed_;
    for (size_t i = names_.size() - kApiCount - 1; i < all.size(); ++i) names_.push_back(all[i]);
    while (index >= names_.size()) names_.emplace_back();  // not in the table: nameless
  }
  return static_cast<uint32_t>(index);
}

TraceBuilder::TraceBuilder(const TraceSetup& setup, TraceNames& names, EventSink& sink)
    : setup_(setup), names_(names), sink_(sink) {
  holding_ = setup_.device_traced && setup_.join_mode != CuptiJoin::None;
  scratch_.args.reserve(16);
}

void TraceBuilder::set_device(bool traced, CuptiJoin mode, bool handed_over) {
  setup_.device_traced = traced;
  setup_.join_mode = traced ? mode : CuptiJoin::None;
  const bool hold = traced && mode != CuptiJoin::None && !handed_over;
  if (holding_ && !hold) release_held(UINT64_MAX);
  holding_ = hold;
}

void TraceBuilder::host(const Record& r) {
  const bool work = setup_.device_traced && setup_.join_mode != CuptiJoin::None && makes_device_work(r);
  if (work) ++stats_.work_calls;
  if (work && setup_.join_mode == CuptiJoin::Callback && r.corr_first != 0) {
    // The call's ids, read by CUPTI's callback during the call (the outer
    // and the inner API's): its device records carry one of them.
    const uint32_t other = r.corr_last != r.corr_first ? r.corr_last : 0;
    by_corr_[r.corr_first] = CallRef{r.tid, time_.mono_ns(r.start), r.id, false, other, r.range, r.step, r.stack};
    if (other != 0) by_corr_[other] = CallRef{r.tid, time_.mono_ns(r.start), r.id, false, 0, r.range, r.step, r.stack};
    corr_order_.emplace_back(now_ns_, r.corr_first);
  }
  if (work && holding_) {
    if (held_.size() >= setup_.max_held) {
      // Too many calls without their device record: the oldest go without.
      const uint64_t oldest = held_order_.empty() ? 0 : held_order_.front().first;
      release_held(oldest + 1);
    }
    const uint32_t slot = hold(r);
    if (!held_.emplace(r.id, slot).second) unhold(slot);  // the same record twice
    held_order_.emplace_back(now_ns_, r.id);
    return;
  }
  const uint64_t ts = emit_host(r, 0);
  if (work) note_written(r.id, ts);
}

uint32_t TraceBuilder::hold(const Record& r) {
  if (!free_held_.empty()) {
    const uint32_t slot = free_held_.back();
    free_held_.pop_back();
    held_records_[slot] = r;
    return slot;
  }
  held_records_.push_back(r);
  return static_cast<uint32_t>(held_records_.size() - 1);
}

void TraceBuilder::note_written(uint64_t id, uint64_t ts_ns) {
  if (written_order_.size() >= kMaxWritten) {
    // A flood of calls released without their record: the oldest are
    // forgotten (a record of theirs that still comes gets an arrow from
    // the call's start as converted now, within the clocks' jitter).
    written_ts_.erase(written_order_.front().second);
    written_order_.pop_front();
  }
  written_ts_[id] = ts_ns;
  written_order_.emplace_back(now_ns_, id);
}

uint64_t TraceBuilder::emit_host(const Record& r, uint32_t correlation) {
  if (setup_.max_host_events != 0 && host_events_ >= setup_.max_host_events) {
    ++host_left_out_;
    return static_cast<uint64_t>(time_.epoch_ns(r.start));
  }
  ++host_events_;
  using formats::Arg;
  formats::Event& e = scratch_;
  e.label.clear();
  e.args.clear();
  e.name = r.api < kApiCount ? r.api : 0;
  e.cat = api_info(r.api).runtime ? formats::Category::CudaRuntime : formats::Category::CudaDriver;
  e.pid = setup_.pid;
  e.tid = r.tid;
  e.ts_ns = static_cast<uint64_t>(epoch(r.start));
  e.dur_ns = r.end >= r.start ? time_.duration_ns(r.end - r.start) : 0;
  formats::ArgList& a = e.args;
  // Recorded into a graph being captured: its work runs with the graph's launches.
  if (r.flags & record_flag::kCaptured) a.push_back(Arg::uinteger("captured", 1));
  // Made after the program's end (teardown: not in the snapshot's history).
  if (r.flags & record_flag::kTeardown) a.push_back(Arg::uinteger("teardown", 1));
  switch (r.kind) {
    case Kind::Launch:
      if (r.name != 0) a.push_back(Arg::name("kernel", names_.kernel(r.name)));
      a.push_back(Arg::dim3("grid", r.grid[0], r.grid[1], r.grid[2]));
      a.push_back(Arg::dim3("block", r.block[0], r.block[1], r.block[2]));
      a.push_back(Arg::uinteger("shared memory", r.shared_mem));
      a.push_back(Arg::hex("stream handle", r.stream));
      break;
    case Kind::Graph:
      a.push_back(Arg::hex("graph exec", r.ptr));
      a.push_back(Arg::hex("stream handle", r.stream));
      break;
    case Kind::Memcpy:
      a.push_back(Arg::uinteger("bytes", r.bytes));
      a.push_back(Arg::view("kind", copy_kind_name(r.aux)));
      a.push_back(Arg::hex("dst", r.ptr));
      a.push_back(Arg::hex("src", r.ptr2));
      a.push_back(Arg::hex("stream handle", r.stream));
      break;
    case Kind::Memset:
      a.push_back(Arg::uinteger("bytes", r.bytes));
      a.push_back(Arg::hex("dst", r.ptr));
      a.push_back(Arg::hex("stream handle", r.stream));
      break;
    case Kind::Alloc:
    case Kind::HostAlloc:
      a.push_back(Arg::uinteger("bytes", r.bytes));
      a.push_back(Arg::hex("address", r.ptr));
      if (r.kind == Kind::Alloc) a.push_back(Arg::integer("device", r.device));
      if (r.kind == Kind::Alloc && r.result == 2) a.push_back(Arg::uinteger("device free", r.aux));
      break;
    case Kind::Free:
    case Kind::HostFree:
      a.push_back(Arg::hex("address", r.ptr));
      break;
    case Kind::VmmCreate:
    case Kind::VmmRelease:
      a.push_back(Arg::hex("handle", r.ptr));
      if (r.bytes) a.push_back(Arg::uinteger("bytes", r.bytes));
      break;
    case Kind::VmmMap:
    case Kind::VmmUnmap:
      a.push_back(Arg::hex("address", r.ptr));
      a.push_back(Arg::uinteger("bytes", r.bytes));
      if (r.kind == Kind::VmmMap) a.push_back(Arg::hex("handle", r.ptr2));
      break;
    case Kind::Sync:
      if (r.stream) a.push_back(Arg::hex("stream handle", r.stream));
      break;
    default:
      break;
  }
  if (r.result != 0) a.push_back(Arg::integer("result", r.result));
  if (r.stack != 0) {
    // The stack is written once, in the tail (see chrome_trace.h): events
    // refer to it.
    e.stack = r.stack;
    a.push_back(Arg::uinteger("stack", r.stack));
    if (r.stack >= stack_seen_.size()) stack_seen_.resize(size_t(r.stack) + 1 + r.stack / 2);
    if (!stack_seen_[r.stack]) {
      stacks_used_.insert(r.stack);  // first: should it throw, the next use tries again
      stack_seen_[r.stack] = true;
    }
  } else {
    e.stack = 0;
  }
  if (correlation) a.push_back(Arg::integer("correlation", correlation));
  if (setup_.debug_args && (r.corr_first || r.corr_last)) {
    // Which of the ids CUPTI handed out during the call matched (first =
    // the outermost traced API, last = the innermost): NB_LOG=debug.
    a.push_back(Arg::integer("cupti first", r.corr_first));
    a.push_back(Arg::integer("cupti last", r.corr_last));
  }
  sink_.event(e);
  return e.ts_ns;
}

void TraceBuilder::release_held(uint64_t older_than_ns) {
  while (!held_order_.empty() && held_order_.front().first < older_than_ns) {
    const uint64_t id = held_order_.front().second;
    held_order_.pop_front();
    auto it = held_.find(id);
    if (it == held_.end()) continue;  // joined meanwhile
    ++stats_.released_unjoined;
    // (Callback join: counted when its ids are forgotten.)
    if (setup_.join_mode != CuptiJoin::Callback) ++stats_.work_without_device;
    note_written(id, emit_host(held_records_[it->second], 0));
    unhold(it->second);
    held_.erase(it);
  }
}

void TraceBuilder::device(const DeviceRecord& d, const CorrelationLink* link) {
  // The call that made it: given (order join), or by its correlation id.
  bool joined = false;
  uint64_t host_id = 0;
  uint32_t host_tid = 0;
  uint64_t host_start_ns = 0;
  CallOrigin origin;
  if (link != nullptr) {
    joined = true;
    host_id = link->host_id;
    host_tid = link->host_tid;
    host_start_ns = link->host_start_ns;
    origin = CallOrigin{true, link->host_range, link->host_step, link->host_stack};
  } else if (setup_.join_mode == CuptiJoin::Callback) {
    auto it = by_corr_.find(d.correlation);
    if (it != by_corr_.end()) {
      joined = true;
      host_id = it->second.id;
      host_tid = it->second.tid;
      host_start_ns = it->second.start_ns;
      it->second.joined = true;
      origin = CallOrigin{true, it->second.range, it->second.step, it->second.stack};
    } else if (!retrying_now_) {
      // Its call may still be returning, or its ring not drained yet.
      if (retry_.size() >= setup_.max_held) {
        retrying_now_ = true;  // too many waiting: the oldest goes without
        device(retry_.front().second, nullptr);
        retrying_now_ = false;
        retry_.pop_front();
      }
      retry_.emplace_back(now_ns_, d);
      return;
    }
  }
  ++stats_.device_records;
  formats::Event& e = device_scratch_;  // reused: its args keep their room
  e.label.clear();
  e.args.clear();
  e.stack = 0;
  e.name = names_.kernel(d.name);
  e.cat = device_category(d.kind);
  e.pid = d.device;
  e.tid = d.stream;
  const int64_t ts = time_.epoch_from_mono(d.start);
  if (ts < first_ns_) first_ns_ = ts;
  e.ts_ns = static_cast<uint64_t>(ts);
  e.dur_ns = d.end >= d.start ? d.end - d.start : 0;
  // The arrow starts where the call's event does: written now if it was
  // held for this record, or earlier.
  uint64_t host_ts = 0;
  if (joined) {
    auto held = held_.find(host_id);
    if (held != held_.end()) {
      const Record& r = held_records_[held->second];
      host_ts = emit_host(r, d.correlation);
      // Only a graph launch makes more records with the same call.
      if (r.kind == Kind::Graph) note_written(host_id, host_ts);
      unhold(held->second);
      held_.erase(held);
    } else if (auto w = written_ts_.find(host_id); w != written_ts_.end()) {
      host_ts = w->second;
    } else {
      host_ts = static_cast<uint64_t>(time_.epoch_from_mono(host_start_ns));
    }
  }
  using formats::Arg;
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
    // As torch.profiler names it on the call that launches the collective.
    // (Looked up once per kernel name.)
    if (e.name >= collective_of_.size()) collective_of_.resize(e.name + 1, kNotLooked);
    if (collective_of_[e.name] == kNotLooked) {
      collective_of_[e.name] = static_cast<int8_t>(nccl_collective(names_.kernel_text(d.name)));
    }
    if (collective_of_[e.name] >= 0) e.args.push_back(Arg::view("Collective name", kCollectives[collective_of_[e.name]]));
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
    ++stats_.joined;
    const uint64_t id = next_flow_++;
    sink_.flow({id, setup_.pid, static_cast<int64_t>(host_tid), host_ts, true});
    sink_.flow({id, e.pid, e.tid, e.ts_ns, false});
    add_cover(host_tid, Cover{host_start_ns, d.start, d.end, d.device, d.stream});
  }
  if (d.device != last_stream_.first || d.stream != last_stream_.second) {  // (a set lookup per record otherwise)
    streams_.insert({d.device, d.stream});
    gpus_.insert(d.device);
    last_stream_ = {d.device, d.stream};
  }
  emit_device(e);
  if (on_device_) on_device_(d, origin);
}

void TraceBuilder::emit_device(formats::Event& e) {
  // Boxes on one track may nest but not partially overlap (Perfetto drops or
  // splits those). Device timestamps of consecutive work on a stream can touch
  // or cross by a few ns: the earlier box is clipped to where the next one
  // starts. The last box of each stream waits for the next.
  const std::pair<uint32_t, uint32_t> key{static_cast<uint32_t>(e.pid), static_cast<uint32_t>(e.tid)};
  auto it = last_on_stream_.find(key);
  if (it == last_on_stream_.end()) {
    last_on_stream_.emplace(key, e);
    return;
  }
  formats::Event& prev = it->second;
  if (e.ts_ns < prev.ts_ns) {
    sink_.event(e);  // came out of order: written as it is
    return;
  }
  const uint64_t prev_end = prev.ts_ns + prev.dur_ns;
  if (e.ts_ns < prev_end && e.ts_ns + e.dur_ns > prev_end) {
    prev.dur_ns = e.ts_ns - prev.ts_ns;
    ++stats_.overlaps_clipped;
  }
  sink_.event(prev);
  std::swap(prev, e);  // `e` keeps the older one's room for the next
}

void TraceBuilder::nvtx(const Record& r) {
  formats::Event& e = scratch_;
  e.label.clear();
  e.args.clear();
  e.stack = 0;
  e.name = names_.kernel(r.name);
  e.cat = formats::Category::UserAnnotation;
  e.pid = setup_.pid;
  e.tid = r.tid;
  e.ts_ns = static_cast<uint64_t>(epoch(r.start));
  e.dur_ns = r.end >= r.start ? time_.duration_ns(r.end - r.start) : 0;
  sink_.event(e);
  if (!setup_.device_traced || setup_.join_mode == CuptiJoin::None) return;
  // Its device span, once the work of its calls has come.
  ranges_[r.tid].push_back({r.name, time_.mono_ns(r.start), time_.mono_ns(r.end)});
}

void TraceBuilder::add_cover(uint32_t tid, const Cover& c) {
  std::deque<Cover>& covers = covers_[tid];
  if (covers.size() >= kMaxCovers) {
    const size_t half = covers.size() / 2 & ~size_t(1);
    std::deque<Cover> merged;
    for (size_t i = 0; i < half; i += 2) {
      Cover m = covers[i];
      m.start = std::min(m.start, covers[i + 1].start);
      m.end = std::max(m.end, covers[i + 1].end);
      merged.push_back(m);
    }
    for (size_t i = half; i < covers.size(); ++i) merged.push_back(covers[i]);
    covers.swap(merged);
  }
  // A thread's calls come in call order, except a late record's.
  if (!covers.empty() && c.host_ns < covers.back().host_ns) {
    covers.insert(std::upper_bound(covers.begin(), covers.end(), c.host_ns,
                                   [](uint64_t v, const Cover& x) { return v < x.host_ns; }),
                  c);
  } else {
    covers.push_back(c);
  }
}

void TraceBuilder::finish_ranges(uint64_t before_ns) {
  for (auto& [tid, ranges] : ranges_) {
    std::deque<Cover>& covers = covers_[tid];
    // Ranges of a thread end in order (they nest), so the waiting ones are
    // in end order: the oldest are done first.
    while (!ranges.empty() && ranges.front().end_ns < before_ns) {
      const PendingRange& r = ranges.front();
      uint64_t start = UINT64_MAX, end = 0;
      uint32_t device = 0, stream = 0;
      auto from = std::lower_bound(covers.begin(), covers.end(), r.start_ns,
                                   [](const Cover& x, uint64_t v) { return x.host_ns < v; });
      for (auto it = from; it != covers.end() && it->host_ns <= r.end_ns; ++it) {
        const Cover& c = *it;
        if (start == UINT64_MAX) {
          device = c.device;
          stream = c.stream;
        }
        start = std::min(start, c.start);
        end = std::max(end, c.end);
      }
      if (start != UINT64_MAX) {
        formats::Event& e = scratch_;
        e.label.clear();
        e.args.clear();
        e.stack = 0;
        e.name = names_.kernel(r.name);
        e.cat = formats::Category::GpuUserAnnotation;
        e.pid = device;
        e.tid = stream;
        e.ts_ns = static_cast<uint64_t>(time_.epoch_from_mono(start));
        e.dur_ns = end >= start ? end - start : 0;
        sink_.event(e);
      }
      ranges.pop_front();
    }
  }
}

void TraceBuilder::step(uint64_t number, uint64_t start_ticks, uint64_t end_ticks, uint32_t tid) {
  formats::Event& e = scratch_;
  e.args.clear();
  e.stack = 0;
  e.label = "ProfilerStep#" + std::to_string(number);
  e.cat = formats::Category::UserAnnotation;
  e.pid = setup_.pid;
  e.tid = step_track(tid);
  e.ts_ns = static_cast<uint64_t>(epoch(start_ticks));
  e.dur_ns = end_ticks >= start_ticks ? time_.duration_ns(end_ticks - start_ticks) : 0;
  sink_.event(e);
  e.label.clear();
  step_threads_.insert(tid);
}

void TraceBuilder::memory_point(const MemoryPoint& p) {
  formats::Counter& c = counter_scratch_;
  c.name = names_.counter();
  c.pid = p.device;
  c.ts_ns = static_cast<uint64_t>(time_.epoch_ns(p.ticks));
  c.values.clear();
  c.values.emplace_back("allocated", static_cast<double>(p.allocated));
  c.values.emplace_back("reserved", static_cast<double>(p.reserved));
  sink_.counter(c);
  gpus_.insert(static_cast<uint32_t>(p.device));
}

void TraceBuilder::forget_call(uint32_t correlation) {
  auto it = by_corr_.find(correlation);
  if (it == by_corr_.end()) return;
  bool joined = it->second.joined;
  const uint32_t other = it->second.other;
  by_corr_.erase(it);
  if (other != 0) {
    auto o = by_corr_.find(other);
    if (o != by_corr_.end()) {
      joined = joined || o->second.joined;
      by_corr_.erase(o);
    }
  }
  if (!joined) ++stats_.work_without_device;
}

void TraceBuilder::advance(uint64_t now_ns) {
  now_ns_ = now_ns;
  const uint64_t horizon = now_ns > setup_.hold_ns ? now_ns - setup_.hold_ns : 0;
  if (!retry_.empty()) {
    // Called before the pass drains the rings: a record retried now had
    // at least one whole pass for its call to come.
    std::deque<std::pair<uint64_t, DeviceRecord>> waiting;
    retrying_now_ = true;
    for (auto& [since, d] : retry_) {
      if (since < horizon || by_corr_.count(d.correlation)) device(d, nullptr);
      else waiting.emplace_back(since, d);
    }
    retrying_now_ = false;
    retry_.swap(waiting);
  }
  release_held(horizon);
  while (!written_order_.empty() && written_order_.front().first < horizon) {
    written_ts_.erase(written_order_.front().second);
    written_order_.pop_front();
  }
  // Callback join: calls whose device records had their time.
  while (!corr_order_.empty() && corr_order_.front().first < horizon) {
    forget_call(corr_order_.front().second);
    corr_order_.pop_front();
  }
  if (!ranges_.empty()) finish_ranges(horizon);
}

void TraceBuilder::flush() {
  retrying_now_ = true;
  for (const auto& [pass, d] : retry_) device(d, nullptr);
  retry_.clear();
  release_held(UINT64_MAX);
  for (const auto& [since, corr] : corr_order_) forget_call(corr);
  corr_order_.clear();
  finish_ranges(UINT64_MAX);
  for (auto& [key, e] : last_on_stream_) sink_.event(e);
  last_on_stream_.clear();
}

}  // namespace nb
