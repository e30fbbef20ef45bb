// The program's end, seen from the hooks: main's return (through a wrapper
// of __libc_start_main, which hands the real main's address to libc and
// gets it back in its own), exit() called directly, and a Python
// interpreter that began finalizing. glibc calls exit for a returning main
// internally, past any hook, hence the wrapper.
#include "shim/program_end.h"

#include <dlfcn.h>

#include "core/clock.h"
#include "shim/python_frames.h"
#include "shim/real_functions.h"

namespace nb::shim {

void mark_program_end() {
  uint64_t running = 0;
  g_control.program_end.compare_exchange_strong(running, now_ticks(), std::memory_order_relaxed);
}

bool python_finalizing_now() {
  if (!python_finalizing()) return false;
  mark_program_end();
  return true;
}

}  // namespace nb::shim

namespace {

using Main = int (*)(int, char**, char**);
using StartMain = int (*)(Main, int, char**, void (*)(), void (*)(), void (*)(), void*);

Main g_main = nullptr;

int main_then_end(int argc, char** argv, char** envp) {
  const int status = g_main(argc, argv, envp);
  nb::shim::mark_program_end();
  return status;
}

int start_main(const char* version, Main main, int argc, char** argv, void (*init)(), void (*fini)(),
               void (*rtld_fini)(), void* stack_end) {
  auto real = reinterpret_cast<StartMain>(dlvsym(RTLD_NEXT, "__libc_start_main", version));
  if (real == nullptr) real = reinterpret_cast<StartMain>(nb::shim::real_dlsym(RTLD_NEXT, "__libc_start_main"));
  g_main = main;
  return real(main != nullptr ? main_then_end : main, argc, argv, init, fini, rtld_fini, stack_end);
}

}  // namespace

// glibc 2.34 gave __libc_start_main a new version; a program refers to the
// one it was linked against, and each goes to its own.
extern "C" __attribute__((visibility("default"))) int nb_libc_start_main_234(Main main, int argc, char** argv,
                                                                           void (*init)(), void (*fini)(),
                                                                           void (*rtld_fini)(), void* stack_end) {
  return start_main("GLIBC_2.34", main, argc, argv, init, fini, rtld_fini, stack_end);
}
extern "C" __attribute__((visibility("default"))) int nb_libc_start_main_225(Main main, int argc, char** argv,
                                                                           void (*init)(), void (*fini)(),
                                                                           void (*rtld_fini)(), void* stack_end) {
  return start_main("GLIBC_2.2.5", main, argc, argv, init, fini, rtld_fini, stack_end);
}
__asm__(".symver nb_libc_start_main_234, __libc_start_main@@GLIBC_2.34");
__asm__(".symver nb_libc_start_main_225, __libc_start_main@GLIBC_2.2.5");

extern "C" __attribute__((visibility("default"), noreturn)) void exit(int status) {
  nb::shim::mark_program_end();
  using Exit = void (*)(int);
  static const auto real = reinterpret_cast<Exit>(nb::shim::real_dlsym(RTLD_NEXT, "exit"));
  real(status);
  __builtin_unreachable();
}
