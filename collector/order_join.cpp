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
  h.range = r.range;
  h.step = r.step;
  h.stack = r.stack;
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

OrderJoin::OrderJoin(const Config& c) : config_(c) {
  // Its room up front (pages are touched as it fills): growing by doubling
  // would hold the old and the new copy at once.
  linked_.v.reserve(config_.max_linked + config_.max_linked / 3 + 4097);
  open_.v.reserve(2 * config_.max_calls + 4097);  // live calls, and the holes of those taken
}

void OrderJoin::add(const Host& h) {
  incoming_.push_back(Slot{Key{h.start_ns, h.id}, h, true});
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
  arriving_.push_back(Pending{d, id, arrival_ns});
}

namespace {
// Appends `more` (any order) to `line` (sorted by `less`), keeping it sorted;
// equal elements keep their order, those already in `line` first. Returns
// where the first new element went (an index of line.v): a thread's calls
// and a stream's records come in order, so most passes only append.
template <typename Line, typename T, typename Less>
size_t merge_in(Line& line, std::vector<T>& more, Less less) {
  if (!std::is_sorted(more.begin(), more.end(), less)) std::stable_sort(more.begin(), more.end(), less);
  const size_t old = line.v.size();
  const bool append = line.empty() || !less(more.front(), line.back());
  const size_t from =
      append ? old : static_cast<size_t>(std::upper_bound(line.begin(), line.end(), more.front(), less) - line.v.begin());
  line.v.insert(line.v.end(), more.begin(), more.end());
  if (!append) {
    std::inplace_merge(line.v.begin() + static_cast<std::ptrdiff_t>(from),
                       line.v.begin() + static_cast<std::ptrdiff_t>(old), line.v.end(), less);
  }
  more.clear();
  return from;
}
}  // namespace

void OrderJoin::merge_arrivals() {
  if (!incoming_.empty()) {
    const size_t added = incoming_.size();
    const size_t from = merge_in(open_, incoming_, [](const Slot& a, const Slot& b) { return a.key < b.key; });
    // The same record twice (kept: the first), or one still kept as passed over.
    size_t out = from;
    for (size_t i = from; i < open_.v.size(); ++i) {
      Slot& s = open_.v[i];
      const bool twice = s.live && ((out > open_.head && open_.v[out - 1].live && open_.v[out - 1].key == s.key) ||
                                    passed_.count(s.key) != 0);
      if (twice) continue;
      if (out != i) open_.v[out] = s;
      ++out;
    }
    open_live_ += added - (open_.v.size() - out);
    open_.v.resize(out);
  }
  if (!arriving_.empty()) merge_in(waiting_, arriving_, [](const Pending& a, const Pending& b) { return a.id < b.id; });
}

bool OrderJoin::dense() const { return forward_seen_ >= 32 && gap_rate_ < 0.1; }

void OrderJoin::advance(const Now& now, Pass pass, const Emit& emit) {
  pass_ = pass;
  merge_arrivals();
  while (!waiting_.empty()) {
    const Pending& p = waiting_.front();
    const bool hurry = waiting_.size() > config_.max_waiting;
    if (pass != Pass::Final && !hurry) {
      // The call that made it may still be returning (a synchronous copy
      // returns just after its work ends): wait for a drain after that.
      if (std::max(p.d.start, p.d.end) + config_.settle_ns + lag_ns_ > now.drained_ns) break;
      const bool waited = now.now_ns >= p.arrival_ns && now.now_ns - p.arrival_ns >= config_.hold_ns;
      // Or it is still in its call: a thread can be taken off the CPU
      // between the work and the return for longer than any settle time.
      // (Not at a window's deadline: a call that blocks for long, a copy
      // behind a deep queue, would keep records out of the window.)
      if (pass == Pass::Normal && !waited && now.in_call_ns <= limit(p.d)) break;
      if (pass == Pass::Normal && !waited) {
        // An id before it has not come yet (another stream's buffer, work
        // still running), or none after it has: the records around a
        // record say which call it is (the guards in the header).
        if (p.id > last_id_ + 1) break;
        if (waiting_.size() == 1) break;
      }
    }
    if (hurry && pass != Pass::Final) ++counts_.hurried;
    const Pending q = p;
    waiting_.pop_front();
    const Link l = place(q);
    if (emit) emit(q.d, l);
  }
  prune();
}

std::vector<std::pair<uint64_t, OrderJoin::Linked>>::iterator OrderJoin::linked_at(uint64_t id) {
  return std::lower_bound(linked_.begin(), linked_.end(), id,
                          [](const std::pair<uint64_t, Linked>& e, uint64_t v) { return e.first < v; });
}

