// Start-up: Uninit → Ready, Dormant or Disabled (shim/state.h). The library's
// constructor reads the settings and does the little that must happen
// before the program runs; the rest (log, rings, stacks, steps) waits for
// the first CUDA call, so that programs that never use CUDA see no
// difference.
#include <dlfcn.h>
#include <sys/resource.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <sched.h>

#include "core/clock.h"
#include "core/log.h"
#include "shim/nvtx_injection.h"
#include "shim/real_functions.h"
#include "shim/runtime.h"
#include "shim/stack_capture.h"
#include "shim/state.h"
#include "shim/steps.h"
#include "shim/threads.h"
#include "shim/torch_allocs.h"
#include "shim/trigger.h"

extern char* program_invocation_short_name;

namespace nb::shim {

std::atomic<int> g_state{static_cast<int>(State::Uninit)};

namespace {

// Plain pointers, set once: the constructor may run after a hook has
// already started nb (from another library's constructor), before this
// file's other globals would be built.
Settings* g_settings = nullptr;
NameTable* g_names = nullptr;
ThreadRegistry* g_registry = nullptr;
std::string* g_torch_allocs_note = nullptr;
std::once_flag g_settings_once;  // constant-initialized

uint32_t round_up_pow2(uint64_t v) {
  uint32_t p = 64;
  while (p < v && p < (1u << 24)) p <<= 1;
  return p;
}

// Another copy of the shim (two paths in LD_PRELOAD, a build's and an
// installed one) loaded before this one: its path, else null. The loader
// lists objects in load order, and the first copy is the one whose hooks
// the program's calls reach.
int find_copy(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<std::pair<uintptr_t, std::string>*>(data);
  if (info->dlpi_addr == search->first) return 1;  // ourselves, before any other copy
  const char* name = info->dlpi_name;
  const char* base = name ? std::strrchr(name, '/') : nullptr;
  base = base ? base + 1 : name;
  if (base != nullptr && std::strncmp(base, "libnb_shim", 10) == 0) {
    search->second = name;
    return 1;
  }
  return 0;
}

std::string earlier_copy() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&find_copy), &self) == 0) return {};
  std::pair<uintptr_t, std::string> search{reinterpret_cast<uintptr_t>(self.dli_fbase), {}};
  // dlpi_addr is the load bias; for a shared object it equals its base.
  dl_iterate_phdr(find_copy, &search);
  if (!search.second.empty()) search.second += std::string(" (this one: ") + (self.dli_fname ? self.dli_fname : "?") + ")";
  return search.second;
}

// A second copy of the shim stays out of the way of the first: every call
// reaches it only through the first one's hooks, and it passes them
// straight through. Decided (and said) once, by whichever of the
// constructor and the first hook comes first.
bool second_copy() {
  static std::once_flag once;
  static bool second = false;
  std::call_once(once, [] {
    const std::string first = earlier_copy();
    if (first.empty()) return;
    second = true;
    set_state(State::Disabled);
    log::print("nb: another copy of libnb_shim.so is loaded first, " + first + "; this one stays out of the way\n");
  });
  return second;
}

// Under a tight RLIMIT_AS (ulimit -v) the program's own allocations and
// nb's compete for the same address space, and what nb takes the program
// may need later: with less than this much left at the first CUDA call, nb records nothing. `why` says how much was left.
constexpr uint64_t kMinAddressSpace = 256ull << 20;

