// What the collector thread does per record, on one core: CALLS launch
// records (as drained from a ring) into a Session whose timeline streams to
// a gzip trace file, each joined by the order join to one kernel record, in
// passes of 8192 as the collector's would; then the file is finished. The
// writer thread compresses meanwhile (on another core when there is one).
// Prints records (host + device) a second of the collector thread's CPU
// time, the writer's CPU time, and the wall time of the whole.
//
//   build/bench/nb-bench-collector [CALLS] [DIR]    (bench/nbbench collector)
#include <pthread.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "collector/order_join.h"
#include "collector/session.h"
#include "collector/trace_stream.h"
#include "core/api.h"

using namespace nb;

namespace {
double thread_cpu_s(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 2000000;
  const std::string dir = argc > 2 ? argv[2] : "/tmp";
  const std::string path = dir + "/nb-bench-collector.trace.json.gz";
  std::remove(path.c_str());
  const uint64_t base = 1700000000000000000ull;
  TraceWriter writer;
  std::vector<std::string> kernel_names = {""};
  for (int k = 0; k < 20; ++k) kernel_names.push_back("void gemm_kernel_" + std::to_string(k) + "<float, 128>(float*, int)");
  TraceNames names(nullptr, kernel_names);
  TraceStream trace(writer, TraceFileConfig{path, 1, {}}, base, names);
  std::string problem;
  if (!trace.open(problem)) {
    std::fprintf(stderr, "%s\n", problem.c_str());
    return 2;
  }
  TraceSetup setup;
  setup.pid = 1000;
  setup.device_traced = true;
  setup.join_mode = CuptiJoin::Order;
  Session session(SessionLimits{}, &trace, setup, &names);
  const TimeMap time = TimeMap::offset_only(static_cast<int64_t>(base));
  OrderJoin join;
  uint64_t joined = 0;
  const OrderJoin::Emit deliver = [&](const DeviceRecord& d, const OrderJoin::Link& l) {
    joined += l.joined;
    const CorrelationLink link{l.host_id, d.correlation, l.host_tid, l.host_start_ns};
    session.consume(d, l.joined ? &link : nullptr);
  };
  const clockid_t me = [] {
    clockid_t c;
    pthread_getcpuclockid(pthread_self(), &c);
    return c;
  }();
  const double cpu0 = thread_cpu_s(me);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t now_ns = 0;
  for (long i = 0; i < n; ++i) {
    Record r{};
    r.id = (uint64_t{1} << 32) + static_cast<uint64_t>(i) + 1;
    r.api = kApi_cuLaunchKernel;
    r.kind = Kind::Launch;
    r.tid = 4242;
    r.start = 1000ull * static_cast<uint64_t>(i);
    r.end = r.start + 500;
    r.name = 1 + static_cast<uint32_t>(i % 20);
    r.grid[0] = 1 + static_cast<uint32_t>(i % 5);
    r.grid[1] = r.grid[2] = 1;
    r.block[0] = 128;
    r.block[1] = r.block[2] = 1;
    r.stream = 0x5555aaaa0000ull;
    session.consume(r);
    join.add(OrderJoin::Host::from(r, r.start, r.end, 0));
    DeviceRecord d;
    d.kind = DeviceKind::Kernel;
    d.correlation = static_cast<uint32_t>(i + 1);
    d.start = r.start + 100000;
    d.end = d.start + 900;
    d.name = r.name;
    d.raw_name = r.name;
    d.stream = 7;
    d.grid[0] = static_cast<int32_t>(r.grid[0]);
    d.grid[1] = d.grid[2] = 1;
    d.block[0] = 128;
    d.block[1] = d.block[2] = 1;
    join.add(d, now_ns);
    if (i % 8192 == 8191) {
      now_ns = r.end + 1000000;
      session.advance(time, now_ns);
      join.advance({now_ns, UINT64_MAX}, OrderJoin::Pass::Normal, deliver);
    }
  }
  join.advance({now_ns, UINT64_MAX}, OrderJoin::Pass::Final, deliver);
  session.finish_timeline();
  const double cpu1 = thread_cpu_s(me);
  const auto t1 = std::chrono::steady_clock::now();
  if (!trace.file().finish("{\"traceEvents\":[{}", "\n]}\n", TraceFinish{}, problem)) {
    std::fprintf(stderr, "%s\n", problem.c_str());
    return 2;
  }
  const auto t2 = std::chrono::steady_clock::now();
  const double records = 2.0 * static_cast<double>(n);
  const double cpu = cpu1 - cpu0;
  std::printf("collector calls %ld joined %llu records %.0f collector_cpu_s %.3f records_per_s %.0f "
              "ns_per_record %.1f wall_s %.3f finish_s %.3f trace_mb %.1f\n",
              n, static_cast<unsigned long long>(joined), records, cpu, records / cpu, cpu * 1e9 / records,
              std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(),
              static_cast<double>(trace.file().file_bytes()) / 1e6);
  std::remove(path.c_str());
  return joined == static_cast<uint64_t>(n) ? 0 : 1;
}
