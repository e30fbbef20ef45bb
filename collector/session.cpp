#include "collector/session.h"

#include <algorithm>

namespace nb {

void Session::consume(const Record& r) {
  ++consumed_;
  const uint64_t dur = r.end_ns >= r.start_ns ? r.end_ns - r.start_ns : 0;
  ApiStats& s = api_stats_[r.api < kApiCount ? r.api : 0];
  ++s.calls;
  s.total_ns += dur;
  s.min_ns = std::min(s.min_ns, dur);
  s.max_ns = std::max(s.max_ns, dur);
  if (r.result != 0) ++s.errors;
  first_ns_ = std::min(first_ns_, r.start_ns);
  last_ns_ = std::max(last_ns_, r.end_ns);

  if (records_.size() < limits_.trace_max_events) records_.push_back(r);
  else ++trace_overflow_;
  memory_.on_record(r);
}

void Session::note_thread(uint32_t tid, const char* name) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) threads_.emplace(tid, name ? name : "");
}

}  // namespace nb
