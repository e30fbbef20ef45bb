#include "collector/session.h"

#include <algorithm>
#include <functional>

namespace nb {

namespace {
// Room for `n` + 1 elements, doubling (reserve(n + 1) alone would reallocate
// on every call).
template <typename V>
void grow_for_one(V& v, size_t n) {
  if (n + 1 > v.capacity()) v.reserve(std::max<size_t>(16, 2 * (n + 1)));
}
}  // namespace

namespace {
// When a record's effect on the address space happened, as far as the host
// call tells: a release at the latest when its call began, an allocation at
// the latest when its call returned. A release of P on one thread therefore
// always sorts before the allocation that gets P again on another.
uint64_t effect_time(const Record& r) {
  const bool release = r.kind == Kind::Free || r.kind == Kind::VmmUnmap || r.kind == Kind::VmmRelease;
  return release ? r.start : r.end;
}
}  // namespace

namespace {
// Without a sink: the statistics only.
class NoEvents final : public EventSink {
 public:
  void event(const formats::Event&) override {}
  void flow(const formats::Flow&) override {}
  void counter(const formats::Counter&) override {}
};
NoEvents g_no_events;
}  // namespace

Session::Session(const SessionLimits& limits, EventSink* sink, const TraceSetup& setup, TraceNames* names,
                 std::shared_ptr<MemoryFeed> shared)
    : limits_(limits),
      own_feed_(shared == nullptr),
      feed_(shared ? std::move(shared) : std::make_shared<MemoryFeed>(limits.mem_max_entries)),
      own_names_(names ? nullptr : std::make_unique<TraceNames>(nullptr)),
      builder_(std::make_unique<TraceBuilder>(setup, names ? *names : *own_names_, sink ? *sink : g_no_events)) {
  if (own_feed_) feed_->on_point([this](const MemoryPoint& p) { memory_point(p); });
  builder_->on_device([this](const DeviceRecord& d, const CallOrigin& o) { placed(d, o); });
}

void Session::placed(const DeviceRecord& d, const CallOrigin& o) {
  const uint64_t dur = d.end >= d.start ? d.end - d.start : 0;
  sum_valid_ = false;
  if (limits_.by_stack) {
    Tally::StackTime& t = cur_.device_by_stack[uint64_t(o.joined ? o.stack : 0) << 32 | d.name];
    t.time += dur;
    ++t.calls;
  }
  if (!o.joined) return;
  if (o.range != 0) {
    const uint32_t key = cur_.regions.size() >= kMaxRegions && !cur_.regions.count(o.range) ? kOtherRegions : o.range;
    cur_.regions[key].device_self += dur;
  }
  if (o.step < steps_ended_) {
    cur_.steps.device_self += dur;
  } else if (step_device_waiting_.size() < 4096 || step_device_waiting_.count(o.step)) {
    step_device_waiting_[o.step] += dur;
  }
}

void Session::consume(const Record& r) {
  if (r.kind == Kind::Nvtx) {
    // A range the program annotated, not a CUDA call: a region's row.
    uint32_t key = r.range != 0 ? r.range : r.name;
    // Programs that put ids in range names make a new name each time: past
    // a bound, the rest share one row.
    if (cur_.regions.size() >= kMaxRegions && !cur_.regions.count(key)) key = kOtherRegions;
    RegionStats& g = cur_.regions[key];
    ++g.calls;
    g.host += r.end >= r.start ? r.end - r.start : 0;
    sum_valid_ = false;
    builder_->nvtx(r);
    return;
  }
  ++cur_.consumed;
  ++run_consumed_;
  sum_valid_ = false;
  const uint64_t dur = r.end >= r.start ? r.end - r.start : 0;
  ApiStats& s = cur_.api[r.api < kApiCount ? r.api : 0];
  ++s.calls;
  s.total += dur;
  s.min = std::min(s.min, dur);
  s.max = std::max(s.max, dur);
  if (r.result != 0) ++s.errors;
  cur_.first = std::min(cur_.first, r.start);
  cur_.last = std::max(cur_.last, r.end);
  if (limits_.by_stack && r.stack != 0) {
    Tally::StackTime& t = cur_.host_by_stack[uint64_t(r.stack) << 32 | r.api];
    t.time += dur;
    ++t.calls;
  }
  builder_->host(r);
  if (own_feed_) feed_->consume(r);
}

void Session::step(uint64_t number, uint64_t start, uint64_t end, uint32_t tid) {
  builder_->step(number, start, end, tid);
  ++cur_.steps.calls;
  cur_.steps.host += end >= start ? end - start : 0;
  sum_valid_ = false;
  if (number + 1 > steps_ended_) steps_ended_ = number + 1;
  // Work of the steps that have ended, waiting for it, is theirs now.
  for (auto it = step_device_waiting_.begin(); it != step_device_waiting_.end() && it->first < steps_ended_;) {
    cur_.steps.device_self += it->second;
    it = step_device_waiting_.erase(it);
  }
  if (run_.steps.size() < RunLog::kMaxSteps) run_.steps.push_back({number, start, end, tid});
  else run_.steps_complete = false;
}

void Session::memory_point(const MemoryPoint& p) {
  builder_->memory_point(p);
  if (run_.points.size() < RunLog::kMaxPoints) run_.points.push_back(p);
  else run_.points_complete = false;
}

void Session::advance(const TimeMap& time, uint64_t now_ns) {
  builder_->set_time(time);
  builder_->advance(now_ns);
}

void Session::finish_timeline() { builder_->flush(); }

void MemoryFeed::consume(const Record& r) {
  if (!is_memory_kind(r.kind)) return;
  // Everything that can run out of memory happens before the record is
  // placed, so a failure loses the record and nothing else, and apply()
  // never allocates.
  grow_for_one(pending_memory_, pending_memory_.size());
  grow_for_one(free_slots_, pending_slots_.size());
  const uint64_t time = effect_time(r);
  const bool in_order = in_order_head_ == in_order_.size() || in_order_.back().time <= time;
  if (in_order) {
    // The taken keys go when all are taken, or when they are most of them
    // (a feed that never empties must not keep them all).
    if (in_order_head_ == in_order_.size() || (in_order_head_ >= 4096 && 2 * in_order_head_ >= in_order_.size())) {
      in_order_.erase(in_order_.begin(), in_order_.begin() + static_cast<std::ptrdiff_t>(in_order_head_));
      in_order_head_ = 0;
    }
    grow_for_one(in_order_, in_order_.size());
  }
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    pending_slots_[slot] = r;
  } else {
    slot = static_cast<uint32_t>(pending_slots_.size());
    pending_slots_.push_back(r);
  }
  const PendingKey key{time, memory_arrivals_++, slot};
  if (in_order) {
    in_order_.push_back(key);
  } else {
    pending_memory_.push_back(key);
    std::push_heap(pending_memory_.begin(), pending_memory_.end(), std::greater<>());
  }
}

