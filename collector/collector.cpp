#include "collector/collector.h"

#include <pthread.h>
#include <unistd.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "core/demangle.h"
#include "core/lock_within.h"
#include "collector/devices.h"
#include "collector/output.h"
#include "collector/output_files.h"
#include "collector/drain_pace.h"
#include "core/log.h"
#include "collector/step_census.h"
#include "core/step_marker.h"

namespace nb {

namespace {

formats::SortKey sort_key(TableSort s) {
  switch (s) {
    case TableSort::Host: return formats::SortKey::HostTotal;
    case TableSort::Calls: return formats::SortKey::Calls;
    case TableSort::Name: return formats::SortKey::Name;
    case TableSort::Device: break;
  }
  return formats::SortKey::DeviceTotal;
}

// What one record costs the calling thread, without the call itself: the
// ring slot, clearing it, two timestamps, publishing. Measured once, for the
// table's estimate of nb's own overhead.
double measure_record_cost_ns() {
  constexpr uint32_t kSlots = 4096;
  std::vector<Record> slots(kSlots);
  Ring ring(slots.data(), kSlots);
  const uint64_t t0 = monotonic_ns();
  for (uint32_t i = 0; i < kSlots - 1; ++i) {
    Record* r = ring.reserve();
    if (r == nullptr) break;
    clear_record(r);
    r->start = now_ticks();
    r->end = now_ticks();
    ring.publish();
  }
  return static_cast<double>(monotonic_ns() - t0) / (kSlots - 1);
}

}  // namespace

std::unique_ptr<Recorder> make_recorder(const RecorderSetup& setup, Host& host) {
  return std::make_unique<Collector>(setup, host);
}

Collector::Collector(const RecorderSetup& setup, Host& host)
    : settings_(*setup.settings),
      options_(settings_.options),
      registry_(*setup.registry),
      names_(*setup.names),
      control_(*setup.control),
      host_(host),
      stacks_(StackOrigins{setup.own_code_begin, setup.own_code_end, setup.python}),
      order_join_(OrderJoin::Config{std::max<uint64_t>(500, 2 * options_.cupti_flush_ms) * 1000000ull}) {
  start_anchor_ = read_anchor();  // again at start(); this one for a recorder never started (tests)
  // A whole second at least 1 s before this anchor: a call hooked just
  // before the recorder was made (the first CUDA call makes it) must not
  // get a negative ts when the anchor falls just after a second's turn.
  base_ns_ = trace_base_ns(start_anchor_.epoch_ns - 1000000000);
  context_.prefix = settings_.prefix;
  context_.pid = settings_.pid;
  context_.program = settings_.program;
  context_.host = settings_.host;
  if (settings_.rank.known()) {
    formats::DistributedInfo& d = context_.distributed;
    d.present = true;
    d.rank = settings_.rank.rank;
    d.world_size = settings_.rank.world_size;
    d.local_rank = settings_.rank.local_rank;
  }
  context_.overwrite = options_.overwrite;
  context_.table_rows = options_.table_rows;
  context_.table_sort = sort_key(options_.table_sort);
  context_.folded = options_.stacks == StackKinds::Launch || options_.stacks == StackKinds::All;
  context_.debug_args = options_.log <= LogLevel::Debug;
  context_.record_cost_ns = measure_record_cost_ns();
  if (!options_.device) context_.device_note = "NB_DEVICE=0";

  schedule_ = Schedule{options_.skip_first, options_.wait, options_.warmup, options_.active, options_.repeat};
  const StepMarker& marker = settings_.step;
  capture_range_ = marker.kind == StepMarker::Kind::ProfilerApi;
  if (marker.kind == StepMarker::Kind::Time) time_step_ns_ = marker.ns;
  // A flight recorder records from the start; a trigger asks it for a copy.
  keep_ns_ = flight_recorder(options_) ? options_.keep.ns : 0;
  const bool trigger = options_.trigger == Trigger::Signal && keep_ns_ == 0;
  toggle_ = trigger && options_.active == 0 && !capture_range_;
  // Windows of their own (<prefix>.w<N>.*) with a schedule, a capture range
  // or a trigger; otherwise the whole run is one recording.
  windowed_ = options_.active != 0 || capture_range_ || trigger;
  armed_ = !trigger;  // a trigger waits for its signal
  if (windowed_) {
    feed_ = std::make_shared<MemoryFeed>(options_.mem_max_entries);
    feed_->on_point([this](const MemoryPoint& p) { route_point(p); });
  } else {
    main_ = make_recording(nullptr);
    session_ = main_.session.get();
  }
}

Collector::Recording Collector::make_recording(std::shared_ptr<MemoryFeed> shared) {
  Recording rec;
  rec.names = std::make_unique<TraceNames>(&names_);
  TraceFileConfig file;
  file.level = static_cast<int>(options_.compress);
  file.path = context_.prefix + (file.level > 0 ? ".trace.json.gz" : ".trace.json");
  // Event times are written relative to the second nb began in (every
  // record is made after that, a window's too).
  rec.trace = std::make_unique<TraceStream>(writer_, file, base_ns_, *rec.names);
  // A problem is said once, when the outputs are written (with theirs).
  std::string problem;
  rec.trace->open(problem);
  TraceSetup setup;
  setup.pid = context_.pid;
  setup.device_traced = context_.device_traced;
  setup.join_mode = context_.device_traced ? options_.cupti_join : CuptiJoin::None;
  setup.debug_args = context_.debug_args;
  setup.hold_ns = std::max<uint64_t>(2000000000ull, 4 * options_.cupti_flush_ms * 1000000ull);
  setup.max_host_events = options_.trace_max_events;
  rec.session = std::make_unique<Session>(SessionLimits{options_.mem_max_entries, context_.folded}, rec.trace.get(), setup,
                                          rec.names.get(), std::move(shared));
  return rec;
}

bool Collector::start_device(std::string& why) {
  // Started on the first CUDA call, before the call proceeds, so that no
  // kernel runs unobserved.
  // Never destroyed, even when it fails half-way: CUPTI may hold its
  // callbacks, and call them after finish().
  tracer_kept_ = new DeviceTracer(names_);
  DeviceTracer* tracer = tracer_kept_;
  if (!tracer->load(options_.cupti_lib, why) || !tracer->claim(why) ||
      !tracer->enable(DeviceTracerConfig{options_.cupti_buffers_mb << 20}, why)) {
    context_.device_note = why;
    log::warn("device time not recorded: " + why + "; host calls and memory still are");
    return false;
  }
  tracer_ = tracer;
  context_.device_traced = true;
  context_.join_mode = options_.cupti_join;
  order_join_on_ = options_.cupti_join == CuptiJoin::Order;
  log::debug("device time through " + tracer_->api().path + ", join: " + choice_name(context_.join_mode));
  return true;
}

void Collector::resume_device() {
  if (tracer_) tracer_->resume();
}

void Collector::hand_over_device() {
  if (tracer_) tracer_->hand_over();
}

void Collector::before_fork() {
  pass_locked_for_fork_ = lock_within(pass_mu_, std::chrono::seconds(2));
  writer_.hold_for_fork();
}

void Collector::after_fork() {
  writer_.release_after_fork();
  if (pass_locked_for_fork_) pass_mu_.unlock();
  pass_locked_for_fork_ = false;
}

bool Collector::start() {
  start_anchor_ = read_anchor();
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  bool ok = true;
  try {
    thread_ = std::thread([this] {
      host_.own_thread();
      run();
    });
  } catch (...) {
    ok = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

size_t Collector::drain_rings() {
  // Taken before the drain: every call that returned before it is in after.
  drain_ticks_ = now_ticks();
  memory_in_call_ = UINT64_MAX;
  if (order_join_on_) {
    drained_ns_ = monotonic_ns();
    in_call_ns_ = UINT64_MAX;
    if (pass_map_.tick0 == 0) pass_map_ = TimeMap::between(start_anchor_, read_anchor());
  }
  size_t n = 0;
  registry_.for_each([&](ThreadSlot& slot) {
    // Read before the drain (and after drained_ns_): a call seen outside
    // has its record in this drain; one inside holds back the records of
    // work begun after it began (OrderJoin::advance).
    if (slot.state.load(std::memory_order_relaxed) == ThreadSlot::kOwned) {
      if (order_join_on_) {
        const uint64_t in_call = slot.in_call.load(std::memory_order_acquire);
        if (in_call != 0) in_call_ns_ = std::min(in_call_ns_, pass_map_.mono_ns(in_call));
      }
      const uint64_t in_memory = slot.in_memory_call.load(std::memory_order_acquire);
      if (in_memory != 0) memory_in_call_ = std::min(memory_in_call_, in_memory);
    }
    // Exited is read before draining: a slot seen exited is fully drained by
    // this pass, since its owner publishes nothing after exiting.
    const bool exited = slot.state.load(std::memory_order_acquire) == ThreadSlot::kExited;
    const uint64_t frames_before = slot.frames.released();
    // A ring holds one thread's records (it is handed on only when empty),
    // so the thread is noted once per pass, not once per record.
    const size_t got = slot.ring.drain([&](const Record& r) {
      if (r.stack == 0) {
        route(r);
        return;
      }
      Record c = r;  // from here on, `stack` is the interned id
      c.stack = intern_stack(slot.frames, r.stack);
      route(c);
    });
    if (got) {
      const uint32_t tid = slot.tid.load(std::memory_order_relaxed);
      if (windowed_) thread_names_.emplace(tid, slot.name);
      else session_->note_thread(tid, slot.name);
    }
    n += got;
    frames_drained_ += slot.frames.released() - frames_before;
    if (exited) ThreadRegistry::recycle_if_exited(slot);
  });
  take_drop_counts();
  return n;
}

void Collector::take_drop_counts() {
  uint64_t changes = control_.lost_calls.changes.load(std::memory_order_acquire);
  registry_.for_each([&](ThreadSlot& slot) { changes += slot.drops.changes.load(std::memory_order_acquire); });
  if (changes == drop_changes_) return;  // the common case: nothing dropped since the last pass
  drop_changes_ = changes;
  // Every counter only grows and none is ever reset or freed (a recycled
  // slot keeps its counts), so these sums are the run's totals so far, and
  // each is at least what the last pass read.
  std::vector<uint64_t> calls(kApiCount), errors(kApiCount);
  uint64_t ranges = 0;
  const auto add = [&](const DropCounts& d) {
    for (uint16_t api = 0; api < kApiCount; ++api) {
      calls[api] += d.calls[api].load(std::memory_order_relaxed);
      errors[api] += d.errors[api].load(std::memory_order_relaxed);
    }
    ranges += d.ranges.load(std::memory_order_relaxed);
  };
  add(control_.lost_calls);
  registry_.for_each([&](ThreadSlot& slot) { add(slot.drops); });
  // With windows, what was dropped since the last pass goes to the window
  // that a call made now would record into (the step the program is in
  // now), or to none outside every window. An approximation: a drop is
  // seen one pass (a few ms) after it happened, so the drops of a step
  // boundary's last moments can land on the other side of it, and an error
  // (counted when its call returns) in another window than its call.
  Window* w = nullptr;
  if (windowed_) {
    const StepPlan p = plan(control_.step.load(std::memory_order_relaxed));
    const uint64_t n = window_base_ + p.window;
    if ((p.action == StepAction::Record || p.action == StepAction::RecordAndSave) && n > last_written_) {
      w = &window(n, p.window);
      w->dropped_calls.resize(kApiCount);
      w->dropped_errors.resize(kApiCount);
    }
  }
  for (uint16_t api = 0; api < kApiCount; ++api) {
    if (w != nullptr) {
      w->dropped_calls[api] += calls[api] - dropped_calls_[api];
      w->dropped_errors[api] += errors[api] - dropped_errors_[api];
    }
    dropped_calls_[api] = calls[api];
    dropped_errors_[api] = errors[api];
  }
  dropped_ranges_ = ranges;
}

size_t Collector::drain_once() {
  // The tick → time map of now: a fit to the run so far converts the recent
  // records the timeline gets this pass to within the clocks' jitter.
  pass_map_ = TimeMap::between(start_anchor_, read_anchor());
  const uint64_t now_ns = monotonic_ns();
  // Device tracing starts on the program's first CUDA call, on its thread.
  const DeviceTracer* tracer = tracer_;
  const bool traced = tracer != nullptr, handed = traced && tracer->handed_over();
  const auto pass = [&](Session& s) {
    s.set_device(traced, options_.cupti_join, handed);
    s.advance(pass_map_, now_ns);
  };
  if (windowed_) {
    for (auto& [n, w] : windows_) pass(*w.session);
  } else {
    pass(*session_);
    if (keep_ns_ != 0) keep_pass(now_ns);
  }
  if (windowed_) check_arming();
  const size_t n = drain_rings();
  // Memory records older than the horizon cannot be overtaken by one still
  // in flight on another thread (assuming no call is in flight longer).
  if (windowed_) {
    if (feed_->pending()) feed_->apply(std::min(memory_horizon(), memory_limit()));
  } else if (session_->memory_pending()) {
    session_->apply_memory(memory_horizon());
  }
  if (tracer_) {
    // CUPTI hands over full buffers on its own; ask for partly filled ones
    // now and then so device records do not wait for the end.
    const auto now = std::chrono::steady_clock::now();
    const auto period = std::chrono::milliseconds(options_.cupti_flush_ms);
    if (options_.cupti_flush_ms != 0 && now - last_flush_ > period) {
      tracer_->flush(false);
      last_flush_ = now;
    }
    // A piece a pass (a few ms of work at most), then the rings again.
    constexpr size_t kPassDeviceRecords = 4096;
    take_device_records(OrderJoin::Pass::Normal, kPassDeviceRecords);
    device_behind_ = tracer_->queued();
  }
  if (windowed_ || time_step_ns_ != 0) service_windows();
  return n;
}

// The flight recorder keeps its trace and its table's counts in slices of
// NB_KEEP / kKeepSlices: a new slice each time one has run its length, the
// oldest dropped. The trace keeps more slices than the span, since an event
// is written up to the join's hold after its time; the file is cut to the
// exact span when written (TraceFinish::from_ts).
void Collector::keep_pass(uint64_t now_ns) {
  constexpr uint64_t kKeepSlices = 16;
  if (slice_ns_ == 0) {
    slice_ns_ = std::max<uint64_t>(keep_ns_ / kKeepSlices, 50000000ull);
    const uint64_t late_ns = std::max<uint64_t>(2000000000ull, 4 * options_.cupti_flush_ms * 1000000ull) + 1000000000ull;
    table_slices_ = static_cast<size_t>((keep_ns_ + slice_ns_ - 1) / slice_ns_) + 1;
    trace_slices_ = static_cast<size_t>((keep_ns_ + late_ns + slice_ns_ - 1) / slice_ns_) + 1;
    slice_began_ns_ = now_ns;
  }
  if (control_.arm_request.exchange(false, std::memory_order_relaxed) &&
      options_.trigger == Trigger::Signal) {
    dump(now_ns);
  }
  if (now_ns - slice_began_ns_ < slice_ns_) return;
  slice_began_ns_ = now_ns;
  main_.trace->file().end_slice(trace_slices_);
  session_->cut_slice(table_slices_, now_ns);
  if (now_ns > keep_ns_) session_->forget_before(pass_map_.ticks_at_mono(now_ns - keep_ns_));
}

void Collector::keep_context(OutputContext& ctx, uint64_t now_ns) const {
  if (keep_ns_ == 0) return;
  const uint64_t run_ns = now_ns - start_anchor_.mono_ns;
  const auto secs = [](uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
    return std::string(buf);
  };
  std::string line = "Flight recorder (NB_KEEP=" + describe_duration(options_.keep) + "): ";
  if (run_ns <= keep_ns_) {
    line += "the run (" + secs(run_ns) + ") was no longer than it; all of it is here";
  } else {
    const uint64_t from_ns = now_ns - keep_ns_;
    ctx.window_from = ctx.time.ticks_at_mono(from_ns);
    ctx.trim_trace = true;
    const uint64_t since = session_->kept_since_ns() ? session_->kept_since_ns() : start_anchor_.mono_ns;
    line += "the trace's events and the memory history are the last " + secs(keep_ns_) + " of the run's " +
            secs(run_ns) + " (from " + secs(from_ns - start_anchor_.mono_ns) + " after it began); this table counts the " +
            std::to_string(session_->consumed()) + " calls of the last " + secs(now_ns - since) + " (of " +
            std::to_string(session_->run_consumed()) + " in all)";
  }
  ctx.notes.push_back(line);
}

void Collector::dump(uint64_t now_ns) {
  ++dumps_;
  OutputContext ctx = current_context();
  ctx.prefix = context_.prefix + ".d" + std::to_string(dumps_);
  ctx.dump = true;
  keep_context(ctx, now_ns);
  write(main_, std::move(ctx));
}

uint32_t Collector::intern_stack(FrameRing& frames, uint32_t tagged) {
  if (!frames.valid()) return 0;
  uint64_t pos = 0, room = 0;
  const uint64_t* p = frames.at(tagged - 1, pos, room);
  if (p == nullptr) return 0;  // already released (a pass that failed half-way)
  const uint32_t native = stack_header::native(p[0]);
  const uint32_t python = stack_header::python(p[0]);
  const uint64_t end = pos + 1 + native + python;
  if (1 + uint64_t(native) + python > room) return 0;  // not a header: never read past the ring
  stack_cost_.add(p[0]);
  uint32_t id = 0;
  try {
    id = stacks_.intern(p + 1, native, p + 1 + native, python);
  } catch (...) {
    id = 0;  // out of memory: the call keeps no stack; its frames are freed all the same
  }
  frames.release(end);
  return id;
}

uint64_t Collector::memory_horizon() const {
  // Memory records are applied in the order of their effect, up to a time
  // no record still to come can be before: the last drain's start, less a
  // lag for records made outside the hooks' marks (and the instant between
  // a call's start and its mark), and no later than the start of a memory
  // call still in flight then. A short lag keeps few records waiting (a
  // million calls a second is thousands per millisecond).
  constexpr uint64_t kLagNs = 10000000;  // 10 ms
  const ClockAnchor now = read_anchor();
  if (now.mono_ns <= start_anchor_.mono_ns + kLagNs || drain_ticks_ == 0) return 0;
  uint64_t lag_ticks = kLagNs;
  if (g_ticks_are_tsc) {
    // Ticks per ns from the start anchor: a rough rate is enough for a lag.
    const double rate = static_cast<double>(now.ticks - start_anchor_.ticks) /
                        static_cast<double>(now.mono_ns - start_anchor_.mono_ns);
    lag_ticks = static_cast<uint64_t>(rate * kLagNs);
  }
  const uint64_t lagged = drain_ticks_ > lag_ticks ? drain_ticks_ - lag_ticks : 0;
  // A call in flight holds the others back for a second at most (a
  // cudaFree that waits for a busy device must not make every other
  // thread's records pile up here); its record, if later, is placed late.
  const uint64_t longest = 100 * lag_ticks;
  const uint64_t floor = drain_ticks_ > longest ? drain_ticks_ - longest : 0;
  return std::max(floor, std::min(lagged, memory_in_call_));
}

void Collector::take_device_records(OrderJoin::Pass pass, size_t max) {
  std::vector<DeviceRecord>& records = device_piece_;  // kept: its room is reused pass after pass
  tracer_->take(records, max);
  if (order_join_on_) {
    const uint64_t now = monotonic_ns();
    const auto emit = [this](const DeviceRecord& d, const OrderJoin::Link& l) { deliver(d, l); };
    // In pieces: what waits in the join stays bounded (its max_waiting)
    // however many records one pass takes.
    constexpr size_t kPiece = 16384;
    size_t at = 0;
    do {
      const size_t end = std::min(records.size(), at + kPiece);
      for (; at < end; ++at) order_join_.add(records[at], now);
      order_join_.advance({now, drained_ns_, in_call_ns_}, pass, emit);
    } while (at < records.size());
    return;
  }
  const bool last = pass == OrderJoin::Pass::Final;
  // Device records can come before their host call's record is drained
  // (the call still returning, or its ring not reached yet this pass): the
  // ones with no window yet get one more pass.
  std::vector<DeviceRecord> retry;
  retry.swap(retry_device_);
  for (const DeviceRecord& d : retry) route(d, true);
  for (const DeviceRecord& d : records) route(d, last);  // not yet placed: one more pass, unless final
}

uint64_t Collector::dropped() const {
  uint64_t d = registry_.failed_acquires() + control_.lost_at_start.load(std::memory_order_relaxed);
  const_cast<ThreadRegistry&>(registry_).for_each([&](ThreadSlot& s) { d += s.ring.dropped(); });
  return d;
}

void Collector::keep_rings_ahead() {
  // After every ring was drained, so that no ring waits for another's
  // pages; at most 1 MiB a pass (a few ms at worst), the rest next pass.
  uint64_t budget = 1 << 20;
  registry_.for_each([&](ThreadSlot& slot) {
    if (budget != 0 && slot.state.load(std::memory_order_relaxed) == ThreadSlot::kOwned) {
      registry_.keep_ahead(slot, budget);
    }
  });
}

void Collector::run() {
  pthread_setname_np(pthread_self(), "nb-collector");
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    size_t n = 0;
    frames_drained_ = 0;
    try {
      std::lock_guard<std::mutex> pass(pass_mu_);
      n = drain_once();
      keep_rings_ahead();
    } catch (...) {
      // Out of memory while storing records: what was being consumed is
      // lost; count the pass as a failure and keep draining (rings must
      // not fill up and stall accounting).
      ++failed_passes_;
    }
    if (const int sig = control_.exit_signal.load(std::memory_order_relaxed)) {
      // Out of the loop and the lock: the shim calls finish(), which takes
      // the lock, on this thread.
      host_.exit_signal(sig);
      return;
    }
    lock.lock();
    const auto pause = drain_pause(n, frames_drained_, registry_.capacity(), registry_.frame_capacity());
    if (pause.count() == 0 || device_behind_) continue;  // a flood: drain again at once
    cv_.wait_for(lock, pause, [this] { return stop_; });
  }
}

void Collector::finish_tagged(const std::string& tag) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    stop_ = true;
  }
  // Exit began: the hooks record no more calls, so CUPTI takes no more
  // work either (threads still launching would otherwise fill the trace
  // with work of calls that are not in it). What it holds of work launched
  // before still comes, as when Kineto stops a trace.
  if (tracer_) tracer_->pause();
  PhaseTimes phases;
  cv_.notify_all();
  if (thread_.joinable()) {
    // Called on the collector thread itself (a terminating signal): it has
    // left its loop; nothing to wait for.
    if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
    else thread_.join();
  }
  context_.prefix += tag;  // the collector thread, which reads it, has stopped
  phases.mark("collector stopped");
  drain_once();
  // Windows apply the memory feed up to their own end (close_window).
  if (!windowed_) session_->apply_all_memory();
  phases.mark("rings drained");
  if (tracer_) {
    // Before CUDA tears itself down (our atexit handler runs first): the
    // device records of the calls recorded, as CUPTI hands them over once
    // their work is done, until they are all in or the device is idle (at
    // most 5 s: threads that go on launching after exit began keep the
    // device busy, and their work is not recorded); then force out the last
    // buffers and stop CUPTI.
    DeviceSync idle(host_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      const bool device_idle = idle.done(std::chrono::milliseconds(5));
      tracer_->flush(false);
      drain_rings();
      take_device_records();
      if (device_idle || !device_records_pending()) break;
      if (std::chrono::steady_clock::now() > deadline) {
        context_.notes.push_back("The device was still busy 5 s after exit began: work it had not finished is not in the outputs");
        break;
      }
    }
    tracer_->flush(true);
    drain_rings();
    take_device_records();
    take_device_records(OrderJoin::Pass::Final);  // the last try of those that came before their host call's record
    tracer_->stop();
    phases.mark("device records");
  }

