#include "collector/order_join.h"

#include <algorithm>
#include <iterator>

namespace nb {

namespace {
bool same3(const uint32_t a[3], const int32_t b[3]) {
  return a[0] == static_cast<uint32_t>(b[0]) && a[1] == static_cast<uint32_t>(b[1]) &&
         a[2] == static_cast<uint32_t>(b[2]);
}
bool unknown3(const uint32_t a[3]) { return a[0] == 0 && a[1] == 0 && a[2] == 0; }
}  // namespace

OrderJoin::Host OrderJoin::Host::from(const Record& r, uint64_t start_ns, uint64_t end_ns, uint64_t window) {
  Host h;
  h.start_ns = start_ns;
  h.end_ns = end_ns;
  h.id = r.id;
  h.window = window;
  h.kind = r.kind;
  h.name = r.name;
  std::copy(r.grid, r.grid + 3, h.grid);
  std::copy(r.block, r.block + 3, h.block);
  h.bytes = r.bytes;
  return h;
}

bool order_join_fits(const OrderJoin::Host& h, const DeviceRecord& d, bool strict) {
  // Work a graph launch made carries the graph's id, whatever its kind.
  if (d.graph_id != 0) return h.kind == Kind::Graph;
  switch (d.kind) {
    case DeviceKind::Kernel:
      if (h.kind != Kind::Launch) return false;
      if (!strict) return true;
      // A detail the hook could not read (0) does not count against it.
      if (h.name != 0 && d.raw_name != 0 && h.name != d.raw_name) return false;
      if (!unknown3(h.grid) && !same3(h.grid, d.grid)) return false;
      if (!unknown3(h.block) && !same3(h.block, d.block)) return false;
      return true;
    case DeviceKind::Memcpy:
      return h.kind == Kind::Memcpy && (!strict || h.bytes == 0 || h.bytes == d.bytes);
    case DeviceKind::Memset:
      return h.kind == Kind::Memset && (!strict || h.bytes == 0 || h.bytes == d.bytes);
  }
  return false;
}

void OrderJoin::add(const Host& h) {
  auto [it, fresh] = calls_.emplace(Key{h.start_ns, h.id}, Call{h});
  if (!fresh) return;  // the same record twice
  open_.emplace(it->first, &it->second);
  newest_start_ = std::max(newest_start_, h.start_ns);
}

void OrderJoin::add(const DeviceRecord& d, uint64_t arrival_ns) { heap_.push(Pending{d, arrival_ns, seq_++}); }

void OrderJoin::advance(uint64_t now_ns, uint64_t drained_ns, bool force, const Emit& emit) {
  while (!heap_.empty()) {
    const Pending& p = heap_.top();
    if (!force) {
      // The call that made it may still be returning (a synchronous copy
      // returns just after its work ends): wait for a drain after that.
      if (std::max(p.d.start, p.d.end) + config_.settle_ns > drained_ns) break;
      // An id before it has not come yet: its record may still be on its
      // way (another stream's buffer, work still running).
      const uint32_t id = p.d.correlation;
      if (id > last_id_ + 1 && now_ns < p.arrival_ns + config_.hold_ns) break;
    }
    const Pending q = p;
    heap_.pop();
    const Link l = place(q.d);
    if (emit) emit(q.d, l);
  }
  prune();
}

OrderJoin::Link OrderJoin::place(const DeviceRecord& d) {
  if (d.correlation == 0) {
    ++counts_.unjoined;
    return {};
  }
  auto same = linked_.find(d.correlation);
  if (same != linked_.end()) {
    // Another record of a call already joined (a graph launch's nodes).
    ++counts_.joined;
    return same->second.link;
  }
  const Link l = d.correlation > last_id_ ? forward(d) : late(d);
  last_id_ = std::max(last_id_, d.correlation);
  return l;
}

OrderJoin::Link OrderJoin::forward(const DeviceRecord& d) {
  // The first open call, in time order, that made this kind of work with
  // these details. Calls that began after the work began cannot have made it.
  const uint64_t limit = d.start + config_.slack_ns;
  auto first = open_.end();
  size_t looked = 0;
  for (auto it = open_.begin(); it != open_.end() && it->first.first <= limit && looked < config_.lookahead;
       ++it, ++looked) {
    if (order_join_fits(it->second->h, d, true)) return take(it, d);
    if (first == open_.end()) first = it;
  }
  // None fits in every detail (a copy CUPTI counts differently, say). If
  // no id was skipped before this one, the next open call is the one, as
  // long as it made this kind of work.
  if (first != open_.end() && d.correlation == last_id_ + 1 && order_join_fits(first->second->h, d, false)) {
    ++counts_.weak;
    return take(first, d);
  }
  ++counts_.unjoined;
  return {};
}

OrderJoin::Link OrderJoin::take(Open::iterator it, const DeviceRecord& d) {
  const Key key = it->first;
  Call& c = *it->second;
  // Open calls that returned before this one began took smaller ids, all
  // of which have been placed: they made no device record (or theirs comes
  // late, and is placed between its neighbours then).
  for (auto j = open_.begin(); j != it;) {
    if (j->second->h.end_ns < c.h.start_ns) {
      j->second->open = false;
      j = open_.erase(j);
    } else {
      ++j;
    }
  }
  open_.erase(it);
  return link(calls_.find(key), d);
}

OrderJoin::Link OrderJoin::link(Calls::iterator it, const DeviceRecord& d) {
  const Host& h = it->second.h;
  const Link l{true, h.id, h.window};
  linked_[d.correlation] = Linked{l, h.start_ns, h.end_ns};
  calls_.erase(it);
  ++counts_.joined;
  return l;
}

OrderJoin::Link OrderJoin::late(const DeviceRecord& d) {
  // Its call lies between the calls of the ids around it: it ended after
  // the one before began, and began before the one after ended.
  auto after = linked_.upper_bound(d.correlation);
  uint64_t lo = 0, hi = UINT64_MAX;
  if (after != linked_.end()) hi = after->second.end_ns;
  if (after != linked_.begin()) lo = std::prev(after)->second.start_ns;
  const uint64_t limit = std::min(hi, d.start + config_.slack_ns);
  auto it = calls_.lower_bound(Key{lo, 0});
  // Calls of other threads that began a little before and overlap.
  for (size_t back = 0; back < 64 && it != calls_.begin(); ++back) --it;
  for (size_t looked = 0; it != calls_.end() && it->first.first <= limit && looked < 4 * config_.lookahead;
       ++it, ++looked) {
    Call& c = it->second;
    if (c.h.end_ns < lo || !order_join_fits(c.h, d, true)) continue;
    if (c.open) open_.erase(it->first);
    ++counts_.late;
    return link(it, d);
  }
  ++counts_.unjoined;
  return {};
}

void OrderJoin::prune() {
  // Calls passed over stay a while for records that come late; calls still
  // open after much longer never got a record (and are counted).
  while (!calls_.empty()) {
    auto it = calls_.begin();
    Call& c = it->second;
    const bool too_many = calls_.size() > config_.max_calls;
    if (c.open) {
      if (!too_many && c.h.start_ns + config_.forget_ns >= newest_start_) break;
      open_.erase(it->first);
      ++counts_.forgotten_calls;
    } else if (!too_many && c.h.end_ns + config_.keep_ns >= newest_start_) {
      break;
    }
    calls_.erase(it);
  }
  while (!linked_.empty() && linked_.begin()->second.end_ns + config_.keep_ns < newest_start_) {
    linked_.erase(linked_.begin());
  }
}

}  // namespace nb
