// The exec family, hooked for one thing: the recording of the image being
// replaced is written first (shim/state.h, finish_before_exec), under
// <prefix>.exec.*, since nothing of it survives a successful exec. The call
// itself goes to libc unchanged; if it fails, the program carries on as it
// would without nb (unrecorded from then on). glibc's execl* and execv*
// call its execve internally, past any hook: each is hooked itself.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <vector>

#include "shim/real_functions.h"
#include "shim/state.h"

namespace {

template <typename Fn>
Fn real(const char* name) {
  return reinterpret_cast<Fn>(nb::shim::real_dlsym(RTLD_NEXT, name));
}

void before_exec(const char* path) {
  try {
    nb::shim::finish_before_exec(path);
  } catch (...) {
  }
}

// execl's arguments as an argv (up to the null one); `envp` takes the one
// after it (execle).
std::vector<char*> collect(const char* arg0, va_list ap, char* const** envp) {
  std::vector<char*> argv{const_cast<char*>(arg0)};
  while (argv.back() != nullptr) argv.push_back(va_arg(ap, char*));
  if (envp != nullptr) *envp = va_arg(ap, char* const*);
  return argv;
}

using ExecVE = int (*)(const char*, char* const[], char* const[]);
using ExecV = int (*)(const char*, char* const[]);

}  // namespace

#define NB_EXEC_EXPORT extern "C" __attribute__((visibility("default")))

NB_EXEC_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  before_exec(path);
  static const auto fn = real<ExecVE>("execve");
  return fn(path, argv, envp);
}

NB_EXEC_EXPORT int execv(const char* path, char* const argv[]) {
  before_exec(path);
  static const auto fn = real<ExecV>("execv");
  return fn(path, argv);
}

NB_EXEC_EXPORT int execvp(const char* file, char* const argv[]) {
  before_exec(file);
  static const auto fn = real<ExecV>("execvp");
  return fn(file, argv);
}

NB_EXEC_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  before_exec(file);
  static const auto fn = real<ExecVE>("execvpe");
  return fn(file, argv, envp);
}

NB_EXEC_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  before_exec(argv[0]);
  static const auto fn = real<int (*)(int, char* const[], char* const[])>("fexecve");
  return fn(fd, argv, envp);
}

NB_EXEC_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = collect(arg, ap, nullptr);
  va_end(ap);
  return execv(path, argv.data());
}

NB_EXEC_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = collect(arg, ap, nullptr);
  va_end(ap);
  return execvp(file, argv.data());
}

NB_EXEC_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  char* const* envp = nullptr;
  std::vector<char*> argv = collect(arg, ap, &envp);
  va_end(ap);
  return execve(path, argv.data(), envp);
}
