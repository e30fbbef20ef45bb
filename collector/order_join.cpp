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
  h.tid = r.tid;
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

uint64_t OrderJoin::widen(uint32_t id) {
  // Nearest to the ids seen so far: just past a wrap, or a late one from
  // just before it.
  constexpr uint64_t kHalf = 1ull << 31, kWrap = 1ull << 32;
  uint64_t w = (high_water_ & ~(kWrap - 1)) | id;
  if (w + kHalf < high_water_) {
    w += kWrap;
  } else if (w > high_water_ + kHalf && w >= kWrap) {
    w -= kWrap;
  }
  high_water_ = std::max(high_water_, w);
  return w;
}

void OrderJoin::add(const DeviceRecord& d, uint64_t arrival_ns) {
  const uint64_t id = d.correlation == 0 ? 0 : widen(d.correlation);
  waiting_.emplace(id, Pending{d, id, arrival_ns});
}

bool OrderJoin::dense() const { return forward_seen_ >= 32 && gap_rate_ < 0.1; }

void OrderJoin::advance(const Now& now, Pass pass, const Emit& emit) {
  while (!waiting_.empty()) {
    auto it = waiting_.begin();
    const Pending& p = it->second;
    if (pass != Pass::Final) {
      // The call that made it may still be returning (a synchronous copy
      // returns just after its work ends): wait for a drain after that.
      if (std::max(p.d.start, p.d.end) + config_.settle_ns > now.drained_ns) break;
      const bool waited = now.now_ns >= p.arrival_ns && now.now_ns - p.arrival_ns >= config_.hold_ns;
      // Or it is still in its call: a thread can be taken off the CPU
      // between the work and the return for longer than any settle time.
      // (Not at a window's deadline: a call that blocks for long, a copy
      // behind a deep queue, would keep records out of the window.)
      if (pass == Pass::Normal && !waited && now.in_call_ns <= p.d.start + config_.slack_ns) break;
      if (pass == Pass::Normal && !waited) {
        // An id before it has not come yet (another stream's buffer, work
        // still running), or none after it has: the records around a
        // record say which call it is (the guards in the header).
        if (p.id > last_id_ + 1) break;
        if (std::next(it) == waiting_.end()) break;
      }
    }
    const Pending q = p;
    waiting_.erase(it);
    const Link l = place(q);
    if (emit) emit(q.d, l);
  }
  prune();
}

OrderJoin::Link OrderJoin::place(const Pending& q) {
  if (q.id == 0) {
    ++counts_.unjoined;
    return {};
  }
  auto same = linked_.find(q.id);
  if (same != linked_.end()) {
    // Another record of a call already placed (a graph launch's nodes).
    ++(same->second.link.joined ? counts_.joined : counts_.unjoined);
    return same->second.link;
  }
  const bool in_order = q.id > last_id_;
  const Link l = in_order ? forward(q) : late(q);
  if (in_order) last_id_ = q.id;
  if (!l.joined) linked_[q.id] = Linked{l, 0, 0};  // its other records: the same answer
  return l;
}

OrderJoin::Link OrderJoin::forward(const Pending& q) {
  const DeviceRecord& d = q.d;
  const uint64_t gap = q.id - last_id_ - 1;
  ++forward_seen_;
  gap_rate_ = 0.95 * gap_rate_ + 0.05 * (gap > 0 ? 1.0 : 0.0);
  // Dense ids and a few skipped: records CUPTI dropped, whose calls are
  // among the open ones. The fitting call with that many passed over
  // before it is the one.
  const bool positional = gap > 0 && gap <= config_.max_positional_gap && dense();
  // Calls that began after the work began cannot have made it.
  const uint64_t limit = d.start + config_.slack_ns;
  std::vector<uint64_t>& ends = ends_;  // min-heap of the ends of the calls looked at
  ends.clear();
  uint64_t passed = 0;         // looked at, and over before the current one began
  auto first_fit = open_.end(), first = open_.end();
  uint64_t first_fit_passed = 0;
  size_t looked = 0;
  for (auto it = open_.begin(); it != open_.end() && it->first.first <= limit && looked < config_.lookahead;
       ++it, ++looked) {
    const Host& h = it->second->h;
    while (!ends.empty() && ends.front() < h.start_ns) {
      std::pop_heap(ends.begin(), ends.end(), std::greater<>());
      ends.pop_back();
      ++passed;
    }
    if (first == open_.end()) first = it;
    if (order_join_fits(h, d, true)) {
      if (positional && passed == gap) return take(it, q.id);
      if (first_fit == open_.end()) {
        first_fit = it;
        first_fit_passed = passed;
      }
      if (!positional || passed > gap) break;
    }
    ends.push_back(h.end_ns);
    std::push_heap(ends.begin(), ends.end(), std::greater<>());
  }
  if (first_fit != open_.end()) {
    // More calls passed over than ids skipped (with dense ids, each call
    // that made work took one): a call before it that nb did not record
    // made this work. If the records after this one fit the passed-over
    // calls, taking it would shift them all.
    if (first_fit_passed > gap && dense() && next_records_fit(first_fit, q.id)) {
      ++counts_.refused;
      ++counts_.unjoined;
      return {};
    }
    return take(first_fit, q.id);
  }
  // None fits in every detail (a copy CUPTI counts differently, say). If
  // no id was skipped before this one, the next open call is the one, as
  // long as it made this kind of work and the next record does not fit it.
  if (first != open_.end() && gap == 0 && order_join_fits(first->second->h, d, false) &&
      !next_record_fits(first->second->h, q.id)) {
    ++counts_.weak;
    return take(first, q.id);
  }
  ++counts_.unjoined;
  return {};
}

