#include "shim/exit_signals.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>

#include "shim/real_functions.h"

namespace nb::shim {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<bool (*)()> g_outputs_to_write{nullptr};
// A signal the program sends to its process group (or to every process):
// the collector writes but does not die, then the program's own kill goes
// out to the whole group, this process included.
std::atomic<bool> g_write_only{false};
std::atomic<bool> g_written{false};

// libc's kill and raise, looked up when the shim loads: the lookup is not
// async-signal-safe, their use is (a signal handler calls them). Without
// them, the system calls they make.
using KillFn = int (*)(pid_t, int);
using RaiseFn = int (*)(int);
std::atomic<KillFn> g_libc_kill{nullptr};
std::atomic<RaiseFn> g_libc_raise{nullptr};

__attribute__((constructor)) void find_libc_signal_functions() {
  g_libc_kill.store(reinterpret_cast<KillFn>(real_dlsym(RTLD_NEXT, "kill")));
  g_libc_raise.store(reinterpret_cast<RaiseFn>(real_dlsym(RTLD_NEXT, "raise")));
}

int real_kill(pid_t pid, int sig) {
  if (KillFn fn = g_libc_kill.load(std::memory_order_relaxed)) return fn(pid, sig);
  return static_cast<int>(syscall(SYS_kill, pid, sig));
}

int real_raise(int sig) {
  if (RaiseFn fn = g_libc_raise.load(std::memory_order_relaxed)) return fn(sig);
  return static_cast<int>(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig));
}

void restore_default(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

// When the signal being acted on first came (CLOCK_MONOTONIC ns, 0 = none).
std::atomic<int64_t> g_first_ns{0};
// The same signal again within this long of the first is one event
// delivered twice: `timeout` signals its child and then its process group,
// and launchers forward Ctrl-C to workers that the terminal signalled too.
constexpr int64_t kDuplicateNs = 1000000000;

int64_t monotonic_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Takes `sig` as the signal to act on, unless one is already; false then.
bool take_signal(int sig) {
  int64_t unset = 0;
  g_first_ns.compare_exchange_strong(unset, monotonic_now_ns());  // before the signal: a duplicate sees it
  int none = 0;
  return g_control.exit_signal.compare_exchange_strong(none, sig);
}

// Async-signal-safe: atomics and the clock, or sigaction and raise.
void on_exit_signal(int sig) {
  if (take_signal(sig)) return;
  // One is being acted on already. The same signal soon after is a
  // duplicate delivery: the files are still being written, so it is let
  // go. A different one, or the same one later, is the user insisting: no
  // more waiting. The signal is blocked inside its own handler, so it
  // lands (with the default action) when this returns.
  if (g_control.exit_signal.load() == sig && monotonic_now_ns() - g_first_ns.load() < kDuplicateNs) return;
  restore_default(sig);
  real_raise(sig);
}

bool is_exit_signal(int sig) {
  for (int s : kSignals) {
    if (s == sig) return true;
  }
  return false;
}

// The program is about to end itself with `sig` at its default action:
// nothing would be written. Hand the signal to the collector as if it had
// come from outside and wait, at most 30 s, after which the program's own
// signal goes ahead. `group`: the signal goes to other processes too, so
// the collector only writes (and says so) and the program's kill then
// reaches everyone; otherwise the collector writes and dies of it (die_of).
// Only async-signal-safe calls: the program may be inside its own handler.
void before_self_signal(int sig, bool group) {
  bool (*outputs_to_write)() = g_outputs_to_write.load();
  if (!is_exit_signal(sig) || outputs_to_write == nullptr || !outputs_to_write()) return;
  const int saved_errno = errno;
  struct sigaction cur {};
  sigset_t blocked;
  const bool at_default = sigaction(sig, nullptr, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
                          cur.sa_handler == SIG_DFL;  // a handler (ours too) takes it the usual way
  const bool deliverable = pthread_sigmask(SIG_BLOCK, nullptr, &blocked) == 0 && !sigismember(&blocked, sig);
  if (at_default && deliverable) {
    // Said before the signal is handed over: the collector reads it after.
    if (group) g_write_only.store(true);
    if (take_signal(sig)) {
      for (int i = 0; i < 3000 && !(group && g_written.load()); ++i) usleep(10000);
    } else if (group) {
      g_write_only.store(false);  // a signal from outside came first: it is handled as such
    }
  }
  errno = saved_errno;
}

// Whether kill(pid, ...) signals this process among others: its process
// group (0 or minus the group), or every process it may signal (-1).
bool signals_self_among_others(pid_t pid) {
  return pid == 0 || pid == -1 || (pid < -1 && -pid == getpgrp());
}

}  // namespace

void install_exit_signals(bool (*outputs_to_write)()) {
  g_outputs_to_write.store(outputs_to_write);
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

bool exit_signal_write_only() { return g_write_only.load(); }
void exit_signal_written() { g_written.store(true); }

int release_exit_signals() {
  for (int sig : kSignals) {
    struct sigaction cur {};
    if (sigaction(sig, nullptr, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == on_exit_signal) {
      restore_default(sig);
    }
  }
  const int pending = g_control.exit_signal.exchange(0);
  g_first_ns.store(0);
  return pending;
}

void die_of(int sig) {
  restore_default(sig);
  // Process-directed, so a thread that does not block it takes the default
  // action (this, the collector's, blocks every signal).
  real_kill(getpid(), sig);
  // Every thread blocks it: leave as the default action would have.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  real_raise(sig);
  _exit(128 + sig);
}

}  // namespace nb::shim

// kill and raise, hooked for one case: a program ending itself with SIGINT,
// SIGTERM or SIGHUP at the default action. Python does exactly that after an
// uncaught KeyboardInterrupt (Py_FinalizeEx, then SIGINT back to SIG_DFL and
// kill(getpid(), SIGINT), so the shell sees "killed by SIGINT"), as do C
// programs that re-raise from their own handler, and launchers that end
// their whole process group (kill(0, SIGTERM), Python's os.killpg).
// Every other call goes straight to libc's.
extern "C" __attribute__((visibility("default"))) int kill(pid_t pid, int sig) {
  if (pid == getpid()) nb::shim::before_self_signal(sig, false);
  else if (nb::shim::signals_self_among_others(pid)) nb::shim::before_self_signal(sig, true);
  return nb::shim::real_kill(pid, sig);
}

extern "C" __attribute__((visibility("default"))) int raise(int sig) {
  nb::shim::before_self_signal(sig, false);
  return nb::shim::real_raise(sig);
}