std::vector<OrderJoin::Pending>::const_iterator OrderJoin::waiting_after(uint64_t id) const {
  return std::upper_bound(waiting_.begin(), waiting_.end(), id, [](uint64_t x, const Pending& p) { return x < p.id; });
}

void OrderJoin::remember(uint64_t id, const Linked& l) {
  // Ids are placed in order but for late records: most go at the back.
  if (linked_.size() >= config_.max_linked) linked_.pop_front();  // the oldest id
  if (linked_.empty() || linked_.back().first < id) {
    linked_.v.emplace_back(id, l);
    return;
  }
  auto it = linked_at(id);
  if (it != linked_.end() && it->first == id) it->second = l;
  else linked_.v.insert(it, {id, l});
}

OrderJoin::Link OrderJoin::place(const Pending& q) {
  if (q.id == 0) {
    ++counts_.unjoined;
    return {};
  }
  if (!linked_.empty() && q.id <= linked_.back().first) {
    auto same = linked_at(q.id);
    if (same != linked_.end() && same->first == q.id) {
      // Another record of a call already placed (a graph launch's nodes).
      ++(same->second.link.joined ? counts_.joined : counts_.unjoined);
      return same->second.link;
    }
  }
  const bool in_order = q.id > last_id_;
  const Link l = in_order ? forward(q) : late(q);
  if (in_order) last_id_ = q.id;
  if (!l.joined) remember(q.id, Linked{l, 0, 0});  // its other records: the same answer
  return l;
}