namespace {
// A fit that proves something: every detail known on the host side (a
// detail the hook could not read fits anything).
bool fits_known(const OrderJoin::Host& h, const DeviceRecord& d) {
  const bool known = h.kind == Kind::Launch ? h.name != 0 && (h.grid[0] | h.grid[1] | h.grid[2]) != 0
                                            : h.kind == Kind::Graph || h.bytes != 0;
  return known && order_join_fits(h, d, true);
}
}  // namespace

bool OrderJoin::next_records_fit(Open::iterator chosen, uint64_t id) const {
  // The calls that taking `chosen` would pass over, in time order (three
  // at most), against the records after `id`, in id order.
  const Host& c = chosen->second->h;
  std::vector<const Host*> passed;
  for (auto it = open_.begin(); it != chosen && passed.size() < 3; ++it) {
    if (it->second->h.end_ns < c.start_ns) passed.push_back(&it->second->h);
  }
  if (passed.empty()) return false;
  auto next = waiting_.upper_bound(id);
  for (const Host* h : passed) {
    if (next == waiting_.end() || !fits_known(*h, next->second.d)) return false;
    next = waiting_.upper_bound(next->first);
  }
  return true;
}

bool OrderJoin::next_record_fits(const Host& h, uint64_t id) const {
  auto next = waiting_.upper_bound(id);
  return next != waiting_.end() && fits_known(h, next->second.d);
}

OrderJoin::Link OrderJoin::take(Open::iterator it, uint64_t id) {
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
  return link(calls_.find(key), id);
}

OrderJoin::Link OrderJoin::link(Calls::iterator it, uint64_t id) {
  const Host& h = it->second.h;
  const Link l{true, h.id, h.window, h.tid, h.start_ns};
  linked_[id] = Linked{l, h.start_ns, h.end_ns};
  calls_.erase(it);
  ++counts_.joined;
  return l;
}

OrderJoin::Link OrderJoin::late(const Pending& q) {
  // Its call lies between the calls of the joined ids around it: it ended
  // after the one before began, and began before the one after ended.
  uint64_t lo = 0, hi = UINT64_MAX;
  for (auto after = linked_.upper_bound(q.id); after != linked_.end(); ++after) {
    if (after->second.link.joined) {
      hi = after->second.end_ns;
      break;
    }
  }
  for (auto before = linked_.lower_bound(q.id); before != linked_.begin();) {
    --before;
    if (before->second.link.joined) {
      lo = before->second.start_ns;
      break;
    }
  }
  const uint64_t limit = std::min(hi, q.d.start + config_.slack_ns);
  auto it = calls_.lower_bound(Key{lo, 0});
  // Calls of other threads that began a little before and overlap.
  for (size_t back = 0; back < 64 && it != calls_.begin(); ++back) --it;
  for (size_t looked = 0; it != calls_.end() && it->first.first <= limit && looked < 4 * config_.lookahead;
       ++it, ++looked) {
    Call& c = it->second;
    if (c.h.end_ns < lo || !order_join_fits(c.h, q.d, true)) continue;
    if (c.open) open_.erase(it->first);
    ++counts_.late;
    return link(it, q.id);
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
  while (!linked_.empty() && (linked_.size() > config_.max_linked ||
                              linked_.begin()->second.end_ns + config_.keep_ns < newest_start_)) {
    linked_.erase(linked_.begin());
  }
}

}  // namespace nb
