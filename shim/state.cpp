#include "shim/state.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <mutex>

#include "collector/clock.h"
#include "collector/collector.h"
#include "collector/log.h"
#include "collector/name_table.h"
#include "collector/thread_registry.h"
#include "shim/device_tracing.h"
#include "shim/hook_scope.h"
#include "shim/real_functions.h"
#include "shim/runtime.h"
#include "shim/native_unwind.h"
#include "shim/stack_capture.h"
#include "shim/exit_signals.h"
#include "shim/python_frames.h"
#include "shim/nvtx_injection.h"
#include "shim/steps.h"
#include "shim/torch_allocs.h"
#include "shim/trigger.h"
#include "shim/thread_state.h"

extern char* program_invocation_short_name;

namespace nb::shim {

std::atomic<int> g_state{static_cast<int>(State::Uninit)};
std::atomic<bool> g_exit_handler_registered{false};
__thread ThreadState t_state __attribute__((tls_model("initial-exec")));

namespace {

Options* g_options = nullptr;
NameTable* g_names = nullptr;
ThreadRegistry* g_registry = nullptr;
Collector* g_collector = nullptr;
DeviceTracer* g_tracer = nullptr;
// Calls made by other threads while one thread was starting the shim.
std::atomic<uint64_t> g_calls_during_start{0};
// Made on first use, never destroyed: a hook can start nb from another
// library's constructor, before this file's constructors have run.
std::timed_mutex& start_mu() {
  static auto* m = new std::timed_mutex;
  return *m;
}
pthread_key_t g_exit_key;
std::string* g_prefix = nullptr;
std::string* g_program = nullptr;

void set_state(State s) { g_state.store(static_cast<int>(s), std::memory_order_release); }

uint32_t round_up_pow2(uint64_t v) {
  uint32_t p = 64;
  while (p < v && p < (1u << 24)) p <<= 1;
  return p;
}

// Program names go into file names: keep them to safe characters.
std::string safe_program_name() {
  std::string out;
  const char* n = program_invocation_short_name;
  for (const char* p = n ? n : ""; *p && out.size() < 64; ++p) {
    const char c = *p;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  return out.empty() ? "program" : out;
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

void on_thread_exit(void* slot) {
  release_unwind_thread();
  ThreadRegistry::release(static_cast<ThreadSlot*>(slot));
  t_state.slot = nullptr;
}

// A forked child shares nothing with the parent's collector thread (it does
// not exist in the child) and its rings are copies: the child is disabled and
// its CUDA calls pass straight through. A child that execs starts afresh.
void on_fork_child() {
  set_state(State::Disabled);
  t_state = ThreadState{};
  // No collector in the child: a SIGTERM must kill it as usual. (A signal
  // still pending was the parent's.)
  release_exit_signals();
  release_trigger();
}

void at_exit() { finish(); }

formats::SortKey sort_key(const std::string& choice) {
  if (choice == "host") return formats::SortKey::HostTotal;
  if (choice == "calls") return formats::SortKey::Calls;
  if (choice == "name") return formats::SortKey::Name;
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

std::string* g_torch_allocs_note = nullptr;
std::atomic<int> g_dying_signal{0};  // a terminating signal the collector is acting on

__attribute__((constructor)) void on_load() {
  // Only what the dlsym entry point needs, and the fork handler (a fork in
  // the middle of start-up must leave a disabled child, not one waiting for
  // a start that will never finish); everything else waits for the first
  // CUDA call, so programs that never use CUDA see no difference.
  nb_resolve_real_dlsym();
  pthread_atfork(nullptr, nullptr, on_fork_child);
  // Before the program (PyTorch) reads its allocator configuration, and
  // while the process is still single-threaded, as setenv needs.
  const char* torch_allocs = std::getenv("NB_TORCH_ALLOCS");
  const char* enable = std::getenv("NB_ENABLE");
  bool wanted = false, enabled = true;
  if (enable != nullptr && !parse_bool(enable, enabled)) enabled = true;  // a bad value: the default
  if (enabled && torch_allocs != nullptr && parse_bool(torch_allocs, wanted) && wanted) {
    const AllocConfChange c = torch_alloc_conf(std::getenv("PYTORCH_ALLOC_CONF"), std::getenv("PYTORCH_CUDA_ALLOC_CONF"));
    if (!c.variable.empty()) setenv(c.variable.c_str(), c.value.c_str(), 1);
    // Said once the log is set up (init_state); a plain pointer, because
    // this constructor may run before the file's other globals are built.
    if (!c.note.empty()) g_torch_allocs_note = new std::string(c.note);
  }
  // NVTX ranges reach nb through NVTX's injection interface: offered
  // before any library makes its first NVTX call.
  if (enabled) offer_nvtx_injection();
  // NB_TRIGGER=signal: SIGUSR2 must be ours before the program can die of
  // it; only if the program has not claimed it (it cannot have yet, unless
  // a library constructor did).
  const char* trigger = std::getenv("NB_TRIGGER");
  if (enabled && trigger != nullptr && std::string(trigger) == "signal") install_trigger();
}

__attribute__((destructor)) void on_unload() { finish(); }

}  // namespace

void init_state();
bool start_collector();

uint32_t intern_name(const char* name) {
  if (name == nullptr || g_names == nullptr) return 0;
  return g_names->intern(name);
}

std::string kernel_name_text(uint32_t id) { return g_names == nullptr ? std::string() : g_names->get(id); }

void init_once() {
  try {
    init_state();
  } catch (...) {
    // Out of memory (or worse) while starting: never let it reach the
    // program; record nothing.
    set_state(State::Disabled);
  }
}

void init_state() {
  int expected = static_cast<int>(State::Uninit);
  if (!g_state.compare_exchange_strong(expected, static_cast<int>(State::Initializing))) {
    // Another thread is initialising: wait for it (first CUDA calls only).
    while (g_state.load(std::memory_order_acquire) == static_cast<int>(State::Initializing)) sched_yield();
    return;
  }
  nb_resolve_real_dlsym();
  std::vector<std::string> problems;
  Options o = parse_options([](const char* n) { return static_cast<const char*>(std::getenv(n)); }, problems);
  log::init(o.log);
  for (const std::string& p : problems) log::warn(p);
  if (g_torch_allocs_note != nullptr) log::warn(*g_torch_allocs_note);
  if (const char* other = other_nvtx_tool()) {
    // NVTX loads one tool per process: the one named first keeps it.
    log::warn(std::string("NVTX ranges not seen: NVTX_INJECTION64_PATH names another tool (") + other + ")" +
              (o.step.rfind("nvtx:", 0) == 0 ? "; NB_STEP=" + o.step + " ends no step" : ""));
  }
  for (const std::string& line : describe_options(o)) log::debug(line);

  g_options = new Options(o);
  g_names = new NameTable;
  std::string stack_note;
  const uint32_t frame_capacity = init_stacks(o.stacks, o.stack_depth, o.unwind, stack_note);
  if (!stack_note.empty()) log::warn(stack_note);
  g_registry = new ThreadRegistry(round_up_pow2(o.ring_records), frame_capacity);
  g_program = new std::string(safe_program_name());
  g_prefix = new std::string(absolute(expand_prefix(o.out, getpid(), *g_program)));
  if (pthread_key_create(&g_exit_key, on_thread_exit) != 0) {
    log::warn("cannot create a thread-exit key; recording disabled");
    set_state(State::Disabled);
    return;
  }
  log::debug(choose_tick_source(true));
  log::debug("output prefix " + *g_prefix);
  init_steps(step_marker_for(o.step, o.active != 0));
  if (o.active != 0 && o.step.empty()) {
    log::warn("NB_ACTIVE is set without NB_STEP: a step ends at each host-blocking synchronize (NB_STEP=sync); "
              "`nbprof steps -- COMMAND` suggests a marker");
  }
  if (!o.enable) {
    set_state(State::Disabled);
  } else if (o.trigger == "signal") {
    if (!trigger_installed()) {
      log::warn("NB_TRIGGER=signal: the program handles SIGUSR2 itself; nb stays dormant and records nothing");
    } else {
      log::info("dormant until SIGUSR2 (kill -USR2 " + std::to_string(getpid()) + ")");
    }
    set_state(State::Dormant);
  } else {
    set_state(State::Ready);
  }
}

// Arming (a program thread, after SIGUSR2) and going dormant (the
// collector, after the last window) each happen once per window: a mutex
// keeps CUPTI's on/off and the state change in one order.
std::mutex g_arm_mu;  // constant-initialized

void arm_state() {
  std::lock_guard<std::mutex> lock(g_arm_mu);
  if (g_state.load(std::memory_order_acquire) != static_cast<int>(State::Dormant)) return;
  if (g_collector != nullptr) {
    // Device tracing rested between windows: on again before any call of
    // the new window records (the first arming starts it with the collector).
    if (g_tracer != nullptr) g_tracer->resume();
    resume_device_callbacks();
  }
  set_state(g_collector != nullptr ? State::Running : State::Ready);
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

bool ensure_started() {
  if (g_state.load(std::memory_order_acquire) == static_cast<int>(State::Running)) return true;
  try {
    return start_collector();
  } catch (...) {
    set_state(State::Disabled);
    return false;
  }
}

StackSources stack_sources() {
  StackSources s;
  uint64_t begin = 0, end = 0;
  if (own_code_range(begin, end)) s.is_own_pc = [begin, end](uint64_t pc) { return pc >= begin && pc < end; };
  s.is_python_eval_pc = is_python_eval_pc;
  s.python_code_info = python_code_info;
  return s;
}

bool start_collector() {
  // Wait for a start in progress, but not forever: the starting thread may
  // be blocked on the loader lock (dlopen of CUPTI) that this thread holds
  // (a library constructor making a CUDA call inside dlopen). After the
  // timeout the call passes through and is counted as dropped.
  std::unique_lock<std::timed_mutex> lock(start_mu(), std::defer_lock);
  if (!lock.try_lock_for(std::chrono::seconds(3))) {
    g_calls_during_start.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const int s = g_state.load(std::memory_order_acquire);
  if (s == static_cast<int>(State::Running)) return true;
  if (s != static_cast<int>(State::Ready)) return false;

  OutputContext ctx;
  ctx.prefix = *g_prefix;
  ctx.pid = getpid();
  ctx.program = *g_program;
  ctx.overwrite = g_options->overwrite;
  ctx.table_rows = g_options->table_rows;
  ctx.table_sort = sort_key(g_options->table_sort);
  ctx.debug_args = g_options->log <= LogLevel::Debug;
  ctx.record_cost_ns = measure_record_cost_ns();

  // Device time: CUPTI is started here, on the first CUDA call and before
  // the call proceeds, so no kernel runs unobserved.
  if (g_options->device) {
    g_tracer = new DeviceTracer(*g_names);
    std::string why;
    if (start_device_tracing(*g_options, *g_tracer, why)) {
      ctx.device_traced = true;
      ctx.join_mode = g_options->cupti_join;
      log::debug("device time through " + g_tracer->api().path + ", join: " + ctx.join_mode);
    } else {
      ctx.device_note = why;
      log::warn("device time not recorded: " + why + "; host calls and memory still are");
    }
  } else {
    ctx.device_note = "NB_DEVICE=0";
  }
  CollectorHooks hooks{[] { return synchronize_devices(std::chrono::seconds(5)); }, query_devices,
                       [] { return g_calls_during_start.load(std::memory_order_relaxed); }, stack_sources(),
                       pending_exit_signal, [](int sig) {
                         if (exit_signal_write_only()) {
                           // The program's kill to its group follows.
                           finish(false);
                           exit_signal_written();
                           return;
                         }
                         // Said before writing, so that an exit racing
                         // this one waits for the signal, not for exit().
                         g_dying_signal.store(sig);
                         // If an exit is already writing the outputs, let it
                         // (it dies of the signal once written).
                         if (finish(false)) die_of(sig);
                       }};
  hooks.advance_step = [] { return g_step.fetch_add(1, std::memory_order_relaxed); };
  hooks.take_arming = take_arming;
  hooks.take_disarm = [] { return g_arm_request.exchange(false); };
  hooks.go_dormant = go_dormant;
  g_collector = new Collector(*g_options, *g_registry, *g_names, std::move(ctx), g_tracer, hooks);
  if (!g_collector->start([] { t_state.internal = true; })) {
    log::warn("cannot start the collector thread; recording disabled");
    set_state(State::Disabled);
    return false;
  }
  set_state(State::Running);
  install_exit_signals();
  return true;
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

bool outputs_to_write() {
  const int s = g_state.load(std::memory_order_acquire);
  return g_collector != nullptr &&
         (s == static_cast<int>(State::Running) || s == static_cast<int>(State::Dormant));
}

bool finish(bool wait_for_other) {
  int expected = static_cast<int>(State::Running);
  bool mine = g_state.compare_exchange_strong(expected, static_cast<int>(State::Stopping));
  if (!mine && expected == static_cast<int>(State::Dormant) && g_collector != nullptr) {
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
    g_collector->finish();
  } catch (...) {
    log::error("could not write the outputs (out of memory?)");
  }
  set_state(State::Stopped);
  // Nothing more to write: the signals go back to their default, and one
  // that came while the files were written (on an exit path) takes effect.
  const int sig = release_exit_signals();
  if (sig && wait_for_other) die_of(sig);
  return true;
}

bool register_thread(ThreadState& t) {
  if (t.internal || !ensure_started()) return false;
  // acquire() takes no lock and allocates with mmap; pthread_setspecific
  // may allocate inside glibc but does not throw.
  const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  ThreadSlot* slot = g_registry->acquire(tid);
  if (slot == nullptr) return false;
  t.slot = slot;
  t.tid = tid;
  t.seq = 0;
  t.stack_clock = static_cast<uint8_t>((tid * 0x9E3779B1u) >> 29);  // 0..7: the first timed stack (stack_capture.cpp)
  pthread_setspecific(g_exit_key, slot);
  return true;
}

}  // namespace nb::shim
