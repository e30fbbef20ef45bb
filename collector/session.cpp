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

void Session::consume(const Record& r) {
  if (r.kind == Kind::Nvtx) {
    // A range the program annotated, not a CUDA call: no table row.
    nvtx_.push_back(r);
    return;
  }
  ++consumed_;
  const uint64_t dur = r.end >= r.start ? r.end - r.start : 0;
  ApiStats& s = api_stats_[r.api < kApiCount ? r.api : 0];
  ++s.calls;
  s.total += dur;
  s.min = std::min(s.min, dur);
  s.max = std::max(s.max, dur);
  if (r.result != 0) ++s.errors;
  first_ = std::min(first_, r.start);
  last_ = std::max(last_, r.end);

  if (records_.size() < limits_.trace_max_events) records_.push_back(r);
  else ++trace_overflow_;
  if (own_feed_) feed_->consume(r);
}

void MemoryFeed::consume(const Record& r) {
  if (!is_memory_kind(r.kind)) return;
  // Everything that can run out of memory happens before the record is
  // placed, so a failure loses the record and nothing else, and apply()
  // never allocates.
  grow_for_one(pending_memory_, pending_memory_.size());
  grow_for_one(free_slots_, pending_slots_.size());
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    pending_slots_[slot] = r;
  } else {
    slot = static_cast<uint32_t>(pending_slots_.size());
    pending_slots_.push_back(r);
  }
  pending_memory_.push_back({effect_time(r), memory_arrivals_++, slot});
  std::push_heap(pending_memory_.begin(), pending_memory_.end(), std::greater<>());
}

void MemoryFeed::apply(uint64_t horizon) {
  // Same effect time: in the order they were drained (as a stable sort would).
  while (!pending_memory_.empty() && pending_memory_.front().time < horizon) {
    std::pop_heap(pending_memory_.begin(), pending_memory_.end(), std::greater<>());
    const uint32_t slot = pending_memory_.back().slot;
    pending_memory_.pop_back();
    // The slot is free again before the record is applied: if applying runs
    // out of memory, the record is lost with the pass (the collector counts
    // failed passes), the slot is not.
    free_slots_.push_back(slot);
    memory_.on_record(pending_slots_[slot]);
  }
}

void Session::consume(const DeviceRecord& d) {
  ++device_consumed_;
  const uint64_t dur = d.end >= d.start ? d.end - d.start : 0;
  DeviceStats& s = device_stats_[d.name];
  s.kind = d.kind;
  ++s.calls;
  s.total += dur;
  s.min = std::min(s.min, dur);
  s.max = std::max(s.max, dur);
  if (device_.size() < limits_.trace_max_events) device_.push_back(d);
  else ++device_overflow_;
}

void Session::note_thread(uint32_t tid, const char* name) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) threads_.emplace(tid, name ? name : "");
}

}  // namespace nb
