#include "collector/collector.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>

#include "collector/log.h"

namespace nb {

namespace {
// Drain period. 16384 records per ring at 128 B drain in well under a
// millisecond; a thread would have to make more than ~8 million calls per
// second to overrun its ring between two passes.
constexpr auto kDrainPeriod = std::chrono::milliseconds(2);
}  // namespace

Collector::Collector(const Options& options, ThreadRegistry& registry, NameTable& names,
                     OutputContext context, DeviceTracer* tracer, CollectorHooks hooks)
    : options_(options),
      registry_(registry),
      names_(names),
      context_(std::move(context)),
      tracer_(tracer && tracer->running() ? tracer : nullptr),
      hooks_(std::move(hooks)),
      session_(SessionLimits{options.trace_max_events, options.mem_max_entries}),
      stacks_(hooks_.stacks) {}

bool Collector::start(std::function<void()> on_thread_start) {
  start_anchor_ = read_anchor();
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  bool ok = true;
  try {
    thread_ = std::thread([this, on_thread_start] {
      if (on_thread_start) on_thread_start();
      run();
    });
  } catch (...) {
    ok = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

size_t Collector::drain_once() {
  size_t n = 0;
  registry_.for_each([&](ThreadSlot& slot) {
    // Exited is read before draining: a slot seen exited is fully drained by
    // this pass, since its owner publishes nothing after exiting.
    const bool exited = slot.state.load(std::memory_order_acquire) == ThreadSlot::kExited;
    // A ring holds one thread's records (it is handed on only when empty),
    // so the thread is noted once per pass, not once per record.
    const size_t got = slot.ring.drain([&](const Record& r) {
      if (r.stack == 0) {
        session_.consume(r);
        return;
      }
      Record c = r;  // from here on, `stack` is the interned id
      c.stack = intern_stack(slot.frames, r.stack);
      session_.consume(c);
    });
    if (got) session_.note_thread(slot.tid.load(std::memory_order_relaxed), slot.name);
    n += got;
    if (exited) ThreadRegistry::recycle_if_exited(slot);
  });
  // Memory records older than the horizon cannot be overtaken by one still
  // in flight on another thread (assuming no call is in flight longer).
  if (session_.memory_pending()) session_.apply_memory(memory_horizon());
  if (tracer_) {
    // CUPTI hands over full buffers on its own; ask for partly filled ones
    // now and then so device records do not wait for the end.
    const auto now = std::chrono::steady_clock::now();
    const auto period = std::chrono::milliseconds(options_.cupti_flush_ms);
    if (options_.cupti_flush_ms != 0 && now - last_flush_ > period) {
      tracer_->flush(false);
      last_flush_ = now;
    }
    take_device_records();
  }
  return n;
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
  constexpr uint64_t kLagNs = 100000000;  // 100 ms
  const ClockAnchor now = read_anchor();
  if (now.mono_ns <= start_anchor_.mono_ns + kLagNs) return 0;
  if (!g_ticks_are_tsc) return now.ticks - kLagNs;
  // Ticks per ns from the start anchor: a rough rate is enough for a lag.
  const double rate = static_cast<double>(now.ticks - start_anchor_.ticks) /
                      static_cast<double>(now.mono_ns - start_anchor_.mono_ns);
  return now.ticks - static_cast<uint64_t>(rate * kLagNs);
}

void Collector::take_device_records() {
  std::vector<DeviceRecord> records;
  std::vector<ExternalCorrelation> external;
  tracer_->take(records, external);
  for (const DeviceRecord& d : records) session_.consume(d);
  for (const ExternalCorrelation& e : external) session_.consume(e);
}

uint64_t Collector::dropped() const {
  uint64_t d = registry_.failed_acquires() + (hooks_.extra_dropped ? hooks_.extra_dropped() : 0);
  const_cast<ThreadRegistry&>(registry_).for_each([&](ThreadSlot& s) { d += s.ring.dropped(); });
  return d;
}

void Collector::run() {
  pthread_setname_np(pthread_self(), "nb-collector");
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    size_t n = 0;
    try {
      n = drain_once();
    } catch (...) {
      // Out of memory while storing records: what was being consumed is
      // lost; count the pass as a failure and keep draining (rings must
      // not fill up and stall accounting).
      ++failed_passes_;
    }
    if (hooks_.pending_signal) {
      if (const int sig = hooks_.pending_signal()) {
        // Out of the loop and the lock: on_signal calls finish(), which
        // takes the lock, on this thread.
        if (hooks_.on_signal) hooks_.on_signal(sig);
        return;
      }
    }
    lock.lock();
    // A busy pass (a ring more than a quarter full on average) goes round
    // again at once instead of sleeping, so floods drop as little as they can.
    if (n > registry_.capacity() / 4) continue;
    cv_.wait_for(lock, kDrainPeriod, [this] { return stop_; });
  }
}

void Collector::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    // Called on the collector thread itself (a terminating signal): it has
    // left its loop; nothing to wait for.
    if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
    else thread_.join();
  }
  drain_once();
  session_.apply_all_memory();
  if (tracer_) {
    // Before CUDA tears itself down (our atexit handler runs first): let the
    // device finish, force out the last buffers, stop CUPTI.
    if (hooks_.synchronize && !hooks_.synchronize()) {
      context_.notes.push_back("The device was still busy 5 s after exit began: work it had not finished is not in the outputs");
    }
    tracer_->flush(true);
    take_device_records();
    tracer_->stop();
    const DeviceTracerCounts c = tracer_->counts();
    context_.device_dropped = c.cupti_dropped;
    if (c.incomplete) {
      context_.notes.push_back("Device records without times (unfinished at the final flush), left out: " +
                               std::to_string(c.incomplete));
    }
    if (c.failed_buffers) {
      context_.notes.push_back("CUPTI buffers only partly kept (out of memory): " + std::to_string(c.failed_buffers));
    }
    if (c.refused_buffers) {
      context_.notes.push_back("CUPTI buffer requests refused (NB_CUPTI_BUFFERS_MB reached): " +
                               std::to_string(c.refused_buffers));
    }
  }
  if (hooks_.devices) context_.devices = hooks_.devices();

