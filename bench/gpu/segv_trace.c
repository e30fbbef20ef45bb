/* Diagnostics for a crash on the GPU machine (no debugger there): preloaded
 * after nb, prints the faulting address, the thread and a backtrace (module
 * + offset for each frame) on SIGSEGV / SIGBUS / SIGABRT, then dies of the
 * signal as before. Not part of nb.
 *
 *   gcc -O1 -shared -fPIC -o segv_trace.so bench/gpu/segv_trace.c
 *   LD_PRELOAD=".../libnb_shim.so .../segv_trace.so" ./program */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void on_fault(int sig, siginfo_t* si, void* uc) {
  (void)uc;
  char line[512];
  int n = snprintf(line, sizeof line, "segv_trace: signal %d at %p, thread %ld (pid %d)\n", sig, si->si_addr,
                   (long)syscall(SYS_gettid), getpid());
  write(2, line, n);
  void* frames[64];
  int count = backtrace(frames, 64);
  for (int i = 0; i < count; ++i) {
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (dladdr(frames[i], &info) && info.dli_fname) {
      n = snprintf(line, sizeof line, "  #%d %s+0x%lx (%s+0x%lx)\n", i, info.dli_fname,
                   (unsigned long)((char*)frames[i] - (char*)info.dli_fbase), info.dli_sname ? info.dli_sname : "?",
                   info.dli_saddr ? (unsigned long)((char*)frames[i] - (char*)info.dli_saddr) : 0ul);
    } else {
      n = snprintf(line, sizeof line, "  #%d %p\n", i, frames[i]);
    }
    write(2, line, n);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  void* warm[2];
  backtrace(warm, 2); /* loads libgcc_s now, not inside the handler */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  sigaction(SIGABRT, &sa, NULL);
}
