#include "shim/trigger.h"

#include <signal.h>

#include <atomic>

#include "core/control.h"

namespace nb::shim {

namespace {

std::atomic<bool> g_installed{false};

void on_sigusr2(int) { g_control.arm_request.store(true, std::memory_order_relaxed); }

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

}  // namespace nb::shim