  if (windowed_) {
    // Windows still open: complete ones not yet written, and the one the
    // program exited in (partial).
    while (!windows_.empty()) close_window(windows_.begin()->first, true);
    if (last_written_ == 0 && armed_) {
      // A schedule that never got going: say why, not nothing.
      const uint64_t ended = step_ends_.empty() ? 0 : step_ends_.rbegin()->first + 1;
      log::warn("no recording window was reached (" + std::to_string(ended) + " steps ended; NB_STEP=" +
                step_text() +
                "): no files written. `nbprof steps -- COMMAND` lists markers that recur");
    }
    return;
  }
  OutputContext ctx = current_context();
  if (session_->consumed() == 0 && ctx.dropped == 0) {
    log::debug("no CUDA calls recorded; no files written");
    return;
  }
  if (options_.census) write_census(ctx);
  // The span kept ends with the last call recorded, not when the files are
  // written: exit can take a while after the program's last call.
  uint64_t end_ns = monotonic_ns();
  if (keep_ns_ != 0 && session_->last() != 0) end_ns = std::min(end_ns, ctx.time.mono_ns(session_->last()) + 1000000);
  keep_context(ctx, end_ns);
  if (step_ends_dropped_) ctx.notes.push_back("Steps past the first million not shown as spans: " + std::to_string(step_ends_dropped_));
  phases.mark("context");
  write(main_, std::move(ctx), &phases);
  log::debug("exit: " + phases.text());
}

