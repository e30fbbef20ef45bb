#include "collector/session.h"

#include <algorithm>

namespace nb {

void Session::consume(const Record& r) {
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
  memory_.on_record(r);
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