  // The second anchor for the tick → time map: at least 20 ms after the
  // first so that the TSC's rate is known to a few parts per million.
  ClockAnchor end = read_anchor();
  if (g_ticks_are_tsc && end.mono_ns - start_anchor_.mono_ns < 20000000) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(20000000 - (end.mono_ns - start_anchor_.mono_ns)));
    end = read_anchor();
  }
  context_.time = TimeMap::between(start_anchor_, end);
  context_.dropped = dropped();
  uint64_t in_rings = 0;
  registry_.for_each([&](ThreadSlot& slot) { in_rings += slot.ring.dropped(); });
  const uint64_t at_start = hooks_.extra_dropped ? hooks_.extra_dropped() : 0;
  if (in_rings) context_.notes.push_back("Dropped because a thread's ring was full (raise NB_RING_RECORDS): " + std::to_string(in_rings));
  if (at_start) context_.notes.push_back("Dropped because they came while another thread was starting nb: " + std::to_string(at_start));
  if (registry_.failed_acquires()) context_.notes.push_back("Dropped because no ring could be mapped: " + std::to_string(registry_.failed_acquires()));
  if (failed_passes_) {
    context_.notes.push_back("The collector ran out of memory " + std::to_string(failed_passes_) +
                             " times; records of those passes may be missing or counted twice");
  }
  uint64_t stacks_lost = 0;
  registry_.for_each([&](ThreadSlot& slot) { stacks_lost += slot.frames.dropped(); });
  if (stacks_lost) context_.notes.push_back("Calls recorded without their stack (a thread's frame ring was full): " + std::to_string(stacks_lost));
  if (stacks_.overflowed()) context_.notes.push_back("Calls recorded without their stack (more than a million distinct stacks): " + std::to_string(stacks_.overflowed()));
  context_.kernel_names = names_.snapshot();
  if (session_.consumed() == 0 && context_.dropped == 0) {
    log::debug("no CUDA calls recorded; no files written");
    return;
  }
  if (stacks_.size()) {
    try {
      context_.stacks = stacks_.symbolize();
    } catch (...) {
      context_.notes.push_back("Stacks could not be named (out of memory): the snapshot has none");
    }
  }
  const OutputResult res = write_outputs(session_, context_);
  for (const std::string& p : res.problems) log::warn(p);
  if (options_.print_table) log::print(res.table_for_stderr);
  std::string where;
  for (const std::string& w : res.written) where += (where.empty() ? "" : ", ") + w;
  if (!where.empty()) log::print("nb: wrote " + where + "\n");
  if (context_.dropped) log::warn(std::to_string(context_.dropped) + " records dropped (the table's footer says why)");
}

}  // namespace nb