OutputContext Collector::current_context() {
  OutputContext ctx = context_;
  if (tracer_) {
    const DeviceTracerCounts c = tracer_->counts();
    ctx.device_dropped = c.cupti_dropped;
    if (c.incomplete) {
      ctx.notes.push_back("Device records without times (work unfinished when a flush forced its buffer out), left out: " +
                          std::to_string(c.incomplete));
    }
    ctx.device_overflow = c.overflow;
    if (c.overflow) {
      ctx.notes.push_back("Device records dropped by nb (the collector fell behind; " +
                          std::to_string(DeviceTracer::kMaxQueued) + " were waiting for it): " +
                          std::to_string(c.overflow));
    }
    if (c.failed_buffers) {
      ctx.notes.push_back("CUPTI buffers only partly kept (out of memory): " + std::to_string(c.failed_buffers));
    }
    if (c.refused_buffers) {
      ctx.notes.push_back("CUPTI buffer requests refused (NB_CUPTI_BUFFERS_MB reached): " +
                          std::to_string(c.refused_buffers));
    }
    if (tracer_->handed_over()) {
      ctx.device_handed_over = true;
      ctx.notes.push_back("Device time stops where the program started its own CUPTI client (torch.profiler?): "
                          "nb handed CUPTI over to it");
    }
  }
  ctx.devices = query_devices(host_);

  // The second anchor for the tick → time map: at least 20 ms after the
  // first so that the TSC's rate is known to a few parts per million.
  ClockAnchor end = read_anchor();
  if (g_ticks_are_tsc && end.mono_ns - start_anchor_.mono_ns < 20000000) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(20000000 - (end.mono_ns - start_anchor_.mono_ns)));
    end = read_anchor();
  }
  ctx.time = TimeMap::between(start_anchor_, end);
  ctx.program_end = control_.program_end.load(std::memory_order_relaxed);
  ctx.dropped = dropped();
  uint64_t in_rings = 0;
  registry_.for_each([&](ThreadSlot& slot) { in_rings += slot.ring.dropped(); });
  const uint64_t at_start = control_.lost_at_start.load(std::memory_order_relaxed);
  if (in_rings) ctx.notes.push_back("Dropped because a thread's ring was full (raise NB_RING_RECORDS): " + std::to_string(in_rings));
  if (at_start) ctx.notes.push_back("Dropped because they came while another thread was starting nb: " + std::to_string(at_start));
  if (registry_.failed_acquires()) ctx.notes.push_back("Dropped because no ring could be mapped: " + std::to_string(registry_.failed_acquires()));
  if (dropped_ranges_) {
    ctx.notes.push_back("Dropped records that were NVTX ranges (the others are calls, counted in their rows): " +
                        std::to_string(dropped_ranges_));
  }
  ctx.dropped_calls = dropped_calls_;
  ctx.dropped_errors = dropped_errors_;
  for (uint16_t api = 0; api < kApiCount; ++api) {
    const uint64_t ok = dropped_calls_[api] - std::min(dropped_calls_[api], dropped_errors_[api]);
    if (api_info(api).kind == Kind::Alloc) ctx.dropped_allocs += ok;
    if (api_info(api).kind == Kind::Free) ctx.dropped_frees += ok;
  }
  if (const uint64_t lost = log::dropped_bytes()) {
    ctx.notes.push_back("nb's messages not written to stderr (it stayed full): " + std::to_string(lost) + " bytes");
  }
  if (failed_passes_) {
    ctx.notes.push_back("The collector ran out of memory " + std::to_string(failed_passes_) +
                        " times; records of those passes may be missing or counted twice");
  }
  uint64_t stacks_lost = 0;
  registry_.for_each([&](ThreadSlot& slot) { stacks_lost += slot.frames.dropped(); });
  if (stacks_lost) ctx.notes.push_back("Calls recorded without their stack (a thread's frame ring was full): " + std::to_string(stacks_lost));
  if (stacks_.overflowed()) ctx.notes.push_back("Calls recorded without their stack (more than a million distinct stacks): " + std::to_string(stacks_.overflowed()));
  if (late_records_) ctx.notes.push_back("Calls that reached the collector after their window was written, left out: " + std::to_string(late_records_));
  if (late_device_) ctx.notes.push_back("Device records that came after their window was written, left out: " + std::to_string(late_device_));
  if (unjoined_in_windows_) {
    ctx.notes.push_back("Device records joined to no call nb recorded, so to no window, left out: " +
                        std::to_string(unjoined_in_windows_));
  }
  if (order_join_on_) {
    // How sure the arrows are: joined by order alone (a detail differed),
    // placed late (their record came after the ids around them), and calls
    // that waited so long for a record that they were given up.
    const OrderJoin::Counts& j = order_join_.counts();
    log::debug("order join: " + std::to_string(j.joined) + " joined (" + std::to_string(j.weak) + " by order alone, " +
               std::to_string(j.late) + " late), " + std::to_string(j.unjoined) + " without a call (" +
               std::to_string(j.refused) + " refused), " + std::to_string(j.forgotten_calls) + " calls given up, " +
               std::to_string(j.hurried) + " hurried");
    if (j.weak || j.late) {
      ctx.notes.push_back("Order join, in the run so far: " + std::to_string(j.weak) +
                          " device records joined by order alone (their details differ from the call's), " +
                          std::to_string(j.late) + " placed after their turn");
    }
    if (j.max_lag_ns > order_join_.config().slack_ns / 2) {
      ctx.notes.push_back("Device times ran up to " + std::to_string(j.max_lag_ns / 1000) +
                          " us behind host times in the run so far (the two clocks drifting apart):"
                          " some work is shown starting before the call that made it; the order join allowed for it");
    }
    if (j.hurried) {
      ctx.notes.push_back("Order join: " + std::to_string(j.hurried) + " device records placed before their turn (more than " +
                          std::to_string(order_join_.config().max_waiting) +
                          " were waiting: the device ran far behind the calls); those whose call was not in yet have no arrow");
    }
  }
  // In the run so far, like the order join's line: with windows, stacks are
  // interned as records are drained, which may be before or after an earlier
  // window is written, so a per-window count would depend on timing.
  const std::string stack_note = stack_cost_.note(ctx.time.ns_per_tick);
  if (!stack_note.empty()) ctx.notes.push_back(stack_note);
  ctx.kernel_names = names_.snapshot();
  if (ctx.distributed.present) {
    // NCCL's version when it is loaded (PyTorch loads it with libtorch, gloo
    // jobs included); "nccl" the backend only once NCCL's kernels ran.
    ctx.distributed.nccl_version = host_.nccl_version();
    for (const std::string& k : ctx.kernel_names) {
      if (k.find("ncclDevKernel") != std::string::npos || k.find("ncclKernel") != std::string::npos) {
        ctx.distributed.backend = "nccl";
        break;
      }
    }
  }
  return ctx;
}