void MemoryFeed::apply(uint64_t horizon) {
  // Same effect time: in the order they were drained (as a stable sort would).
  for (;;) {
    const bool heap = !pending_memory_.empty() && pending_memory_.front().time < horizon;
    const bool line = in_order_head_ < in_order_.size() && in_order_[in_order_head_].time < horizon;
    if (!heap && !line) break;
    uint32_t slot;
    if (line && (!heap || pending_memory_.front() > in_order_[in_order_head_])) {
      slot = in_order_[in_order_head_++].slot;
    } else {
      std::pop_heap(pending_memory_.begin(), pending_memory_.end(), std::greater<>());
      slot = pending_memory_.back().slot;
      pending_memory_.pop_back();
    }
    // The slot is free again before the record is applied: if applying runs
    // out of memory, the record is lost with the pass (the collector counts
    // failed passes), the slot is not.
    free_slots_.push_back(slot);
    memory_.on_record(pending_slots_[slot]);
  }
}

void Session::consume(const DeviceRecord& d, const CorrelationLink* link) {
  ++cur_.device_consumed;
  sum_valid_ = false;
  const uint64_t dur = d.end >= d.start ? d.end - d.start : 0;
  DeviceStats& s = cur_.device[d.name];
  s.kind = d.kind;
  ++s.calls;
  s.total += dur;
  s.min = std::min(s.min, dur);
  s.max = std::max(s.max, dur);
  builder_->device(d, link);
}

void Tally::add(const Tally& o) {
  for (size_t i = 0; i < api.size(); ++i) {
    ApiStats& a = api[i];
    const ApiStats& b = o.api[i];
    a.calls += b.calls;
    a.total += b.total;
    a.min = std::min(a.min, b.min);
    a.max = std::max(a.max, b.max);
    a.errors += b.errors;
  }
  for (const auto& [path, b] : o.regions) regions[path].add(b);
  steps.add(o.steps);
  for (const auto& [k, v] : o.device_by_stack) {
    device_by_stack[k].time += v.time;
    device_by_stack[k].calls += v.calls;
  }
  for (const auto& [k, v] : o.host_by_stack) {
    host_by_stack[k].time += v.time;
    host_by_stack[k].calls += v.calls;
  }
  for (const auto& [name, b] : o.device) {
    DeviceStats& a = device[name];
    a.kind = b.kind;
    a.calls += b.calls;
    a.total += b.total;
    a.min = std::min(a.min, b.min);
    a.max = std::max(a.max, b.max);
  }
  consumed += o.consumed;
  device_consumed += o.device_consumed;
  first = std::min(first, o.first);
  last = std::max(last, o.last);
  since_ns = since_ns ? std::min(since_ns, o.since_ns) : o.since_ns;
}

void Session::cut_slice(size_t keep, uint64_t now_ns) {
  if (cur_.since_ns == 0) cur_.since_ns = now_ns;  // the first slice began with the run
  slices_.push_back(std::move(cur_));
  cur_ = Tally{};
  cur_.since_ns = now_ns;
  while (keep != 0 && slices_.size() + 1 > keep) slices_.pop_front();
  sum_valid_ = false;
}

const Tally& Session::tally() const {
  if (slices_.empty()) return cur_;
  if (!sum_valid_) {
    sum_ = Tally{};
    for (const Tally& t : slices_) sum_.add(t);
    sum_.add(cur_);
    sum_valid_ = true;
  }
  return sum_;
}

void Session::forget_before(uint64_t ticks) {
  feed_->forget_before(ticks);
  const auto old_step = [&](const RunLog::Step& st) { return st.start < ticks; };
  run_.steps.erase(run_.steps.begin(), std::find_if_not(run_.steps.begin(), run_.steps.end(), old_step));
  const auto old_point = [&](const MemoryPoint& p) { return p.ticks < ticks; };
  run_.points.erase(run_.points.begin(), std::find_if_not(run_.points.begin(), run_.points.end(), old_point));
}

void Session::note_thread(uint32_t tid, const char* name) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) threads_.emplace(tid, name ? name : "");
}

}  // namespace nb
