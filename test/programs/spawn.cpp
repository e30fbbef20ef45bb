// Processes made by a recorded program (docs/reliability.md, lifecycle):
//   spawn fork    launches, forks; the child (no exec) launches too and exits
//                 normally; the parent waits, launches again
//   spawn exec    launches, then posix_spawn's itself as "spawn child" (the
//                 environment, LD_PRELOAD included, is inherited) and waits
//   spawn child   launches 3 kernels
// Exit status: 0, or the first failure.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "fake_cuda.h"
#include "manifest.h"

extern char** environ;

namespace {
bool g_forked_child = false;
}  // namespace

// LeakSanitizer's hook (test/sanitizers.sh builds this program with ASan):
// no leak check at the forked child's exit. GCC 12's sanitizer runtime does
// not lock its allocator around fork, so a child forked while another
// thread of the parent (nb's collector) was allocating inherits a held
// allocator lock, and the leak check, which takes them all, waits forever.
// The runtime's limitation, not nb's: glibc's malloc is fork-safe.
extern "C" __attribute__((visibility("default"), used)) int __lsan_is_turned_off() { return g_forked_child ? 1 : 0; }

namespace {
void kernel_a() {}

void launch(int n) {
  for (int i = 0; i < n; ++i) {
    CHECK_CU(cudaLaunchKernel(reinterpret_cast<const void*>(&kernel_a), dim3(1), dim3(32), nullptr, 0, nullptr));
  }
  CHECK_CU(cudaDeviceSynchronize());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string mode = argv[1];
  CHECK_CU(fakeRegisterKernel(reinterpret_cast<const void*>(&kernel_a), "kernel_a"));
  if (mode == "child") {
    launch(3);
    return 0;
  }
  launch(2);
  if (mode == "fork") {
    const pid_t child = fork();
    if (child == 0) {
      g_forked_child = true;
      launch(5);  // passes straight through: the child is disabled
      std::exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 3;
    launch(2);
    return 0;
  }
  if (mode == "exec") {
    char* child_argv[] = {argv[0], const_cast<char*>("child"), nullptr};
    pid_t child = 0;
    if (posix_spawn(&child, argv[0], nullptr, nullptr, child_argv, environ) != 0) return 4;
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 5;
    return 0;
  }
  return 2;
}
