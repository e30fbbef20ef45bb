// The order join's cost on the collector thread (collector/order_join.h):
// CALLS host calls that make work and one device record each, joined in
// batches of 8192 as the collector's passes would; kernels of 20 names and
// 5 grids, so the join compares details. Prints ns per call + record and
// how many calls are still kept afterwards (joined calls leave at once).
//
//   build/bench/nb-bench-order-join [CALLS]    (bench/nbbench order-join)
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "collector/order_join.h"

using namespace nb;

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2000000;
  OrderJoin j;
  uint64_t joined = 0;
  const OrderJoin::Emit count = [&](const DeviceRecord&, const OrderJoin::Link& l) { joined += l.joined; };
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    OrderJoin::Host h;
    h.id = static_cast<uint64_t>(i) + 1;
    h.start_ns = 1000ull * static_cast<uint64_t>(i);
    h.end_ns = h.start_ns + 500;
    h.kind = Kind::Launch;
    h.name = 7 + static_cast<uint32_t>(i % 20);
    h.grid[0] = 1 + static_cast<uint32_t>(i % 5);
    h.grid[1] = h.grid[2] = 1;
    h.block[0] = 128;
    h.block[1] = h.block[2] = 1;
    j.add(h);
    DeviceRecord d;
    d.kind = DeviceKind::Kernel;
    d.correlation = static_cast<uint32_t>(i + 1);
    d.start = h.start_ns + 100000;
    d.end = d.start + 1000;
    d.raw_name = h.name;
    d.grid[0] = static_cast<int32_t>(h.grid[0]);
    d.grid[1] = d.grid[2] = 1;
    d.block[0] = 128;
    d.block[1] = d.block[2] = 1;
    j.add(d, 0);
    if (i % 8192 == 8191) j.advance({0, UINT64_MAX}, OrderJoin::Pass::Normal, count);
  }
  j.advance({0, UINT64_MAX}, OrderJoin::Pass::Final, count);
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("order_join calls %ld joined %llu ns_per_call %.1f calls_kept %zu\n", n,
              static_cast<unsigned long long>(joined),
              std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n), j.calls());
  return joined == static_cast<uint64_t>(n) ? 0 : 1;
}
