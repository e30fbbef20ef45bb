#include "collector/api_join.h"

#include <algorithm>

namespace nb {

void ApiJoin::add(uint32_t tid, const Host& h) { by_thread_[tid].push_back(h); }

bool ApiJoin::match(const ApiCall& a, Host& out, uint64_t slack_ns) const {
  auto it = by_thread_.find(a.tid);
  if (it == by_thread_.end() || it->second.empty()) return false;
  const std::deque<Host>& hosts = it->second;
  const uint64_t mid = a.start_ns + (a.end_ns > a.start_ns ? (a.end_ns - a.start_ns) / 2 : 0);
  // The last call that started at or before the midpoint, and the next one.
  auto next = std::upper_bound(hosts.begin(), hosts.end(), mid,
                               [](uint64_t t, const Host& h) { return t < h.start_ns; });
  const auto distance = [mid](const Host& h) -> uint64_t {
    if (mid < h.start_ns) return h.start_ns - mid;
    if (mid > h.end_ns) return mid - h.end_ns;
    return 0;
  };
  const Host* best = nullptr;
  uint64_t best_d = 0;
  if (next != hosts.begin()) {
    best = &*(next - 1);
    best_d = distance(*best);
  }
  if (next != hosts.end() && (best == nullptr || distance(*next) < best_d)) {
    best = &*next;
    best_d = distance(*next);
  }
  if (best == nullptr || best_d > slack_ns) return false;
  out = *best;
  return true;
}

void ApiJoin::matched(uint32_t tid, const Host& h) {
  auto it = by_thread_.find(tid);
  if (it == by_thread_.end()) return;
  std::deque<Host>& q = it->second;
  while (!q.empty() && q.front().start_ns < h.start_ns) q.pop_front();
}

void ApiJoin::forget_before(uint64_t ns) {
  for (auto it = by_thread_.begin(); it != by_thread_.end();) {
    std::deque<Host>& q = it->second;
    while (!q.empty() && q.front().end_ns < ns) q.pop_front();
    it = q.empty() ? by_thread_.erase(it) : std::next(it);
  }
}

size_t ApiJoin::size() const {
  size_t n = 0;
  for (const auto& [tid, q] : by_thread_) n += q.size();
  return n;
}

}  // namespace nb