OrderJoin::Link OrderJoin::forward(const Pending& q) {
  const DeviceRecord& d = q.d;
  const uint64_t gap = q.id - last_id_ - 1;
  ++forward_seen_;
  gap_rate_ = 0.95 * gap_rate_ + 0.05 * (gap > 0 ? 1.0 : 0.0);
  // Dense ids and some skipped: records CUPTI dropped, or records not
  // handed over yet, whose calls are among the open ones. The fitting call
  // with that many passed over before it is the one, else (a few skipped)
  // the first fitting call. Not for the first record after recording
  // resumed: its gap is the ids of the calls made while nb was dormant.
  // (The mark stays until a call made after the re-arm is taken: work
  // queued before the dormant stretch can run after it began.)
  const bool after_resume = resumed_ && limit(d) >= resume_ns_;
  const bool positional = gap > 0 && dense() && !after_resume;
  // At a window's deadline, past a few skipped, only that call will do:
  // the first fitting call may be an earlier call of the same kernel (a
  // layer repeats), and every record after it would shift by the gap.
  // (Elsewhere a record that waited that long takes the first fitting
  // call, as the ids may have been taken by calls nb did not record.)
  const bool deadline = pass_ == Pass::NoWait;
  // Calls that began after the work began cannot have made it.
  const uint64_t limit = this->limit(d);
  std::vector<uint64_t>& ends = ends_;  // min-heap of the ends of the calls looked at
  ends.clear();
  uint64_t passed = 0;         // looked at, and over before the current one began
  constexpr size_t kNone = SIZE_MAX;
  size_t first_fit = kNone, first = kNone;
  uint64_t first_fit_passed = 0;
  size_t looked = 0;
  // The place rule looks as far as the gap and a lookahead past it: a run
  // of lost records (a CUPTI buffer dropped whole) would otherwise leave
  // every later record a gap's worth of calls early. Once per gap.
  const size_t max_looked =
      config_.lookahead + (positional ? static_cast<size_t>(std::min<uint64_t>(gap, config_.max_calls)) : 0);
  for (size_t i = 0; i < open_.size() && open_[i].key.first <= limit && looked < max_looked; ++i) {
    if (!open_[i].live) continue;
    ++looked;
    const Host& h = open_[i].h;
    while (!ends.empty() && ends.front() < h.start_ns) {
      std::pop_heap(ends.begin(), ends.end(), std::greater<>());
      ends.pop_back();
      ++passed;
    }
    if (first == kNone) first = i;
    if (order_join_fits(h, d, true)) {
      if (positional && passed == gap) {
        measure(i, d);
        return take(i, q.id);
      }
      if (first_fit == kNone) {
        first_fit = i;
        first_fit_passed = passed;
      }
      if (!positional || passed > gap) break;
    }
    ends.push_back(h.end_ns);
    std::push_heap(ends.begin(), ends.end(), std::greater<>());
  }
  if (first_fit != kNone) {
    // More calls passed over than ids skipped (with dense ids, each call
    // that made work took one): a call before it that nb did not record
    // made this work. If the records after this one fit the passed-over
    // calls, taking it would shift them all.
    if (first_fit_passed > gap && dense() && next_records_fit(first_fit, q.id)) {
      ++counts_.refused;
      ++counts_.unjoined;
      return {};
    }
    if (deadline && positional && gap > config_.max_positional_gap && first_fit_passed < gap) {
      ++counts_.unjoined;  // too far from where its id says
      return {};
    }
    measure(first_fit, d);
    return take(first_fit, q.id);
  }
  // None fits in every detail (a copy CUPTI counts differently, say). If
  // no id was skipped before this one, the next open call is the one, as
  // long as it made this kind of work and the next record does not fit it.
  if (first != kNone && gap == 0) {
    const Host& h = open_[first].h;
    // Never a kernel onto a launch of another kernel, both names known.
    const bool other_kernel = d.kind == DeviceKind::Kernel && d.graph_id == 0 && h.name != 0 && d.raw_name != 0 &&
                              h.name != d.raw_name;
    if (!other_kernel && order_join_fits(h, d, false) && !next_record_fits(h, q.id)) {
      ++counts_.weak;
      return take(first, q.id);
    }
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

bool OrderJoin::next_records_fit(size_t chosen, uint64_t id) const {
  // The calls that taking `chosen` would pass over, in time order (three
  // at most), against the records after `id`, in id order.
  const Host& c = open_[chosen].h;
  const Host* passed[3];
  size_t n = 0;
  for (size_t i = 0; i < chosen && n < 3; ++i) {
    if (open_[i].live && open_[i].h.end_ns < c.start_ns) passed[n++] = &open_[i].h;
  }
  if (n == 0) return false;
  auto next = waiting_after(id);
  for (size_t k = 0; k < n; ++k) {
    if (next == waiting_.end() || !fits_known(*passed[k], next->d)) return false;
    next = waiting_after(next->id);
  }
  return true;
}

bool OrderJoin::next_record_fits(const Host& h, uint64_t id) const {
  auto next = waiting_after(id);
  return next != waiting_.end() && fits_known(h, next->d);
}

void OrderJoin::measure(size_t chosen, const DeviceRecord& d) {
  const Host& h = open_[chosen].h;
  if (!fits_known(h, d) || d.graph_id != 0) return;  // a graph's nodes start whenever
  const int64_t behind = static_cast<int64_t>(d.start) - static_cast<int64_t>(h.start_ns);
  if (h.start_ns < lag_span_end_ && behind >= lag_span_min_) return;  // changes nothing: most joins
  if (behind < 0) {
    // Work before its call: drift, or a wrong join onto a later call of
    // the same kernel (its own call's record lost), which would widen the
    // reach for the next wrong join to go further. Only a join that could
    // hardly have been another counts: no other call that fits begins
    // within twice the reach after it. (After a scan that found one, none
    // for calls before that one: a dense loop would scan on every join.)
    if (h.start_ns < lag_scan_after_) return;
    const uint64_t reach = config_.slack_ns + lag_ns_;
    const uint64_t clear_until = h.start_ns + 2 * reach + 50000;
    if (newest_start_ <= clear_until) return;  // the calls after it are not all in yet
    size_t looked = 0;
    for (size_t j = chosen + 1; j < open_.size() && open_[j].key.first <= clear_until; ++j) {
      if (!open_[j].live) continue;
      if (++looked > 64 || order_join_fits(open_[j].h, d, true)) {
        lag_scan_after_ = open_[j].h.start_ns;
        return;
      }
    }
  }
  // The least over the last one to two spans of kLagSpanNs of calls (by
  // their start, which grows with the ids, as records are placed; a
  // record's own start may lie far after its call's): most work waits in a
  // queue and starts late; what started at once after its call says how
  // far the clocks are apart. A drift that grows is followed at once, one
  // that shrinks forgotten after two spans with joins.
  if (h.start_ns >= lag_span_end_) {
    lag_prev_min_ = lag_span_min_;
    lag_span_min_ = INT64_MAX;
    lag_span_end_ = h.start_ns + kLagSpanNs;
  }
  lag_span_min_ = std::min(lag_span_min_, behind);
  const int64_t least = std::min(lag_span_min_, lag_prev_min_);
  lag_ns_ = least >= 0 ? 0 : std::min<uint64_t>(static_cast<uint64_t>(-least), config_.max_lag_ns);
  counts_.max_lag_ns = std::max(counts_.max_lag_ns, lag_ns_);
}

OrderJoin::Link OrderJoin::take(size_t i, uint64_t id) {
  const Host h = open_[i].h;
  if (resumed_ && h.start_ns >= resume_ns_) resumed_ = false;
  // Open calls that returned before this one began took smaller ids, all
  // of which have been placed: they made no device record (or theirs comes
  // late, and is placed between its neighbours then).
  for (size_t j = 0; j < i; ++j) {
    Slot& s = open_[j];
    if (s.live && s.h.end_ns < h.start_ns) {
      passed_.emplace(s.key, s.h);
      s.live = false;
      --open_live_;
    }
  }
  open_[i].live = false;
  --open_live_;
  while (!open_.empty() && !open_.front().live) open_.pop_front();
  return link(h, id);
}

OrderJoin::Link OrderJoin::link(const Host& h, uint64_t id) {
  const Link l{true, h.id, h.window, h.tid, h.start_ns, h.range, h.step, h.stack};
  remember(id, Linked{l, h.start_ns, h.end_ns});
  ++counts_.joined;
  return l;
}

OrderJoin::Link OrderJoin::late(const Pending& q) {
  // Its call lies between the calls of the joined ids around it: it ended
  // after the one before began, and began before the one after ended.
  uint64_t lo = 0, hi = UINT64_MAX;
  auto at = linked_at(q.id);
  for (auto after = at; after != linked_.end(); ++after) {
    if (after->first > q.id && after->second.link.joined) {
      hi = after->second.end_ns;
      break;
    }
  }
  for (auto before = at; before != linked_.begin();) {
    --before;
    if (before->second.link.joined) {
      lo = before->second.start_ns;
      break;
    }
  }
  const uint64_t limit = std::min(hi, this->limit(q.d));
  // The calls kept (open and passed over) as one sequence in time order:
  // from the first at or after `lo`, back 64 (calls of other threads that
  // began a little before and overlap), then forward.
  const Key from{lo, 0};
  size_t o = static_cast<size_t>(std::lower_bound(open_.begin(), open_.end(), from,
                                                  [](const Slot& s, const Key& k) { return s.key < k; }) -
                                 open_.begin());
  auto p = passed_.lower_bound(from);
  const auto prev_live = [this](size_t i) {  // the live slot before i, or SIZE_MAX
    while (i > 0) {
      if (open_[--i].live) return i;
    }
    return SIZE_MAX;
  };
  for (size_t back = 0; back < 64; ++back) {
    const size_t po = prev_live(o);
    const bool has_p = p != passed_.begin();
    if (po == SIZE_MAX && !has_p) break;
    if (po != SIZE_MAX && (!has_p || std::prev(p)->first < open_[po].key)) o = po;
    else --p;
  }
  for (size_t looked = 0; looked < 4 * config_.lookahead; ++looked) {
    while (o < open_.size() && !open_[o].live) ++o;
    const bool has_o = o < open_.size(), has_p = p != passed_.end();
    if (!has_o && !has_p) break;
    const bool use_o = has_o && (!has_p || open_[o].key < p->first);
    const Host& h = use_o ? open_[o].h : p->second;
    if (h.start_ns > limit) break;
    if (h.end_ns >= lo && order_join_fits(h, q.d, true)) {
      ++counts_.late;
      const Host taken = h;
      if (use_o) {
        open_[o].live = false;
        --open_live_;
      } else {
        passed_.erase(p);
      }
      return link(taken, q.id);
    }
    if (use_o) ++o;
    else ++p;
  }
  ++counts_.unjoined;
  return {};
}

void OrderJoin::prune() {
  // Calls passed over stay a while for records that come late; calls still
  // open after much longer never got a record (and are counted).
  // Too many: calls passed over go first (only a late record can want
  // them), then the oldest open ones.
  const auto too_many = [this] { return open_live_ + passed_.size() > config_.max_calls; };
  while (!passed_.empty() && (too_many() || passed_.begin()->second.end_ns + config_.keep_ns < newest_start_)) {
    passed_.erase(passed_.begin());
  }
  while (!open_.empty()) {
    Slot& s = open_.front();
    if (s.live) {
      if (!too_many() && s.h.start_ns + config_.forget_ns >= newest_start_) break;
      --open_live_;
      ++counts_.forgotten_calls;
    }
    open_.pop_front();
  }
  while (!linked_.empty() && (linked_.size() > config_.max_linked ||
                              linked_.front().second.end_ns + config_.keep_ns < newest_start_)) {
    linked_.pop_front();
  }
}

}  // namespace nb