void Collector::write(Recording& rec, OutputContext ctx, PhaseTimes* phases) {
  if (stacks_.size()) {
    try {
      std::string naming;
      ctx.stacks = stacks_.symbolize(&naming);
      if (!naming.empty()) {
        ctx.notes.push_back(naming);
        log::warn(naming);
      }
    } catch (...) {
      ctx.notes.push_back("Stacks could not be named (out of memory): the snapshot has none");
    }
  }
  rec.trace->file().set_path(ctx.prefix + (options_.compress > 0 ? ".trace.json.gz" : ".trace.json"));
  // A trace that takes long to write says so (the program's exit waits).
  const bool tty = isatty(STDERR_FILENO) == 1;
  auto last_line = std::chrono::steady_clock::time_point{};
  const auto progress = [&](uint64_t done, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (!tty && now - last_line < std::chrono::seconds(5)) return;
    last_line = now;
    const unsigned pct = total ? static_cast<unsigned>(done * 100 / total) : 100;
    const std::string line = "nb: writing " + rec.trace->file().path() + ": " + std::to_string(pct) + "% of " +
                             size_text(total) + " of events";
    log::print(tty ? "\r" + line : line + "\n");
  };
  if (phases) phases->mark("stacks named");
  const OutputResult res = write_outputs(*rec.session, ctx, *rec.trace, progress);
  if (phases) phases->append(res.phases);
  if (tty && last_line != std::chrono::steady_clock::time_point{}) log::print("\n");
  // One line per distinct problem: a missing directory fails all three
  // files the same way.
  std::vector<std::string> said;
  for (const std::string& p : res.problems) {
    if (std::find(said.begin(), said.end(), p) != said.end()) continue;
    said.push_back(p);
    log::warn(p);
  }
  if (options_.print_table) log::print(res.table_for_stderr);
  std::string where;
  for (const std::string& w : res.written) where += (where.empty() ? "" : ", ") + w;
  if (!where.empty()) log::print("nb: wrote " + where + "\n");
  if (ctx.dropped) log::warn(std::to_string(ctx.dropped) + " records dropped (the table's footer says why)");
}

