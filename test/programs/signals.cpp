// Terminating signals after some CUDA work, for the lifecycle tests:
//   signals default SIG   the program leaves SIG (INT, TERM, HUP) at its default, then gets it
//   signals handler       its own SIGTERM handler (set before any CUDA call) exits with 7
//   signals reraise HOW  its own one-shot SIGTERM handler (SA_RESETHAND | SA_NODEFER: the
//                         default is back when it runs) cleans up and ends the process
//                         with the signal again (HOW: raise or kill)
//   signals sigwait      SIGTERM blocked everywhere, a thread waits for it with sigwait;
//                         main wakes that thread with kill(getpid(), SIGTERM): exits 0
//   signals ignore        SIGHUP ignored (as under nohup): the program carries on, exits 0
//   signals fork          a forked child (no exec) gets SIGTERM from its parent: exits 0 if it
//                         died of it, 4 if not
//   signals spin N        N launches, then writes ./ready and keeps launching until a
//                         signal ends it (the duplicate-delivery tests: `timeout`, launchers)
//   signals forward N     a launcher: its own group and a worker (`signals spin N`, exec'ed);
//                         once the worker is ready, SIGINT to the whole group (as Ctrl-C in a
//                         terminal does), which the launcher forwards to its worker 10 ms
//                         later: the worker gets SIGINT twice. Exits 0 if it died of SIGINT
//   signals group HOW     leads a new process group with a forked child (no exec) in it, writes
//                         the child's pid to ./child.pid, sets SIGTERM back to its default
//                         and ends the group with it
//                         (HOW: kill0 = kill(0, ..), killpg = kill(-pgid, ..), all = kill(-1, ..)
//                         is not tried: it would reach every process of the user)
#include "fake_cuda.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {
volatile sig_atomic_t g_got = 0;
void own_handler(int) { g_got = 1; }
bool g_reraise_with_kill = false;
void reraising_handler(int sig) {
  if (g_reraise_with_kill) kill(getpid(), sig);
  else raise(sig);
}

void some_cuda_work() {
  void* p = nullptr;
  if (cudaMalloc(&p, 1 << 20) != cudaSuccess) std::exit(2);
  cudaMemset(p, 0, 1 << 20);
  cudaFree(p);
  if (cudaMalloc(&p, 2 << 20) != cudaSuccess) std::exit(2);  // still live when the signal comes
}
void launch_forever(long ready_after) {
  void* p = nullptr;
  if (cudaMalloc(&p, 1 << 20) != cudaSuccess) std::exit(2);
  if (fake_cuda::use_primary_context() != CUDA_SUCCESS) std::exit(2);
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  const std::string image = fake_cuda::module_image({"spin_kernel"});
  if (cuModuleLoadData(&module, image.c_str()) != CUDA_SUCCESS ||
      cuModuleGetFunction(&fn, module, "spin_kernel") != CUDA_SUCCESS) {
    std::exit(2);
  }
  for (long i = 0;; ++i) {
    cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr);
    if (i == ready_after) {
      if (FILE* f = std::fopen("ready", "w")) std::fclose(f);
    }
    if (i > ready_after) usleep(100);
  }
}

pid_t g_worker = 0;
volatile sig_atomic_t g_forward = 0;
void note_sigint(int) { g_forward = 1; }

int launcher(char* self, const char* count) {
  if (setpgid(0, 0) != 0) return 6;
  signal(SIGINT, note_sigint);
  g_worker = fork();
  if (g_worker == 0) {
    signal(SIGINT, SIG_DFL);
    char spin[] = "spin";
    char* args[] = {self, spin, const_cast<char*>(count), nullptr};
    execv(self, args);
    _exit(127);
  }
  for (int i = 0; i < 3000 && access("ready", F_OK) != 0; ++i) usleep(10000);
  kill(0, SIGINT);
  // Forwarded from the launcher's own loop a few milliseconds later, as a
  // launcher written in Python forwards it from its handler.
  while (!g_forward) usleep(1000);
  usleep(10000);
  kill(g_worker, SIGINT);
  int status = 0;
  while (waitpid(g_worker, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGINT ? 0 : 4;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  if (mode == "spin") launch_forever(argc > 2 ? std::atol(argv[2]) : 1000);
  if (mode == "forward") return launcher(argv[0], argc > 2 ? argv[2] : "1000");
  int sig = SIGTERM;
  if (mode == "default" && argc > 2) sig = !std::strcmp(argv[2], "INT") ? SIGINT : !std::strcmp(argv[2], "HUP") ? SIGHUP : SIGTERM;
  if (mode == "handler") signal(SIGTERM, own_handler);
  if (mode == "reraise") {
    g_reraise_with_kill = argc > 2 && !std::strcmp(argv[2], "kill");
    struct sigaction sa {};
    sa.sa_handler = reraising_handler;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(SIGTERM, &sa, nullptr);
  }
  if (mode == "sigwait") {
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, nullptr);  // before any thread, so every thread blocks it
    some_cuda_work();
    std::thread waiter([term] {
      int got = 0;
      sigwait(&term, &got);
      g_got = got;
    });
    kill(getpid(), SIGTERM);
    waiter.join();
    return g_got == SIGTERM ? 0 : 5;
  }
  if (mode == "ignore") {
    signal(SIGHUP, SIG_IGN);
    sig = SIGHUP;
  }
  some_cuda_work();
  if (mode == "group") {
    if (setpgid(0, 0) != 0) return 6;
    const pid_t child = fork();
    if (child == 0) {
      for (int i = 0; i < 1000; ++i) usleep(10000);
      _exit(3);
    }
    if (FILE* f = std::fopen("child.pid", "w")) {
      std::fprintf(f, "%d\n", static_cast<int>(child));
      std::fclose(f);
    }
    // As a launcher ending itself and its workers does: SIGTERM back to the
    // default (nb's own handler would otherwise take it the usual way),
    // then the whole group.
    signal(SIGTERM, SIG_DFL);
    const bool killpg_form = argc > 2 && !std::strcmp(argv[2], "killpg");
    kill(killpg_form ? -getpgrp() : 0, SIGTERM);
    for (int i = 0; i < 1000; ++i) usleep(10000);
    return 3;
  }
  if (mode == "fork") {
    const pid_t child = fork();
    if (child == 0) {
      for (int i = 0; i < 1000; ++i) usleep(10000);
      _exit(3);
    }
    usleep(50000);
    kill(child, SIGTERM);
    int status = 0;
    waitpid(child, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM ? 0 : 4;
  }
  kill(getpid(), sig);
  // Without nb the default action has ended the process by now; with nb it
  // ends once the files are written. Either way this loop never finishes.
  for (int i = 0; i < 1000; ++i) {
    if (g_got) return 7;
    usleep(10000);
  }
  return mode == "ignore" ? 0 : 3;
}
