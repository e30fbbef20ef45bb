// What reading a clock costs on this machine (the shim reads one twice per
// intercepted call): CLOCK_MONOTONIC through the vDSO against the raw TSC.
//   nb-bench-clock    prints "<clock> <ns per read>"    (bench/nbbench clock)
#include <x86intrin.h>

#include <chrono>
#include <cstdio>
#include <ctime>

int main() {
  constexpr int kN = 5000000;
  unsigned long long sink = 0;
  const auto bench = [&](const char* name, auto&& read) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kN; ++i) sink += read();
    const auto t1 = std::chrono::steady_clock::now();
    std::printf("%s %.1f\n", name, std::chrono::duration<double, std::nano>(t1 - t0).count() / kN);
  };
  for (int round = 0; round < 2; ++round) {
    bench("clock_monotonic", [] {
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      return static_cast<unsigned long long>(ts.tv_nsec);
    });
    bench("clock_monotonic_raw", [] {
      timespec ts;
      clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
      return static_cast<unsigned long long>(ts.tv_nsec);
    });
    bench("rdtsc", [] { return __rdtsc(); });
    bench("rdtscp", [] { unsigned aux; return __rdtscp(&aux); });
  }
  return static_cast<int>(sink & 1) * 0;
}