bool enough_address_space(std::string& why) {
  rlimit lim{};
  if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return true;
  unsigned long long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "re")) {
    if (std::fscanf(f, "%llu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  const uint64_t used = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t left = lim.rlim_cur > used ? lim.rlim_cur - used : 0;
  if (left >= kMinAddressSpace) return true;
  why = "only " + std::to_string(left >> 20) + " MiB of address space left under RLIMIT_AS (ulimit -v); nb records "
        "nothing, so that the program keeps it";
  return false;
}

void read_settings_once() {
  std::call_once(g_settings_once, [] {
    char cwd[PATH_MAX];
    ProcessFacts p;
    p.pid = getpid();
    // (Null for a program started with an empty argv.)
    p.short_name = program_invocation_short_name != nullptr ? program_invocation_short_name : "";
    p.argv = read_own_cmdline();
    p.host = short_host_name();
    p.cwd = getcwd(cwd, sizeof cwd) != nullptr ? cwd : "";
    g_settings = new Settings(read_settings([](const char* n) { return static_cast<const char*>(std::getenv(n)); }, p));
  });
}

__attribute__((constructor)) void on_load() {
  // The dlsym entry point, and the fork handler (a fork in the middle of
  // start-up must leave a disabled child, not one waiting for a start that
  // will never finish).
  nb_resolve_real_dlsym();
  // nb's messages go to the stderr the process has now, wherever the
  // program moves its fd 2 later.
  log::open_stream();
  if (second_copy()) return;
  pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
  try {
    read_settings_once();
  } catch (...) {
    return;  // out of memory before main: nb stays out of the way (init_once disables it)
  }
  const Options& o = g_settings->options;
  if (!o.enable) return;
  // Before the program (PyTorch) reads its allocator configuration, and
  // while the process is still single-threaded, as setenv needs.
  if (o.torch_allocs) {
    const AllocConfChange c = torch_alloc_conf(std::getenv("PYTORCH_ALLOC_CONF"), std::getenv("PYTORCH_CUDA_ALLOC_CONF"));
    if (!c.variable.empty()) setenv(c.variable.c_str(), c.value.c_str(), 1);
    if (!c.note.empty()) g_torch_allocs_note = new std::string(c.note);  // said once the log is set up
  }
  // NVTX ranges reach nb through NVTX's injection interface: offered
  // before any library makes its first NVTX call.
  offer_nvtx_injection();
  // NB_TRIGGER=signal: SIGUSR2 must be ours before the program can die of
  // it; only if the program has not claimed it (it cannot have yet, unless
  // a library constructor did).
  if (o.trigger == Trigger::Signal) install_trigger();
}

__attribute__((destructor)) void on_unload() { finish(); }

void init_state() {
  int expected = static_cast<int>(State::Uninit);
  if (!g_state.compare_exchange_strong(expected, static_cast<int>(State::Initializing))) {
    // Another thread is initialising: wait for it (first CUDA calls only).
    while (g_state.load(std::memory_order_acquire) == static_cast<int>(State::Initializing)) sched_yield();
    return;
  }
  if (second_copy()) return;
  nb_resolve_real_dlsym();
  read_settings_once();
  // A forked child that records on its own (its parent never used CUDA).
  if (g_settings->pid != getpid()) g_settings->move_to(getpid());
  const Settings& s = *g_settings;
  const Options& o = s.options;
  log::init(o.log);
  for (const std::string& p : s.problems) log::warn(p);
  std::string tight;
  if (o.enable && !enough_address_space(tight)) {  // before nb loads or maps anything more
    log::warn(tight);
    set_state(State::Disabled);
    return;
  }
  if (g_torch_allocs_note != nullptr) log::warn(*g_torch_allocs_note);
  if (const char* other = other_nvtx_tool()) {
    // NVTX loads one tool per process: the one named first keeps it.
    log::warn(std::string("NVTX ranges not seen: NVTX_INJECTION64_PATH names another tool (") + other + ")" +
              (s.step.kind == StepMarker::Kind::Nvtx ? "; NB_STEP=" + s.step.spec + " ends no step" : ""));
  }
  for (const std::string& line : describe_options(o)) log::debug(line);

  g_names = new NameTable;
  std::string stack_note;
  const uint32_t frame_capacity = init_stacks(o.stacks, o.stack_depth, o.unwind, stack_note);
  if (!stack_note.empty()) log::warn(stack_note);
  g_registry = new ThreadRegistry(round_up_pow2(o.ring_records), frame_capacity);
  if (!init_threads()) {
    log::warn("cannot create a thread-exit key; recording disabled");
    set_state(State::Disabled);
    return;
  }
  log::debug(choose_tick_source(true));
  log::debug("output prefix " + s.prefix);
  init_steps(s.step);
  if (o.keep.ns != 0 && !flight_recorder(o)) {
    log::warn("NB_KEEP does not apply to recording windows (NB_ACTIVE, NB_STEP=profiler-api): each window is written whole");
  } else if (o.keep.ns != 0 && o.trigger == Trigger::Signal) {
    log::info("flight recorder: each SIGUSR2 (kill -USR2 " + std::to_string(getpid()) + ") writes the last " +
              describe_duration(o.keep) + " as <prefix>.d<N>.*");
  }
  if (o.active != 0 && o.step.kind == StepMarker::Kind::None) {
    log::warn("NB_ACTIVE is set without NB_STEP: a step ends at each host-blocking synchronize (NB_STEP=sync); "
              "`nbprof steps -- COMMAND` suggests a marker");
  }
  if (!o.enable) {
    set_state(State::Disabled);
  } else if (o.trigger == Trigger::Signal && !flight_recorder(o)) {
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

}  // namespace

const Settings& settings() {
  read_settings_once();
  return *g_settings;
}

NameTable* name_table() { return g_names; }
ThreadRegistry* thread_registry() { return g_registry; }

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

}  // namespace nb::shim
