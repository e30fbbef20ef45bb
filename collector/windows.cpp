// Recording windows: which records belong to which window, when a window is
// complete, and writing it while the program runs on.
//
// The hooks stamp every record with the number of steps ended so far
// (Record::step) and flag the call that ends one; here a step is mapped to
// a window through the schedule (schedule.h), counted from the arming step
// (NB_TRIGGER) or from the start. A window is complete when its last step
// ends; it is written a short grace later, so that calls still in flight on
// other threads when the step ended reach it, and after the device has
// finished the window's work and CUPTI has handed it over. Memory records
// feed one run-long tracker, so a window's snapshot knows what was
// allocated before it began.
#include <algorithm>
#include <thread>

#include "core/clock.h"
#include "collector/collector.h"
#include "core/log.h"

namespace nb {

namespace {
// How long after its last step ends a window waits for calls still in flight
// on other threads (their records are stamped, but published when they return).
constexpr auto kCloseGrace = std::chrono::milliseconds(30);
// Step ends kept for ProfilerStep spans of a run without windows.
constexpr size_t kMaxStepEnds = 1u << 20;
}  // namespace

StepPlan Collector::plan(uint64_t step) const {
  StepPlan p;
  if (!armed_ || step < arm_step_) return p;
  const uint64_t rel = step - arm_step_;
  if (capture_range_) {
    // Steps alternate outside / inside cudaProfilerStart..Stop; each range
    // is one step and one window.
    if ((rel & 1u) == 0) return p;
    const uint64_t n = (rel + 1) / 2;
    if (schedule_.repeat != 0 && n > schedule_.repeat) return p;
    p.action = StepAction::RecordAndSave;
    p.window = n;
    return p;
  }
  if (toggle_) {
    p.action = StepAction::Record;  // until the next signal
    p.window = 1;
    p.step_in_window = rel;
    return p;
  }
  return plan_step(schedule_, rel);
}

Collector::Window& Collector::window(uint64_t n, uint64_t rel_window) {
  Window& w = windows_[n];
  if (!w.session) {
    w.rec = make_recording(feed_);
    w.session = w.rec.session.get();
    w.session->advance(pass_map_, monotonic_ns());
    if (capture_range_) {
      w.first_active = arm_step_ + 2 * rel_window - 1;
      w.active = 1;
    } else if (!toggle_) {
      const uint64_t cycle = schedule_.wait + schedule_.warmup + schedule_.active;
      w.first_active = arm_step_ + schedule_.skip_first + (rel_window - 1) * cycle + schedule_.wait + schedule_.warmup;
      w.active = schedule_.active;
    } else {
      w.first_active = arm_step_;
      w.active = 0;  // open-ended
    }
  }
  return w;
}

void Collector::route(const Record& r) {
  if (options_.census) note_for_census(r);
  if (!windowed_) {
    session_->consume(r);
    if (makes_device_work(r)) ++host_work_;
    note_for_join(r, 0);
    if (r.flags & record_flag::kStepEnd) note_step_end(r.step, r.end, r.tid);
    return;
  }
  feed_->consume(r);
  // Armed while this pass drained: the record was made after arming, so the
  // arming is visible by now.
  if (!armed_) check_arming();
  if (r.flags & record_flag::kStepEnd) note_step_end(r.step, r.end, r.tid);
  const StepPlan p = plan(r.step);
  // Calls outside every window are still known to the order join, so that
  // their device records find them and not a neighbour inside a window.
  if (p.action != StepAction::Record && p.action != StepAction::RecordAndSave) {  // waiting or warming up
    note_for_join(r, 0);
    return;
  }
  const uint64_t n = window_base_ + p.window;
  if (n <= last_written_) {
    ++late_records_;
    note_for_join(r, 0);
    return;
  }
  Window& w = window(n, p.window);
  w.session->consume(r);
  if (makes_device_work(r)) ++w.host_work;
  note_for_join(r, n);
  if (r.corr_first) corr_window_[r.corr_first] = n;
  if (r.corr_last) corr_window_[r.corr_last] = n;
}

void Collector::route(const DeviceRecord& d, bool last_try) {
  if (!windowed_) {
    session_->consume(d);
    ++device_got_;
    return;
  }
  auto it = corr_window_.find(d.correlation);
  if (it == corr_window_.end()) {
    // Launched outside any window, or its host record not drained yet.
    if (!last_try) retry_device_.push_back(d);
    return;
  }
  auto w = windows_.find(it->second);
  if (w == windows_.end() || !w->second.session) {
    ++late_device_;  // its window is written already
    return;
  }
  w->second.session->consume(d);
  ++w->second.device_got;
}

void Collector::note_for_join(const Record& r, uint64_t window) {
  // (After a hand-over to the program's own CUPTI client no record comes.)
  if (!order_join_on_ || !makes_device_work(r) || (tracer_ != nullptr && tracer_->handed_over())) return;
  // Records drained outside drain_once (at the end) still need a slope.
  if (pass_map_.tick0 == 0) pass_map_ = TimeMap::between(start_anchor_, read_anchor());
  order_join_.add(OrderJoin::Host::from(r, pass_map_.mono_ns(r.start), pass_map_.mono_ns(r.end), window));
}

void Collector::deliver(const DeviceRecord& d, const OrderJoin::Link& l) {
  const CorrelationLink link{l.host_id, d.correlation, l.host_tid, l.host_start_ns, l.host_range, l.host_step, l.host_stack};
  if (!windowed_) {
    session_->consume(d, l.joined ? &link : nullptr);
    if (l.joined) ++device_got_;
    return;
  }
  if (!l.joined) {
    ++unjoined_in_windows_;
    return;
  }
  if (l.window == 0) return;  // made outside every window
  auto w = windows_.find(l.window);
  if (w == windows_.end() || !w->second.session) {
    ++late_device_;  // its window is written already
    return;
  }
  w->second.session->consume(d, &link);
  ++w->second.device_got;
}

void Collector::note_step_end(uint64_t step, uint64_t tick, uint32_t tid) {
  ++steps_ended_;
  if (!windowed_) {
    // A ProfilerStep span from the previous step's end (the first from the
    // first call). Only the previous end is needed.
    auto prev = step == 0 ? step_ends_.end() : step_ends_.find(step - 1);
    const uint64_t start = prev != step_ends_.end() ? prev->second.tick : session_->first();
    session_->step(step, std::min(start, tick), tick, tid);
    step_ends_.clear();
    step_ends_[step] = StepEnd{tick, tid};
    return;
  }
  if (step_ends_.size() < kMaxStepEnds) step_ends_[step] = StepEnd{tick, tid};
  else ++step_ends_dropped_;
  const StepPlan p = plan(step);
  if (p.action == StepAction::RecordAndSave) {
    const uint64_t n = window_base_ + p.window;
    if (n > last_written_) {
      Window& w = window(n, p.window);
      w.complete = true;
      w.end_tick = tick;
      w.close_at = std::chrono::steady_clock::now() + kCloseGrace;
    }
  }
  // A window whose last step's end never came (its record dropped in a full
  // ring) is complete once a later step ends: it must not hold back the
  // windows after it until exit.
  for (auto& [n, w] : windows_) {
    if (w.complete || w.active == 0 || step < w.first_active + w.active) continue;
    auto last = step_ends_.find(w.first_active + w.active - 1);
    w.complete = true;
    w.end_tick = last != step_ends_.end() ? last->second.tick : tick;
    w.close_at = std::chrono::steady_clock::now() + kCloseGrace;
  }
}

void Collector::route_point(const MemoryPoint& p) {
  // The window whose time the point falls in: from the end of the step
  // before its first (or its first call) to the end of its last step (or
  // open-ended while it records).
  for (auto& [n, w] : windows_) {
    const auto before = w.first_active == 0 ? step_ends_.end() : step_ends_.find(w.first_active - 1);
    const uint64_t from = before != step_ends_.end() ? before->second.tick : w.session->first();
    if (p.ticks < std::min(from, w.session->first())) continue;
    if (w.complete && p.ticks > w.end_tick) continue;
    w.session->memory_point(p);
    return;
  }
}

bool Collector::device_records_pending() const {
  if (tracer_ == nullptr || tracer_->handed_over()) return false;  // none will come
  if (!windowed_) return device_got_ < host_work_;
  for (const auto& [n, w] : windows_) {
    if (w.device_got < w.host_work) return true;
  }
  return false;
}

uint64_t Collector::memory_limit() const {
  // A window's snapshot is the state at its end: memory records past the
  // end of the first window still to be written wait in the feed.
  if (!windowed_ || windows_.empty()) return UINT64_MAX;
  const Window& w = windows_.begin()->second;
  if (w.complete) return w.end_tick + 1;
  // Its end is not known yet, but it is after every step end seen so far.
  uint64_t last = 0;
  if (!step_ends_.empty()) last = step_ends_.rbegin()->second.tick;
  return last;
}

void Collector::check_arming() {
  // Before the pass drains: records of the arming step are routed with
  // the arming known.
  if (!control_.armed.exchange(false, std::memory_order_acquire)) return;
  const uint64_t step = control_.arm_step.load(std::memory_order_relaxed);
  const uint64_t tick = control_.arm_tick.load(std::memory_order_relaxed);
  armed_ = true;
  // The ids of the calls made while dormant are a gap no recorded call
  // accounts for.
  order_join_.note_resume(pass_map_.tick0 != 0 ? pass_map_.mono_ns(tick) : monotonic_ns());
  // A schedule counts whole steps. The signal comes while the program is
  // somewhere in a step (or still setting up before its first), and a
  // dormant shim cannot tell where: the window starts with the next step,
  // the first one nb sees from its beginning. A capture range
  // (profiler-api) starts at its own cudaProfilerStart; time steps and the
  // open-ended toggle window start at the signal.
  const bool whole_steps = !toggle_ && !capture_range_ && time_step_ns_ == 0;
  arm_step_ = whole_steps ? step + 1 : step;
  arm_tick_ = tick;
  // Windows of the previous arming may still wait to be written: the new
  // ones are numbered after them.
  window_base_ = std::max(last_written_, windows_.empty() ? 0 : windows_.rbegin()->first);
  arming_base_ = window_base_;
  next_time_step_ns_ = monotonic_ns() + time_step_ns_;
  log::info("armed: recording from step " + std::to_string(arm_step_));
}

void Collector::service_windows() {
  if (toggle_ && armed_ && control_.arm_request.exchange(false)) {
    // The window ends now; no more records are made once dormant.
    host_.go_dormant();
    Window& w = window(window_base_ + 1, 1);
    w.complete = true;
    w.end_tick = now_ticks();
    w.close_at = std::chrono::steady_clock::now() + kCloseGrace;
  }
  if (time_step_ns_ != 0 && armed_) {
    const uint64_t now = monotonic_ns();
    if (next_time_step_ns_ == 0) next_time_step_ns_ = now + time_step_ns_;
    if (now >= next_time_step_ns_) {
      const uint32_t ended = control_.step.fetch_add(1, std::memory_order_relaxed);
      note_step_end(ended, now_ticks(), static_cast<uint32_t>(context_.pid));
      // The next from this end, not from when this one was due: a pass
      // that comes late (a loaded machine) makes this step longer, never
      // the next shorter or a burst of empty ones.
      next_time_step_ns_ = now + time_step_ns_;
    }
  }
  const auto now = std::chrono::steady_clock::now();
  while (!windows_.empty()) {
    auto it = windows_.begin();
    if (!it->second.complete || now < it->second.close_at) break;
    close_window(it->first, false);
  }
}

bool Collector::nothing_recorded_running(bool ends_arming) const {
  // A signal armed again while the window closed: the new arming's work.
  if (control_.armed.load(std::memory_order_acquire)) return false;
  if (ends_arming) return true;  // what runs now is recorded in no window
  if (windows_.size() > 1) return false;
  const uint64_t running = step_ends_.empty() ? 0 : step_ends_.rbegin()->first + 1;
  const StepAction a = plan(running).action;
  return a != StepAction::Record && a != StepAction::RecordAndSave;
}

std::vector<OutputContext::StepSpan> Collector::step_spans(uint64_t first, uint64_t count,
                                                           uint64_t fallback_start) const {
  std::vector<OutputContext::StepSpan> spans;
  for (uint64_t k = first; k < first + count; ++k) {
    auto end = step_ends_.find(k);
    if (end == step_ends_.end()) continue;  // not ended (a partial window) or its marker call was dropped
    auto prev = k == 0 ? step_ends_.end() : step_ends_.find(k - 1);
    const uint64_t start = prev != step_ends_.end() ? prev->second.tick : fallback_start;
    spans.push_back({k, std::min(start, end->second.tick), end->second.tick, end->second.tid});
  }
  return spans;
}

void Collector::close_window(uint64_t n, bool at_exit) {
  auto it = windows_.find(n);
  if (it == windows_.end()) return;
  Window& w = it->second;
  // Nothing more to record in this arming once it is written (below).
  // Only a window of the current arming can end it (one of an earlier
  // arming, written late, must not disarm the new one).
  const bool ends_arming = !at_exit && n > arming_base_ &&
                           (toggle_ || (schedule_.repeat != 0 && n - window_base_ >= schedule_.repeat));
  // (Not once the program's own CUPTI client has CUPTI: nothing more comes.)
  if (!at_exit && tracer_ && !tracer_->handed_over()) {
    // The window's device work, as CUPTI hands it over once done. No
    // synchronize: from this thread it would break a CUDA graph capture
    // the program may have going (global capture mode forbids it from any
    // thread). So: collect until every call of the window that makes
    // device work has a record, or 2 s (later ones are counted as late).
    // CUPTI hands a buffer over when it is full, or on a plain flush once
    // every record in it is complete: while the program keeps the device
    // busy (its next steps' work lands in the same buffer) a window's last
    // records can wait there for seconds. At the deadline a forced flush
    // hands them over, and with them the work still running, which has no
    // times and is lost: so only when no work a window records can be
    // running (no later window has begun and the step now running is in
    // none). Not sooner: the device may still be running the window's own
    // last work.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (;;) {
      // A signal that armed again (toggle mode, the shim dormant since this
      // window's end): stop here, or the new arming's calls would be taken
      // into this window; its records still missing are counted late.
      if (control_.armed.load(std::memory_order_acquire)) break;
      // The calls made so far first: a later window that has begun is known
      // before a forced flush.
      drain_rings();
      const bool late = std::chrono::steady_clock::now() > deadline;
      const bool force = late && w.device_got < w.host_work && nothing_recorded_running(ends_arming);
      tracer_->flush(force);
      // At the deadline the order join stops waiting for ids that have not
      // come (their records, if they come, are placed late).
      take_device_records(late ? OrderJoin::Pass::NoWait : OrderJoin::Pass::Normal);
      if (w.device_got >= w.host_work || late) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // The snapshot is the state at the window's end (at exit: the end of a
  // complete window still in its grace, else everything).
  feed_->apply(w.complete ? w.end_tick + 1 : UINT64_MAX);
  for (const auto& [tid, name] : thread_names_) w.session->note_thread(tid, name.c_str());
  Session& s = *w.session;
  OutputContext ctx = current_context();
  ctx.prefix = context_.prefix + ".w" + std::to_string(n);
  // The window's own dropped calls in its rows, not the run's.
  ctx.dropped_calls = w.dropped_calls;
  ctx.dropped_errors = w.dropped_errors;
  const uint64_t from = w.first_active == 0 ? 0 : (step_ends_.count(w.first_active - 1) ? step_ends_.at(w.first_active - 1).tick
                                                                                          : s.first());
  ctx.window_from = std::min(from, s.first());
  ctx.window_to = w.complete ? w.end_tick : UINT64_MAX;
  uint64_t count = w.active;
  if (toggle_) {
    const uint64_t last = step_ends_.empty() ? 0 : step_ends_.rbegin()->first + 1;
    count = last > w.first_active ? last - w.first_active : 0;
  }
  const std::vector<OutputContext::StepSpan> steps = step_spans(w.first_active, count, s.first());
  for (const OutputContext::StepSpan& st : steps) s.step(st.number, st.start, st.end, st.tid);
  if (!w.complete && w.active != 0) {
    ctx.notes.push_back("Partial window: the program exited after " + std::to_string(steps.size()) + " of its " +
                        std::to_string(w.active) + " steps" +
                        (steps.empty() ? std::string(" (no step ended: does NB_STEP match? `nbprof steps` lists markers)")
                                       : std::string()));
  }
  if (options_.trigger == Trigger::Signal) {
    ctx.notes.push_back("Armed by SIGUSR2: allocations and frees made while nb was dormant are not in the snapshot");
  }
  if (toggle_) {
    ctx.notes.push_back("Window " + std::to_string(n) + ": from one SIGUSR2 to the next");
  } else {
    ctx.notes.push_back("Window " + std::to_string(n) + ": steps " + std::to_string(w.first_active) + " to " +
                        std::to_string(w.first_active + (count ? count - 1 : 0)) + " (NB_STEP " +
                        step_text() + ")");
  }
  // A window the program exited in before any of its steps ended holds only
  // the tail of the run (the calls after the last step): not worth a set of
  // files, unless no step ever ended, when the files and their note are how
  // the user learns that NB_STEP never matched.
  const bool tail_only = at_exit && !w.complete && steps.empty() && steps_ended_ != 0;
  if (tail_only) log::debug("the calls after the last step are in no window");
  // Nothing more to record in this arming: hooks pass straight through, and
  // CUPTI rests, until a signal arms again (NB_TRIGGER) or for good. Before
  // the files appear: a program that waits for them to arm the next window
  // must find nb dormant already, not be disarmed right after arming.
  if (ends_arming) {
    armed_ = false;
    // CUPTI first: the thread that arms again resumes it (shim/lifecycle.cpp),
    // and must not find it paused after. Not at all when a signal armed
    // again while this window closed (the next pass takes that arming).
    if (!control_.armed.load(std::memory_order_acquire)) {
      if (tracer_) tracer_->pause();
      host_.go_dormant();
    }
  }
  if (!tail_only && (s.consumed() != 0 || !steps.empty())) write(w.rec, std::move(ctx));
  last_written_ = std::max(last_written_, n);
  // The window's correlation ids stay until the next one is written, so
  // that its device records still coming are counted as late.
  for (auto c = corr_window_.begin(); c != corr_window_.end();) c = c->second < n ? corr_window_.erase(c) : std::next(c);
  const uint64_t first_active = w.first_active;
  windows_.erase(it);  // `w` is gone from here on
  // Step ends before this window's are no longer needed.
  while (!step_ends_.empty() && step_ends_.begin()->first + 1 < first_active) step_ends_.erase(step_ends_.begin());
}

}  // namespace nb
