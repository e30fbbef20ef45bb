#include "shim/trigger.h"

#include <signal.h>

#include "collector/clock.h"
#include "shim/state.h"
#include "shim/steps.h"

namespace nb::shim {

std::atomic<bool> g_arm_request{false};

namespace {

std::atomic<bool> g_installed{false};
std::atomic<bool> g_armed_pending{false};
std::atomic<uint64_t> g_arm_step{0};
std::atomic<uint64_t> g_arm_tick{0};

void on_sigusr2(int) { g_arm_request.store(true, std::memory_order_relaxed); }

}  // namespace

bool install_trigger() {
  struct sigaction old {};
  if (sigaction(SIGUSR2, nullptr, &old) != 0) return false;
  if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) return false;
  struct sigaction sa {};
  sa.sa_handler = on_sigusr2;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGUSR2, &sa, nullptr) != 0) return false;
  g_installed.store(true);
  return true;
}

bool trigger_installed() { return g_installed.load(); }

void release_trigger() {
  if (!g_installed.load()) return;
  struct sigaction cur {};
  if (sigaction(SIGUSR2, nullptr, &cur) != 0 || cur.sa_handler != on_sigusr2) return;  // the program's now
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGUSR2, &dfl, nullptr);
  g_installed.store(false);
}

void arm_if_requested() {
  bool expected = true;
  if (!g_arm_request.compare_exchange_strong(expected, false)) return;
  // The step counter stands still while dormant: the schedule counts from
  // the step the program is in now.
  g_arm_step.store(g_step.load(std::memory_order_relaxed), std::memory_order_relaxed);
  g_arm_tick.store(now_ticks(), std::memory_order_relaxed);
  g_armed_pending.store(true, std::memory_order_release);
  arm_state();
}

bool take_arming(uint64_t& step, uint64_t& tick) {
  if (!g_armed_pending.exchange(false, std::memory_order_acquire)) return false;
  step = g_arm_step.load(std::memory_order_relaxed);
  tick = g_arm_tick.load(std::memory_order_relaxed);
  return true;
}

void go_dormant() {
  // A signal that came while recording does not queue another window; one
  // that comes from here on arms the next.
  g_arm_request.store(false, std::memory_order_relaxed);
  dormant_state();
}

}  // namespace nb::shim
