// Test programs write what they did to a manifest, one tab-separated line per
// fact, so the integration tests can compare it with what the shim recorded:
//   call   NAME  TID  KERNEL   a call that must appear once in the trace
//   alloc  ADDR  SIZE          a device allocation that must be in the snapshot
//   free   ADDR               ...and its free
//   oom    SIZE               an allocation that failed for lack of memory
//   count  NAME  N            calls of NAME made in all
//   errors NAME  N            of those, the ones that returned an error
#pragma once
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace manifest {

inline std::FILE*& file() {
  static std::FILE* f = nullptr;
  return f;
}
inline std::mutex& mu() {
  static std::mutex m;
  return m;
}

inline void open(const char* path) {
  file() = std::fopen(path, "w");
  if (file() == nullptr) {
    std::perror(path);
    std::exit(2);
  }
}

inline void close() { std::fclose(file()); }

inline long tid() { return syscall(SYS_gettid); }

inline void call(const std::string& name, const std::string& kernel = "-") {
  std::lock_guard<std::mutex> lock(mu());
  std::fprintf(file(), "call\t%s\t%ld\t%s\n", name.c_str(), tid(), kernel.c_str());
}

inline void alloc(unsigned long long addr, unsigned long long size) {
  std::lock_guard<std::mutex> lock(mu());
  std::fprintf(file(), "alloc\t%llu\t%llu\n", addr, size);
}

inline void free(unsigned long long addr) {
  std::lock_guard<std::mutex> lock(mu());
  std::fprintf(file(), "free\t%llu\n", addr);
}

inline void oom(unsigned long long size) {
  std::lock_guard<std::mutex> lock(mu());
  std::fprintf(file(), "oom\t%llu\n", size);
}

}  // namespace manifest

// Stops the program with a message when a CUDA call does not do what the test
// needs (that is a broken test double, not a finding about the shim).
#define CHECK_CU(expr)                                                              \
  do {                                                                              \
    const int rc_ = static_cast<int>(expr);                                         \
    if (rc_ != 0) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #expr, rc_); \
      std::exit(3);                                                                 \
    }                                                                               \
  } while (0)