void Collector::note_for_census(const Record& r) {
  // A bound for a diagnostic mode: `nbprof steps` needs a few hundred steps.
  constexpr size_t kMaxCensus = size_t(1) << 22;
  if (census_.size() >= kMaxCensus) return;
  if (r.kind == Kind::Launch && r.name != 0 && r.result == 0) census_.push_back({r.name, false, r.tid, r.start});
  else if (r.kind == Kind::Nvtx) census_.push_back({r.name, true, r.tid, r.end});
}

void Collector::write_census(const OutputContext& ctx) {
  // Every launch by its kernel's name as users see it (demangled), every
  // NVTX range end: what step_census ranks.
  std::vector<CensusEvent> events;
  events.reserve(census_.size());
  std::unordered_map<uint32_t, std::string> names;
  const auto name = [&](uint32_t id) -> const std::string& {
    auto it = names.find(id);
    if (it != names.end()) return it->second;
    std::string n = id < ctx.kernel_names.size() ? demangle(ctx.kernel_names[id]) : std::string();
    return names.emplace(id, std::move(n)).first->second;
  };
  for (const CensusRecord& c : census_) {
    events.push_back({name(c.name), c.nvtx, static_cast<uint64_t>(ctx.time.epoch_ns(c.tick)), c.tid});
  }
  std::sort(events.begin(), events.end(), [](const CensusEvent& a, const CensusEvent& b) { return a.ns < b.ns; });
  const std::string text = step_census(events, 20);
  const std::string path = ctx.prefix + ".steps.txt";
  std::string problem;
  if (!write_output_file(path, ctx.overwrite, [&](std::ostream& os) { os << text; }, problem)) log::warn(problem);
  log::print("nb: step markers (" + path + ")\n" + text);
}

}  // namespace nb
