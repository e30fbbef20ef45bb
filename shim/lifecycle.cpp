// Lifecycle: Ready → Running (the recorder starts), arming and going
// dormant between windows, Running → Stopping → Stopped (the files), and a
// forked child (shim/state.h). The recorder (collector/) is reached only
// through core/recorder.h; what it asks back is ShimHost below.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "core/clock.h"
#include "core/lock_within.h"
#include "core/log.h"
#include "core/own_fork.h"
#include "core/recorder.h"
#include "shim/device_tracing.h"
#include "shim/exit_signals.h"
#include "shim/native_unwind.h"
#include "shim/python_frames.h"
#include "shim/real_functions.h"
#include "shim/runtime.h"
#include "shim/stack_capture.h"
#include "shim/state.h"
#include "shim/thread_state.h"
#include "shim/trigger.h"

namespace nb::shim {

std::atomic<bool> g_exit_handler_registered{false};

namespace {

Recorder* g_recorder = nullptr;  // never destroyed: hooks and exit paths may reach it late
std::atomic<uint64_t> g_after_exit{0};  // calls made while the files were written at exit
std::atomic<int> g_dying_signal{0};  // a terminating signal the collector is acting on
// Arming (a program thread, after SIGUSR2) and going dormant (the
// collector, after the last window) each happen once per window: a mutex
// keeps CUPTI's on/off and the state change in one order.
std::mutex g_arm_mu;  // constant-initialized

// Made on first use, never destroyed: a hook can start nb from another
// library's constructor, before this file's constructors have run.
std::mutex& start_mu() {
  static auto* m = new std::mutex;
  return *m;
}

void dormant_state() {
  std::lock_guard<std::mutex> lock(g_arm_mu);
  int expected = static_cast<int>(State::Running);
  if (!g_state.compare_exchange_strong(expected, static_cast<int>(State::Dormant))) {
    expected = static_cast<int>(State::Ready);
    if (!g_state.compare_exchange_strong(expected, static_cast<int>(State::Dormant))) return;
  }
  pause_device_callbacks();
}

void arm_state() {
  std::lock_guard<std::mutex> lock(g_arm_mu);
  if (g_state.load(std::memory_order_acquire) != static_cast<int>(State::Dormant)) return;
  if (g_recorder != nullptr) {
    // Device tracing rested between windows: on again before any call of
    // the new window records (the first arming starts it with the recorder).
    g_recorder->resume_device();
    resume_device_callbacks();
  }
  set_state(g_recorder != nullptr ? State::Running : State::Ready);
}

// Whether a recorder runs that would write files at exit (Running, or
// Dormant between windows): asked before a program kills itself.
bool outputs_to_write() {
  const int s = g_state.load(std::memory_order_acquire);
  return g_recorder != nullptr && (s == static_cast<int>(State::Running) || s == static_cast<int>(State::Dormant));
}

// What the recorder asks of the shim (core/recorder.h).
class ShimHost final : public Host {
 public:
  void* driver_function(const char* name) override { return driver_symbol(name); }
  void own_thread() override { t_state.internal = true; }
  void go_dormant() override {
    // A signal that came while recording does not queue another window; one
    // that comes from here on arms the next.
    g_control.arm_request.store(false, std::memory_order_relaxed);
    dormant_state();
  }
  std::string nccl_version() override { return loaded_nccl_version(); }
  void exit_signal(int sig) override {
    if (exit_signal_write_only()) {
      // The program's kill to its group follows.
      finish(false);
      exit_signal_written();
      return;
    }
    // Said before writing, so that an exit racing this one waits for the
    // signal, not for exit().
    g_dying_signal.store(sig);
    // If an exit is already writing the outputs, let it (it dies of the
    // signal once written).
    if (finish(false)) die_of(sig);
  }
};

Start start_recorder() {
  // Wait for a start in progress, but not forever: the starting thread may
  // be blocked on the loader lock (dlopen of CUPTI) that this thread holds
  // (a library constructor making a CUDA call inside dlopen). After the
  // timeout the call passes through and is counted as dropped.
  if (!lock_within(start_mu(), std::chrono::seconds(3))) {
    g_control.lost_at_start.fetch_add(1, std::memory_order_relaxed);
    return Start::Lost;
  }
  std::unique_lock<std::mutex> lock(start_mu(), std::adopt_lock);
  const int s = g_state.load(std::memory_order_acquire);
  if (s == static_cast<int>(State::Running)) return Start::Running;
  if (s != static_cast<int>(State::Ready)) return Start::Off;
  RecorderSetup setup;
  setup.settings = &settings();
  setup.registry = thread_registry();
  setup.names = name_table();
  setup.python = &python_codes();
  own_code_range(setup.own_code_begin, setup.own_code_end);
  static auto* host = new ShimHost;
  Recorder* recorder = make_recorder(setup, *host).release();
  // Device time: CUPTI is started here, on the first CUDA call and before
  // the call proceeds, so no kernel runs unobserved.
  const Options& o = settings().options;
  std::string why;
  if (o.device) start_device_tracing(*recorder, o.cupti_join, why);
  if (!recorder->start()) {
    log::warn("cannot start the collector thread; recording disabled");
    set_state(State::Disabled);
    return Start::Off;
  }
  g_recorder = recorder;
  set_state(State::Running);
  install_exit_signals(outputs_to_write);
  return Start::Running;
}

void at_exit() { finish(); }

}  // namespace

bool recording_slow(int state) {
  switch (static_cast<State>(state)) {
    case State::Running:
    case State::Ready:
      return true;
    case State::Dormant:
      arm_if_requested();
      break;
    case State::Uninit:
    case State::Initializing:
      init_once();
      break;
    case State::Stopping:
      // Exit began: recording stopped, so that threads still launching do
      // not hold up the write; what they do is counted.
      g_after_exit.fetch_add(1, std::memory_order_relaxed);
      return false;
    case State::ForkedChild: {
      int expected = static_cast<int>(State::ForkedChild);
      if (g_state.compare_exchange_strong(expected, static_cast<int>(State::Disabled))) {
        // A plain write, no lock: a lock another thread of the parent held
        // at the fork stays held here.
        log::print("nb: a forked child (pid " + std::to_string(getpid()) +
                   ") of a process that had used CUDA: its CUDA calls are not recorded\n");
      }
      return false;
    }
    default:
      return false;
  }
  const int s = g_state.load(std::memory_order_acquire);
  return s == static_cast<int>(State::Ready) || s == static_cast<int>(State::Running);
}

uint64_t calls_after_exit_began() { return g_after_exit.load(std::memory_order_relaxed); }

void arm_if_requested() {
  bool expected = true;
  if (!g_control.arm_request.compare_exchange_strong(expected, false)) return;
  // The step counter stands still while dormant: the schedule counts from
  // the step the program is in now.
  g_control.arm_step.store(g_control.step.load(std::memory_order_relaxed), std::memory_order_relaxed);
  g_control.arm_tick.store(now_ticks(), std::memory_order_relaxed);
  g_control.armed.store(true, std::memory_order_release);
  arm_state();
}

Start ensure_started() {
  if (g_state.load(std::memory_order_acquire) == static_cast<int>(State::Running)) return Start::Running;
  try {
    return start_recorder();
  } catch (...) {
    set_state(State::Disabled);
    return Start::Off;
  }
}

void register_exit_handler() {
  // Called after the first recorded call *returned*: the CUDA runtime and
  // driver initialise inside that call and register their own teardown
  // there; ours, registered after, runs before theirs (atexit is LIFO), so
  // the final synchronize and CUPTI flush still find CUDA alive.
  static std::atomic<bool> done{false};
  bool expected = false;
  if (done.compare_exchange_strong(expected, true)) std::atexit(at_exit);
  g_exit_handler_registered.store(true, std::memory_order_release);
}

namespace {
const char* g_finish_tag = "";  // set only by finish_before_exec, before it finishes
}  // namespace

void finish_before_exec(const char* path) {
  const int s = g_state.load(std::memory_order_acquire);
  const bool recorded = s == static_cast<int>(State::Running) || s == static_cast<int>(State::Dormant);
  // A vfork child runs in the parent's memory until its exec: it must leave
  // everything as it is (its pid is not the recording's).
  if (!recorded || g_recorder == nullptr || getpid() != settings().pid) return;
  g_finish_tag = ".exec";
  if (finish(true)) {
    log::print(std::string("nb: ") + (path ? path : "a program") +
               " replaces this image (exec): its recording is in the files above; should the exec fail, the "
               "rest of the run is not recorded\n");
  }
}

bool finish(bool wait_for_other) {
  int expected = static_cast<int>(State::Running);
  bool mine = g_state.compare_exchange_strong(expected, static_cast<int>(State::Stopping));
  if (!mine && expected == static_cast<int>(State::Dormant) && g_recorder != nullptr) {
    // Dormant between windows: the collector still runs and may hold one.
    mine = g_state.compare_exchange_strong(expected, static_cast<int>(State::Stopping));
  }
  if (!mine) {
    if (!wait_for_other) return false;
    // Another thread is writing the outputs. If it is the collector after a
    // terminating signal, the process must end of that signal, not return
    // into exit() under the writer: wait for it (the device sync alone may
    // take 5 s), then die of the signal should it not have happened yet.
    // Otherwise (two threads exiting) give the writer some time.
    const int dying = g_dying_signal.load();
    const int limit = dying ? 6000 : 1000;  // 60 s / 10 s
    for (int i = 0; i < limit && g_state.load() == static_cast<int>(State::Stopping); ++i) usleep(10000);
    if (dying) die_of(dying);
    return false;
  }
  try {
    g_recorder->finish_tagged(g_finish_tag);
  } catch (...) {
    log::error("could not write the outputs (out of memory?)");
  }
  set_state(State::Stopped);
  if (log::enabled(LogLevel::Debug)) {
    const std::string why = unwind_fallbacks_text();
    if (!why.empty()) log::debug(why);
    const std::string memo = unwind_memo_text();
    if (!memo.empty()) log::debug(memo);
  }
  if (const uint64_t late = calls_after_exit_began()) {
    log::print("nb: " + std::to_string(late) + " CUDA calls made while nb wrote its files at exit are not in them\n");
  }
  // Nothing more to write: the signals go back to their default, and one
  // that came while the files were written (on an exit path) takes effect.
  const int sig = release_exit_signals();
  if (sig && wait_for_other) die_of(sig);
  return true;
}

// A forked child of a process that never made a CUDA call (a launcher that
// forks its workers) is a fresh CUDA process: it starts nb at its own first
// CUDA call, under its own pid. A child of one that did shares nothing with
// the parent's collector thread (it does not exist in the child) and CUDA
// does not carry over a fork: its CUDA calls pass straight through, said
// once. A child that execs starts afresh either way.
// nb's own child (OwnFork) is none of this: it names frames and exits.
void on_fork_prepare() {
  if (in_own_fork()) return;
  if (g_recorder != nullptr) g_recorder->before_fork();
}

void on_fork_parent() {
  if (in_own_fork()) return;
  if (g_recorder != nullptr) g_recorder->after_fork();
}

void on_fork_child() {
  if (in_own_fork()) return;
  // The locks nb's threads were held at (they do not exist here).
  if (g_recorder != nullptr) g_recorder->after_fork();
  t_state = ThreadState{};
  if (g_state.load(std::memory_order_relaxed) == static_cast<int>(State::Uninit)) return;
  set_state(State::ForkedChild);
  // No collector in the child: a SIGTERM must kill it as usual. (A signal
  // still pending was the parent's.)
  release_exit_signals();
  release_trigger();
}

}  // namespace nb::shim
