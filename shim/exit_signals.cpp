#include "shim/exit_signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace nb::shim {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<int> g_pending{0};

void restore_default(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

// Async-signal-safe: an atomic store, or sigaction and raise.
void on_exit_signal(int sig) {
  int none = 0;
  if (!g_pending.compare_exchange_strong(none, sig)) {
    // Second signal: no more waiting. The signal is blocked inside its own
    // handler, so it lands (with the default action) when this returns.
    restore_default(sig);
    raise(sig);
  }
}

}  // namespace

void install_exit_signals() {
  for (int sig : kSignals) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) continue;
    // The program's own handler (Python's SIGINT → KeyboardInterrupt), or
    // SIG_IGN (nohup): theirs. Only the default is ours to replace.
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL) {
      struct sigaction sa {};
      sa.sa_handler = on_exit_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;  // the program's system calls carry on meanwhile
      sigaction(sig, &sa, nullptr);
    }
  }
}

int pending_exit_signal() { return g_pending.load(std::memory_order_relaxed); }

int release_exit_signals() {
  for (int sig : kSignals) {
    struct sigaction cur {};
    if (sigaction(sig, nullptr, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == on_exit_signal) {
      restore_default(sig);
    }
  }
  return g_pending.exchange(0);
}

void die_of(int sig) {
  restore_default(sig);
  // Process-directed, so a thread that does not block it takes the default
  // action (this, the collector's, blocks every signal).
  kill(getpid(), sig);
  // Every thread blocks it: leave as the default action would have.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  _exit(128 + sig);
}

}  // namespace nb::shim
