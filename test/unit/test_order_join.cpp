// The order join (collector/order_join.h): device records placed on host
// calls by the order of their correlation ids and by what they describe.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <map>
#include <random>
#include <vector>

#include "collector/order_join.h"

using namespace nb;

namespace {

constexpr uint64_t kMs = 1000000;

OrderJoin::Host launch(uint64_t id, uint64_t start, uint64_t end, uint32_t name, uint32_t gx = 1, uint64_t window = 0) {
  OrderJoin::Host h;
  h.id = id;
  h.start_ns = start;
  h.end_ns = end;
  h.kind = Kind::Launch;
  h.name = name;
  h.grid[0] = gx;
  h.grid[1] = h.grid[2] = 1;
  h.block[0] = 128;
  h.block[1] = h.block[2] = 1;
  h.window = window;
  return h;
}

OrderJoin::Host work(uint64_t id, Kind kind, uint64_t start, uint64_t end, uint64_t bytes) {
  OrderJoin::Host h;
  h.id = id;
  h.start_ns = start;
  h.end_ns = end;
  h.kind = kind;
  h.bytes = bytes;
  return h;
}

DeviceRecord kernel(uint32_t corr, uint64_t start, uint32_t name, int32_t gx = 1) {
  DeviceRecord d;
  d.kind = DeviceKind::Kernel;
  d.correlation = corr;
  d.start = start;
  d.end = start + 1000;
  d.raw_name = name;
  d.grid[0] = gx;
  d.grid[1] = d.grid[2] = 1;
  d.block[0] = 128;
  d.block[1] = d.block[2] = 1;
  return d;
}

DeviceRecord copy(uint32_t corr, uint64_t start, uint64_t bytes, DeviceKind kind = DeviceKind::Memcpy) {
  DeviceRecord d;
  d.kind = kind;
  d.correlation = corr;
  d.start = start;
  d.end = start + 1000;
  d.bytes = bytes;
  return d;
}

// 40 launches of kernel 99, each with its record, joined and gone: the
// join has seen the ids to be dense. Ids 1..40, calls from 1 us to 80 us;
// returns the next id.
uint32_t dense_ids_seen(OrderJoin& j) {
  for (uint32_t i = 1; i <= 40; ++i) {
    j.add(launch(900 + i, 2000ull * i - 1000, 2000ull * i - 500, 99));
    j.add(kernel(i, 100000 + 100ull * i, 99), 0);
  }
  j.advance({0, UINT64_MAX}, OrderJoin::Pass::Final, {});
  return 41;
}

// `calls` launches 10 us apart (host ids 1, 2, ...; ids from k), of `names`
// kernels in turn; each kernel starts `latency` ns after its launch and
// `drift` ns earlier for each launch before it; the host record of every
// `lose`-th launch is lost (0: none).
void launches_10us_apart(OrderJoin& j, uint32_t k, uint32_t calls, uint32_t names, uint64_t latency, uint64_t drift,
                         uint32_t lose) {
  const uint64_t t = 1000000;
  for (uint32_t i = 0; i < calls; ++i) {
    const uint64_t start = t + 10000ull * i;
    if (lose == 0 || i % lose != lose - 1) j.add(launch(i + 1, start, start + 2000, 30 + i % names));
    j.add(kernel(k + i, start + latency - drift * i, 30 + i % names), 0);
  }
}

// Runs the join to the end and returns correlation id → host id (0 = unjoined).
struct Result {
  std::map<uint32_t, uint64_t> host;
  std::map<uint32_t, uint64_t> window;
  int emitted = 0;
};

void collect(OrderJoin& j, Result& r, uint64_t now, uint64_t drained, bool final_pass) {
  j.advance({now, drained}, final_pass ? OrderJoin::Pass::Final : OrderJoin::Pass::Normal,
            [&](const DeviceRecord& d, const OrderJoin::Link& l) {
    ++r.emitted;
    r.host[d.correlation] = l.joined ? l.host_id : 0;
    r.window[d.correlation] = l.window;
  });
}

}  // namespace

TEST_CASE("order join: one thread, records arriving in any order", "[order_join]") {
  OrderJoin j;
  // kernel A, kernel A, kernel B, a copy, a set: ids 1..5 in call order.
  j.add(launch(101, 1000, 2000, 7));
  j.add(launch(102, 3000, 4000, 7));
  j.add(launch(103, 5000, 6000, 8));
  j.add(work(104, Kind::Memcpy, 7000, 8000, 4096));
  j.add(work(105, Kind::Memset, 9000, 10000, 512));
  std::vector<DeviceRecord> recs = {kernel(1, 50000, 7), kernel(2, 52000, 7), kernel(3, 54000, 8),
                                    copy(4, 56000, 4096), copy(5, 58000, 512, DeviceKind::Memset)};
  std::mt19937 rng(3);
  std::shuffle(recs.begin(), recs.end(), rng);
  for (const auto& d : recs) j.add(d, 100 * kMs);
  Result r;
  collect(j, r, 100 * kMs, 200 * kMs, false);  // nothing missing; the last waits for one after it
  CHECK(r.emitted == 4);
  collect(j, r, 700 * kMs, 800 * kMs, false);  // or for the hold to pass
  CHECK(r.emitted == 5);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 101}, {2, 102}, {3, 103}, {4, 104}, {5, 105}});
  CHECK(j.counts().joined == 5);
  CHECK(j.waiting() == 0);
  CHECK(j.calls() == 0);  // a joined call is not kept
}

TEST_CASE("order join: overlapping calls of two threads are told apart by what they made", "[order_join]") {
  OrderJoin j;
  // Thread 1's launch of A began first, but thread 2's set (inside it in
  // time) took the smaller id; then thread 2 launches B while thread 1's
  // copy is still in its call.
  j.add(launch(11, 1000, 9000, 7));
  j.add(work(21, Kind::Memset, 2000, 3000, 64));
  j.add(work(12, Kind::Memcpy, 10000, 20000, 128));
  j.add(launch(22, 11000, 12000, 8));
  j.add(copy(1, 30000, 64, DeviceKind::Memset), 0);
  j.add(kernel(2, 31000, 7), 0);
  j.add(kernel(3, 32000, 8), 0);
  j.add(copy(4, 33000, 128), 0);
  Result r;
  collect(j, r, 1000 * kMs, 1000 * kMs, false);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 21}, {2, 11}, {3, 22}, {4, 12}});
}

TEST_CASE("order join: a missing id holds back the ones after it, then is skipped", "[order_join]") {
  OrderJoin::Config c;
  c.hold_ns = 500 * kMs;
  OrderJoin j(c);
  j.add(launch(1, 1000, 2000, 7));
  j.add(launch(2, 3000, 4000, 8));
  j.add(launch(3, 5000, 6000, 9));
  // Id 1's record is still on its way (another stream's buffer).
  j.add(kernel(2, 20000, 8), 100 * kMs);
  j.add(kernel(3, 21000, 9), 100 * kMs);
  Result r;
  collect(j, r, 200 * kMs, 300 * kMs, false);
  CHECK(r.emitted == 0);  // held
  j.add(kernel(1, 19000, 7), 250 * kMs);
  collect(j, r, 260 * kMs, 300 * kMs, false);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 1}, {2, 2}});  // 3: nothing after it yet
  collect(j, r, 700 * kMs, 800 * kMs, false);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 1}, {2, 2}, {3, 3}});
}

TEST_CASE("order join: a record held past its turn among identical calls; each call taken once", "[order_join]") {
  for (const bool dense : {false, true}) {
    DYNAMIC_SECTION((dense ? "ids seen dense" : "ids not yet seen dense")) {
      OrderJoin::Config c;
      c.hold_ns = 500 * kMs;
      OrderJoin j(c);
      const uint32_t k = dense ? dense_ids_seen(j) : 1;
      const uint64_t t = 1000000;
      // Three launches of one kernel, a set, a fifth launch of it: the first
      // kernel's record comes only after the hold (it ran long).
      j.add(launch(1, t + 1000, t + 2000, 7));
      j.add(launch(2, t + 3000, t + 4000, 7));
      j.add(launch(3, t + 5000, t + 6000, 7));
      j.add(work(4, Kind::Memset, t + 7000, t + 8000, 64));
      j.add(launch(5, t + 9000, t + 10000, 7));
      for (uint32_t i : {1u, 2u, 4u}) j.add(kernel(k + i, t + 900000 + i, 7), 100 * kMs);
      j.add(copy(k + 3, t + 900004, 64, DeviceKind::Memset), 100 * kMs);
      Result r;
      collect(j, r, 700 * kMs, UINT64_MAX, false);  // the hold is over: the others go on
      REQUIRE(r.emitted == 4);
      if (dense) {
        // One id skipped: the fitting call with one passed over before it.
        CHECK(r.host[k + 1] == 2);
        CHECK(r.host[k + 2] == 3);
      } else {
        // Nothing says which of two identical calls made it.
        CHECK(r.host[k + 1] == 1);
        CHECK(r.host[k + 2] == 2);
      }
      CHECK(r.host[k + 3] == 4);
      CHECK(r.host[k + 4] == 5);
      j.add(kernel(k, t + 800000, 7), 900 * kMs);
      collect(j, r, 1500 * kMs, UINT64_MAX, false);
      // Late: with dense ids it finds call 1 between its neighbours; without,
      // no call is left for it (none is taken twice).
      CHECK(r.host[k] == (dense ? 1u : 0u));
    }
  }
}

TEST_CASE("order join: a record CUPTI dropped among identical launches moves no arrow", "[order_join]") {
  OrderJoin::Config c;
  c.hold_ns = 100 * kMs;
  OrderJoin j(c);
  const uint32_t k = dense_ids_seen(j);
  const uint64_t t = 1000000;
  for (uint32_t i = 0; i < 10; ++i) j.add(launch(i, t + 2000 * i, t + 2000 * i + 1000, 7));
  for (uint32_t i = 0; i < 10; ++i) {
    if (i != 3) j.add(kernel(k + i, t + 500000 + 5000 * i, 7), 0);  // the 4th never comes
  }
  Result r;
  collect(j, r, 200 * kMs, UINT64_MAX, false);
  for (uint32_t i = 0; i < 10; ++i) {
    if (i != 3) CHECK(r.host[k + i] == i);
  }
}

TEST_CASE("order join: a call nb did not record shifts no arrow onto the next step", "[order_join]") {
  // Steps of 5 different kernels; the program runs a step ahead of the
  // device; the host record of step 1's third launch was lost (a full ring).
  OrderJoin j;
  const uint32_t k = dense_ids_seen(j);
  const uint64_t t = 1000000;
  uint32_t id = k;
  std::vector<std::pair<uint32_t, uint64_t>> want;  // correlation id -> host id (0: no call)
  for (uint32_t step = 0; step < 6; ++step) {
    for (uint32_t n = 0; n < 5; ++n) {
      const uint64_t host = 100 * step + n + 1;
      const uint64_t start = t + 10000 * step + 2000 * n;
      const bool lost = step == 1 && n == 2;
      if (!lost) j.add(launch(host, start, start + 1000, 10 + n));
      j.add(kernel(id, start + 15000, 10 + n), 0);
      want.emplace_back(id++, lost ? 0 : host);
    }
  }
  Result r;
  collect(j, r, 0, UINT64_MAX, true);
  for (const auto& [corr, host] : want) {
    INFO("correlation " << corr);
    CHECK(r.host[corr] == host);
  }
  CHECK(j.counts().refused == 1);
}

TEST_CASE("order join: a late record finds its call between the calls of the ids around it", "[order_join]") {
  OrderJoin::Config c;
  c.hold_ns = 500 * kMs;
  OrderJoin j(c);
  j.add(launch(1, 1000, 2000, 7));
  j.add(launch(2, 3000, 4000, 8));  // its record comes late
  j.add(launch(3, 5000, 6000, 9));
  j.add(launch(4, 7000, 8000, 8));
  j.add(kernel(1, 100000, 7), 100 * kMs);
  j.add(kernel(3, 102000, 9), 100 * kMs);
  j.add(kernel(4, 103000, 8), 100 * kMs);
  Result r;
  collect(j, r, 700 * kMs, 800 * kMs, false);
  CHECK(r.host[1] == 1);
  CHECK(r.host[3] == 3);
  CHECK(r.host[4] == 4);
  j.add(kernel(2, 101000, 8), 900 * kMs);
  collect(j, r, 1500 * kMs, 1500 * kMs, false);
  CHECK(r.host[2] == 2);
}

TEST_CASE("order join: calls without device work are passed over", "[order_join]") {
  OrderJoin j;
  // A copy of 0 bytes makes no record; neither does a launch whose record
  // CUPTI never writes. Ids follow only the calls that made work.
  j.add(work(1, Kind::Memcpy, 1000, 2000, 0));
  j.add(launch(2, 3000, 4000, 7));
  j.add(launch(3, 5000, 6000, 8));
  j.add(work(4, Kind::Memcpy, 7000, 8000, 256));
  j.add(kernel(1, 10000, 7), 0);
  j.add(copy(2, 11000, 256), 0);
  Result r;
  collect(j, r, 0, 10 * kMs, true);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 2}, {2, 4}});
}

TEST_CASE("order join: graph launches, work from calls nb did not see, calls after the work", "[order_join]") {
  OrderJoin j;
  OrderJoin::Host g = work(1, Kind::Graph, 1000, 2000, 0);
  j.add(g);
  j.add(launch(2, 3000, 4000, 7));
  j.add(launch(3, 50000, 51000, 9));  // began after every record below started
  DeviceRecord n1 = kernel(1, 10000, 5), n2 = kernel(1, 11000, 6), n3 = copy(1, 12000, 64);
  n1.graph_id = n2.graph_id = n3.graph_id = 4;
  for (const auto& d : {n1, n2, n3}) j.add(d, 0);
  j.add(kernel(2, 20000, 7), 0);
  j.add(kernel(3, 21000, 8), 0);  // a kernel no hooked call launched
  j.add(kernel(4, 22000, 9), 0);  // like call 3's, but it ran before call 3 began
  Result r;
  int graph_records = 0;
  j.advance({kMs, 10 * kMs}, OrderJoin::Pass::Final, [&](const DeviceRecord& d, const OrderJoin::Link& l) {
    if (d.correlation == 1 && l.joined && l.host_id == 1) ++graph_records;
    r.host[d.correlation] = l.joined ? l.host_id : 0;
  });
  CHECK(graph_records == 3);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 1}, {2, 2}, {3, 0}, {4, 0}});
  CHECK(j.counts().unjoined == 2);
}

TEST_CASE("order join: details that differ still join when the ids go in step", "[order_join]") {
  OrderJoin j;
  j.add(work(1, Kind::Memcpy, 1000, 2000, 1000));  // CUPTI counts the copy as 1024 bytes
  j.add(launch(2, 3000, 4000, 7));
  j.add(copy(1, 10000, 1024), 0);
  j.add(kernel(2, 11000, 7), 0);
  Result r;
  collect(j, r, 0, 10 * kMs, true);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 1}, {2, 2}});
  CHECK(j.counts().weak == 1);
}

TEST_CASE("order join: not by order alone when the next record fits the call", "[order_join]") {
  // A copy made by a call nb does not hook, then the program's own copy:
  // the first record must not take the program's call.
  OrderJoin j;
  j.add(work(1, Kind::Memcpy, 1000, 2000, 4096));
  j.add(copy(1, 10000, 512), 0);   // no call of 512 bytes
  j.add(copy(2, 11000, 4096), 0);  // the program's
  Result r;
  collect(j, r, 0, 10 * kMs, true);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 0}, {2, 1}});
  CHECK(j.counts().weak == 0);
}

TEST_CASE("order join: calls captured into a graph (no work) are passed over by the graph's launches", "[order_join]") {
  // Launches into a stream being captured make no device work (whether they
  // took ids is not known): the graph launch's records pass them over; the
  // eager launch after it, of another kernel, is not disturbed.
  for (const bool captured_take_ids : {false, true}) {
    DYNAMIC_SECTION("captured calls take ids: " << captured_take_ids) {
      OrderJoin j;
      const uint32_t k = dense_ids_seen(j);
      const uint64_t t = 1000000;
      j.add(launch(1, t + 1000, t + 2000, 7));            // captured
      j.add(work(2, Kind::Memset, t + 3000, t + 4000, 64)); // captured
      j.add(work(3, Kind::Graph, t + 10000, t + 11000, 0));
      j.add(launch(4, t + 12000, t + 13000, 8));
      const uint32_t g = captured_take_ids ? k + 2 : k;
      DeviceRecord n1 = kernel(g, t + 20000, 7), n2 = copy(g, t + 21000, 64, DeviceKind::Memset);
      n1.graph_id = n2.graph_id = 1;
      j.add(n1, 0);
      j.add(n2, 0);
      j.add(kernel(g + 1, t + 22000, 8), 0);
      Result r;
      collect(j, r, 0, UINT64_MAX, true);
      CHECK(r.host == std::map<uint32_t, uint64_t>{{g, 3}, {g + 1, 4}});
    }
  }
}

TEST_CASE("order join: correlation ids wrapping at 2^32", "[order_join]") {
  OrderJoin j;
  j.add(launch(1, 1000, 2000, 7));
  j.add(launch(2, 3000, 4000, 8));
  j.add(launch(3, 5000, 6000, 9));
  j.add(kernel(0xfffffffeu, 10000, 7), 0);
  j.add(kernel(0xffffffffu, 11000, 8), 0);
  j.add(kernel(1, 12000, 9), 0);  // after the wrap
  Result r;
  collect(j, r, 0, UINT64_MAX, true);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{0xfffffffeu, 1}, {0xffffffffu, 2}, {1, 3}});
}

TEST_CASE("order join: a record waits until the rings were drained after its work", "[order_join]") {
  OrderJoin::Config c;
  c.settle_ns = 5 * kMs;
  OrderJoin j(c);
  // A synchronous copy: its record can reach nb before the call's own
  // record does (the call returns after its work ends).
  j.add(copy(1, 10 * kMs, 64), 11 * kMs);
  Result r;
  collect(j, r, 12 * kMs, 12 * kMs, false);
  CHECK(r.emitted == 0);
  j.add(work(7, Kind::Memcpy, 9 * kMs, 11 * kMs + 500, 64));
  collect(j, r, 600 * kMs, 20 * kMs, false);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 7}});
}

TEST_CASE("order join: a record waits while a call begun before its work is still in flight", "[order_join]") {
  OrderJoin j;
  // Thread A launched kernel 5 at 10 ms and was taken off the CPU before
  // returning; thread B's launch came after. Both records are in, B's
  // host record too, A's not: A's call is in flight since 10 ms.
  j.add(launch(202, 12 * kMs, 12 * kMs + 500, 6));
  j.add(kernel(1, 10 * kMs + 100, 5), 20 * kMs);
  j.add(kernel(2, 12 * kMs + 100, 6), 20 * kMs);
  Result r;
  const auto pass = [&](uint64_t now, uint64_t in_call) {
    j.advance({now, now, in_call}, OrderJoin::Pass::Normal, [&](const DeviceRecord& d, const OrderJoin::Link& l) {
      ++r.emitted;
      r.host[d.correlation] = l.joined ? l.host_id : 0;
    });
  };
  pass(100 * kMs, 10 * kMs);
  CHECK(r.emitted == 0);
  // A returns: its record is in, it is out of its call.
  j.add(launch(101, 10 * kMs, 300 * kMs, 5));
  pass(301 * kMs, UINT64_MAX);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 101}});  // (2 waits for a record after it)
  pass(600 * kMs, UINT64_MAX);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 101}, {2, 202}});
}

TEST_CASE("order join: a call in flight for longer than the hold stops holding records back", "[order_join]") {
  OrderJoin j;
  // A synchronous copy waiting on the queue for seconds: the kernels it
  // waits for are not its work.
  j.add(launch(101, 10 * kMs, 10 * kMs + 500, 5));
  j.add(kernel(1, 30 * kMs, 5), 40 * kMs);
  j.add(kernel(2, 31 * kMs, 5), 40 * kMs);
  int emitted = 0;
  j.advance({400 * kMs, 400 * kMs, 20 * kMs}, OrderJoin::Pass::Normal,
            [&](const DeviceRecord&, const OrderJoin::Link&) { ++emitted; });
  CHECK(emitted == 0);
  j.advance({600 * kMs, 600 * kMs, 20 * kMs}, OrderJoin::Pass::Normal,
            [&](const DeviceRecord&, const OrderJoin::Link&) { ++emitted; });
  CHECK(emitted == 2);
  CHECK(j.counts().joined == 1);
}

TEST_CASE("order join: ids taken by every call (sparse) still join, once the holds pass", "[order_join]") {
  OrderJoin::Config c;
  c.hold_ns = 100 * kMs;
  OrderJoin j(c);
  // Ids 1, 4, 9, 10: the calls between took ids but made no work.
  j.add(launch(1, 1000, 2000, 7));
  j.add(launch(2, 3000, 4000, 7));
  j.add(work(3, Kind::Memset, 5000, 6000, 8));
  j.add(launch(4, 7000, 8000, 7));
  j.add(kernel(1, 10000, 7), 0);
  j.add(kernel(4, 11000, 7), 0);
  j.add(copy(9, 12000, 8, DeviceKind::Memset), 0);
  j.add(kernel(10, 13000, 7), 0);
  Result r;
  collect(j, r, 50 * kMs, 50 * kMs, false);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 1}});
  collect(j, r, 150 * kMs, 150 * kMs, false);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 1}, {4, 2}, {9, 3}, {10, 4}});
}

TEST_CASE("order join: windows travel with the link; forced joins everything at once", "[order_join]") {
  OrderJoin j;
  j.add(launch(1, 1000, 2000, 7, 1, 0));  // a warm-up step
  j.add(launch(2, 3000, 4000, 7, 1, 3));  // window 3
  j.add(kernel(2, 10000, 7), 0);
  j.add(kernel(1, 9000, 7), 0);
  Result r;
  collect(j, r, 0, 0, true);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 1}, {2, 2}});
  CHECK(r.window == std::map<uint32_t, uint64_t>{{1, 0}, {2, 3}});
}

TEST_CASE("order join: many threads launching at once, each kernel back to its own call", "[order_join]") {
  // 16 threads x 200 launches; a thread's calls follow each other, threads
  // overlap at random; ids are taken at a random instant inside each call.
  // Grids name the call (thread, iteration), as bench/workloads/threads_join.cu.
  std::mt19937_64 rng(11);
  struct Call {
    uint64_t start, end, take;
    uint32_t t, i;
  };
  std::vector<Call> calls;
  for (uint32_t t = 0; t < 16; ++t) {
    uint64_t now = 1000 + rng() % 5000;
    for (uint32_t i = 0; i < 200; ++i) {
      const uint64_t len = 300 + rng() % 3000;
      calls.push_back({now, now + len, now + rng() % len, t, i});
      now += len + rng() % 2000;
    }
  }
  OrderJoin j;
  for (const Call& c : calls) {
    OrderJoin::Host h = launch(uint64_t(c.t) << 32 | c.i, c.start, c.end, 7, c.i + 1);
    h.grid[1] = c.t + 1;
    j.add(h);
  }
  std::vector<size_t> by_take(calls.size());
  for (size_t k = 0; k < calls.size(); ++k) by_take[k] = k;
  std::sort(by_take.begin(), by_take.end(), [&](size_t a, size_t b) { return calls[a].take < calls[b].take; });
  std::vector<DeviceRecord> recs;
  for (size_t k = 0; k < by_take.size(); ++k) {
    const Call& c = calls[by_take[k]];
    DeviceRecord d = kernel(static_cast<uint32_t>(k + 1), 10 * kMs + k * 1000, 7, static_cast<int32_t>(c.i + 1));
    d.grid[1] = static_cast<int32_t>(c.t + 1);
    recs.push_back(d);
  }
  std::shuffle(recs.begin(), recs.end(), rng);
  for (const auto& d : recs) j.add(d, 0);
  int right = 0, wrong = 0;
  j.advance({kMs, 100 * kMs}, OrderJoin::Pass::Final, [&](const DeviceRecord& d, const OrderJoin::Link& l) {
    const uint64_t want = uint64_t(d.grid[1] - 1) << 32 | uint64_t(d.grid[0] - 1);
    (l.joined && l.host_id == want ? right : wrong) += 1;
  });
  CHECK(wrong == 0);
  CHECK(right == 3200);
}

TEST_CASE("order join: calls never matched are forgotten, and counted", "[order_join]") {
  OrderJoin::Config c;
  c.forget_ns = 10 * kMs;
  c.keep_ns = 1 * kMs;
  OrderJoin j(c);
  j.add(launch(1, 1000, 2000, 7));
  j.add(launch(2, 3000, 4000, 7));
  Result r;
  collect(j, r, 0, 0, false);
  CHECK(j.calls() == 2);
  j.add(launch(3, 20 * kMs, 20 * kMs + 1000, 7));
  collect(j, r, 0, 0, false);
  CHECK(j.calls() == 1);
  CHECK(j.counts().forgotten_calls == 2);
}

TEST_CASE("order join: too many records waiting are placed without their waits, and counted", "[order_join]") {
  OrderJoin::Config c;
  c.max_waiting = 4;
  OrderJoin j(c);
  for (uint64_t i = 1; i <= 10; ++i) j.add(launch(100 + i, i * 1000, i * 1000 + 500, 7));
  // The device ran far behind: every record ends after the last drain, so
  // each would wait for a drain after its end.
  for (uint32_t i = 1; i <= 10; ++i) j.add(kernel(i, 10 * kMs + i * 1000, 7), 0);
  Result r;
  collect(j, r, 0, 1 * kMs, false);
  CHECK(j.waiting() == 4);
  CHECK(j.counts().hurried == 6);
  CHECK(r.host == std::map<uint32_t, uint64_t>{{1, 101}, {2, 102}, {3, 103}, {4, 104}, {5, 105}, {6, 106}});
}

TEST_CASE("order join: records after a run of ids not come yet go to their own calls or none",
          "[order_join]") {
  // The device records of a window's last steps are still in a CUPTI
  // buffer, except some after them, at its deadline (a NoWait pass) or once
  // they have waited past the hold (a Normal pass). A layer of four kernels
  // repeats; every call was recorded. A record after the run of missing ids
  // must not take the first earlier call of its kernel, nor any call of
  // another kernel; those missing, when they come, find theirs.
  const bool deadline = GENERATE(true, false);
  INFO((deadline ? "NoWait pass" : "Normal pass after the hold"));
  OrderJoin j;
  const uint32_t k = dense_ids_seen(j);
  const uint64_t t = 1000000;
  constexpr uint32_t kCalls = 300, kMissFrom = 150, kMissTo = 230;
  for (uint32_t i = 0; i < kCalls; ++i) {
    const uint64_t start = t + 5000ull * i;
    j.add(launch(i + 1, start, start + 1000, 20 + i % 4));
  }
  const auto record = [&](uint32_t i) { return kernel(k + i, t + 5000ull * i + 1500, 20 + i % 4); };
  for (uint32_t i = 0; i < kCalls; ++i) {
    if (i < kMissFrom || i >= kMissTo) j.add(record(i), 0);
  }
  Result r;
  const auto pass = [&](OrderJoin::Pass p) {
    j.advance({10 * kMs, 10 * kMs}, p, [&](const DeviceRecord& d, const OrderJoin::Link& l) {
      r.host[d.correlation] = l.joined ? l.host_id : 0;
    });
  };
  if (deadline) {
    pass(OrderJoin::Pass::NoWait);
  } else {
    j.advance({600 * kMs, 600 * kMs}, OrderJoin::Pass::Normal, [&](const DeviceRecord& d, const OrderJoin::Link& l) {
      r.host[d.correlation] = l.joined ? l.host_id : 0;
    });
  }
  CHECK(j.counts().weak == 0);
  for (uint32_t i = 0; i < kCalls; ++i) {
    if (i >= kMissFrom && i < kMissTo) continue;
    INFO("call " << i + 1);
    CHECK(r.host.at(k + i) == i + 1);
  }
  for (uint32_t i = kMissFrom; i < kMissTo; ++i) j.add(record(i), 0);
  pass(OrderJoin::Pass::Final);
  for (uint32_t i = kMissFrom; i < kMissTo; ++i) {
    INFO("late call " << i + 1);
    CHECK(r.host.at(k + i) == i + 1);
  }
}

TEST_CASE("order join: never by order alone onto a launch of another kernel", "[order_join]") {
  // The record's own call is not among the open ones (taken, or never
  // hooked); the next open launch is of another kernel, and no record
  // after it says so yet (a deadline). Both names known: no join.
  OrderJoin j;
  const uint32_t k = dense_ids_seen(j);
  const uint64_t t = 1000000;
  j.add(launch(1, t, t + 1000, 5));
  j.add(kernel(k, t + 500, 6), 0);
  Result r;
  j.advance({10 * kMs, 10 * kMs}, OrderJoin::Pass::NoWait, [&](const DeviceRecord& d, const OrderJoin::Link& l) {
    r.host[d.correlation] = l.joined ? l.host_id : 0;
  });
  CHECK(r.host == std::map<uint32_t, uint64_t>{{k, 0}});
  CHECK(j.counts().weak == 0);
  // A name the hook could not read does not count against it.
  OrderJoin u;
  const uint32_t ku = dense_ids_seen(u);
  u.add(launch(1, t, t + 1000, 0));
  u.add(kernel(ku, t + 500, 6, 2), 0);
  Result ru;
  u.advance({10 * kMs, 10 * kMs}, OrderJoin::Pass::NoWait, [&](const DeviceRecord& d, const OrderJoin::Link& l) {
    ru.host[d.correlation] = l.joined ? l.host_id : 0;
  });
  CHECK(ru.host == std::map<uint32_t, uint64_t>{{ku, 1}});
  CHECK(u.counts().weak == 1);
}

TEST_CASE("order join: device times drifting behind the host's are followed", "[order_join]") {
  // Seen on the H200: CUPTI's device times drifting 20 us a second behind
  // nb's host times, until work seemed to start 20 us and more before the
  // call that made it. Here 45 us over 3000 launches of a layer of 16
  // kernels (the lag is measured on kernels that do not come again within
  // about 0.1 ms).
  OrderJoin j;
  const uint32_t k = dense_ids_seen(j);
  constexpr uint32_t kCalls = 3000;
  launches_10us_apart(j, k, kCalls, 16, 6000, 15, 0);
  Result r;
  collect(j, r, 0, UINT64_MAX, true);
  for (uint32_t i = 0; i < kCalls; ++i) {
    INFO("call " << i + 1);
    CHECK(r.host.at(k + i) == i + 1);
  }
  CHECK(j.lag_ns() > 20000);
  CHECK(j.lag_ns() < 60000);
  // The drift only grows here: the largest lag measured is the last one's
  // band, not a spike from a join to the wrong call.
  CHECK(j.counts().max_lag_ns < 60000);
  CHECK(j.counts().max_lag_ns >= j.lag_ns());
}

TEST_CASE("order join: the H200's signal-armed window, replayed, joins every record to a call of its kernel",
          "[order_join]") {
  // Steps 5 to 8 of a decode-loop window armed by SIGUSR2 after 15 s
  // dormant (test/data/h200-signal-window.events, written by
  // test/tools/join_events.py from that run's trace): device times drift
  // 3.7 us a step behind the host's, to 20 us before their calls, and 81
  // records of the last two steps never came. Live, 116 records went to
  // launches of other kernels.
  std::ifstream in(std::string(NB_SOURCE_DIR) + "/test/data/h200-signal-window.events");
  REQUIRE(in.good());
  OrderJoin j;
  std::map<uint64_t, uint32_t> call_name;
  std::vector<DeviceRecord> records;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    char what = 0, kind = 0;
    uint64_t id = 0, start = 0, end = 0, bytes = 0, last = 0;
    uint32_t name = 0, grid[3] = {}, block[3] = {};
    s >> what >> id >> kind >> start >> end >> name >> grid[0] >> grid[1] >> grid[2] >> block[0] >> block[1] >>
        block[2] >> bytes >> last;
    if (what == 'H') {
      OrderJoin::Host h;
      h.id = id;
      h.start_ns = start;
      h.end_ns = end;
      h.kind = kind == 'L' ? Kind::Launch : kind == 'G' ? Kind::Graph : kind == 'S' ? Kind::Memset : Kind::Memcpy;
      h.name = name;
      std::copy(grid, grid + 3, h.grid);
      std::copy(block, block + 3, h.block);
      h.bytes = bytes;
      h.tid = static_cast<uint32_t>(last);
      call_name[id] = name;
      j.add(h);
    } else {
      DeviceRecord d;
      d.correlation = static_cast<uint32_t>(id);
      d.kind = kind == 'L' ? DeviceKind::Kernel : kind == 'S' ? DeviceKind::Memset : DeviceKind::Memcpy;
      d.start = start;
      d.end = end;
      d.raw_name = name;
      for (int i = 0; i < 3; ++i) {
        d.grid[i] = static_cast<int32_t>(grid[i]);
        d.block[i] = static_cast<int32_t>(block[i]);
      }
      d.bytes = bytes;
      d.graph_id = static_cast<uint32_t>(last);
      records.push_back(d);
    }
  }
  REQUIRE(records.size() == 952);
  for (const DeviceRecord& d : records) j.add(d, 0);
  size_t joined = 0, other_kernel = 0;
  std::set<uint64_t> taken;
  j.advance({UINT64_MAX / 2, UINT64_MAX / 2}, OrderJoin::Pass::Final, [&](const DeviceRecord& d, const OrderJoin::Link& l) {
    if (!l.joined) return;
    ++joined;
    CHECK(taken.insert(l.host_id).second);
    if (d.kind == DeviceKind::Kernel && call_name[l.host_id] != d.raw_name) ++other_kernel;
  });
  CHECK(joined == records.size());
  CHECK(other_kernel == 0);
  CHECK(j.counts().max_lag_ns > 15000);
}

TEST_CASE("order join: the lag is measured only on joins that could have been no other call", "[order_join]") {
  // One kernel launched every 10 us, starting 3 us after its launch; one
  // host record in 200 lost (a full ring). A wrong join onto a later
  // launch must not count as device times running behind, or the reach
  // widens and the next wrong join goes further.
  OrderJoin j;
  const uint32_t k = dense_ids_seen(j);
  launches_10us_apart(j, k, 20000, 1, 3000, 0, 200);
  int64_t worst = 0;
  j.advance({0, UINT64_MAX}, OrderJoin::Pass::Final, [&](const DeviceRecord& d, const OrderJoin::Link& l) {
    if (!l.joined) return;
    const int64_t shift = static_cast<int64_t>(l.host_id) - static_cast<int64_t>(d.correlation - k + 1);
    worst = std::max(worst, shift < 0 ? -shift : shift);
  });
  CHECK(j.counts().max_lag_ns == 0);
  CHECK(worst <= 2);
}

TEST_CASE("order join: many ids skipped between steps (calls that took ids and made no work) lose no record",
          "[order_join]") {
  // Ids taken by calls nb did not record, more than max_positional_gap of
  // them at each step's end: outside a deadline the first call that fits
  // is still the one.
  OrderJoin j;
  uint32_t id = dense_ids_seen(j);
  const uint64_t t = 1000000;
  std::map<uint32_t, uint64_t> want;
  for (uint32_t step = 0; step < 20; ++step) {
    for (uint32_t n = 0; n < 100; ++n) {
      const uint64_t host = 1000ull * step + n + 1;
      const uint64_t start = t + 1000000ull * step + 5000ull * n;
      j.add(launch(host, start, start + 2000, 40 + n % 5));
      j.add(kernel(id, start + 3000, 40 + n % 5), 0);
      want[id++] = host;
    }
    id += 12;
  }
  Result r;
  collect(j, r, 0, UINT64_MAX, true);
  CHECK(r.host == want);
}

TEST_CASE("order join: a drift is followed when only the first kernel after each sync starts at once", "[order_join]") {
  // Steps of 20 launches 10 us apart, each kernel 30 us long: the device
  // queue grows through a step, and only its first kernel starts right
  // after its launch. Device times fall 1 us a step behind, to 100 us. In
  // one variant a copy on a side stream starts 1.5 s after its call (it
  // waits on an event): its record must not make the join forget the lag.
  const bool side_copy = GENERATE(false, true);
  INFO((side_copy ? "with" : "without") << " the late copy");
  OrderJoin j;
  uint32_t id = dense_ids_seen(j);
  const uint64_t t = 1000000;
  std::map<uint32_t, uint64_t> want;
  for (uint32_t step = 0; step < 100; ++step) {
    uint64_t free_at = 0;
    for (uint32_t n = 0; n < 20; ++n) {
      const uint64_t host = 100ull * step + n + 1, start = t + 2000000ull * step + 10000ull * n;
      j.add(launch(host, start, start + 2000, 50 + n));
      const uint64_t run = std::max(start + 5000, free_at);
      free_at = run + 30000;
      j.add(kernel(id, run - 1000ull * step, 50 + n), 0);
      want[id++] = host;
    }
    if (side_copy && step == 60) {
      const uint64_t host = 100ull * step + 99, start = t + 2000000ull * step + 200000;
      j.add(work(host, Kind::Memcpy, start, start + 2000, 4096));
      j.add(copy(id, start + 1500000000ull, 4096), 0);
      want[id++] = host;
    }
  }
  Result r;
  collect(j, r, 0, UINT64_MAX, true);
  CHECK(r.host == want);
  CHECK(j.counts().max_lag_ns > 80000);
}

TEST_CASE("order join: the first record after nb was dormant takes the first call that fits", "[order_join]") {
  // While dormant, 20 calls took ids and made work CUPTI did not record (it
  // rests): a gap of 20 that no recorded call accounts for. A layer of 4
  // kernels, the device 300 us behind: the call 20 places on has begun
  // before the first kernel ran and fits as well, and must not be taken.
  // In one variant the record of the last call before the dormant stretch
  // is placed only after the re-arm: it must not use up the mark.
  const bool before = GENERATE(false, true);
  INFO((before ? "with" : "without") << " a record from before");
  OrderJoin j;
  uint32_t id = dense_ids_seen(j);
  std::map<uint32_t, uint64_t> want;
  if (before) {
    j.add(launch(999, 500000, 502000, 77));
    j.add(kernel(id, 600000, 77), 0);
    want[id++] = 999;
  }
  id += 20;
  j.note_resume(900000);
  const uint64_t t = 1000000;
  for (uint32_t i = 0; i < 100; ++i) {
    const uint64_t start = t + 10000ull * i;
    j.add(launch(i + 1, start, start + 2000, 60 + i % 4));
    j.add(kernel(id, start + 300000, 60 + i % 4), 0);
    want[id++] = i + 1;
  }
  Result r;
  collect(j, r, 0, UINT64_MAX, true);
  CHECK(r.host == want);
}

TEST_CASE("order join: a run of a thousand lost records shifts no later arrow", "[order_join]") {
  // nb's queue full, a CUPTI buffer's tail dropped whole: 1,000 ids in a
  // row never come. A layer of 10 kernels; the device 3 ms behind; passes
  // every 1,000 calls, as the collector's. Past the gap each record still
  // goes to its own call, the place rule looking as far as the gap.
  OrderJoin j;
  const uint32_t k = dense_ids_seen(j);
  const uint64_t t = 1000000;
  constexpr uint32_t kCalls = 20000, kLostFrom = 5000, kLost = 1000;
  Result r;
  const auto emit = [&](const DeviceRecord& d, const OrderJoin::Link& l) {
    r.host[d.correlation] = l.joined ? l.host_id : 0;
  };
  for (uint32_t i = 0; i < kCalls; ++i) {
    const uint64_t start = t + 5000ull * i;
    j.add(launch(i + 1, start, start + 1000, 20 + i % 10));
    if (i < kLostFrom || i >= kLostFrom + kLost) j.add(kernel(k + i, start + 3000000, 20 + i % 10), start + 3002000);
    if (i % 1000 == 999) j.advance({start + 600 * kMs, start}, OrderJoin::Pass::Normal, emit);
  }
  j.advance({UINT64_MAX / 2, UINT64_MAX}, OrderJoin::Pass::Final, emit);
  size_t wrong = 0;
  for (const auto& [corr, host] : r.host) wrong += host != corr - k + 1;
  CHECK(r.host.size() == kCalls - kLost);
  CHECK(wrong == 0);
}

TEST_CASE("order join: the resume mark holds until a call made after the re-arm is taken", "[order_join]") {
  // The device 3 ms behind; 200 calls, then 3 ms dormant (600 calls that
  // took ids), then 2,000 calls: the old arming's last work runs after the
  // re-arm, and must not clear the mark for the new arming's first record.
  OrderJoin j;
  uint32_t id = dense_ids_seen(j);
  std::map<uint32_t, uint64_t> want;
  uint64_t host = 1;
  const auto calls = [&](uint64_t from, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t start = from + 5000ull * i;
      j.add(launch(host, start, start + 2500, 20 + i % 10));
      j.add(kernel(id, start + 3000000, 20 + i % 10), 0);
      want[id++] = host++;
    }
  };
  calls(1000000, 200);
  id += 600;
  const uint64_t resume = 1000000 + 5000ull * 800;
  j.note_resume(resume);
  calls(resume, 2000);
  Result r;
  collect(j, r, 0, UINT64_MAX, true);
  CHECK(r.host == want);
}

TEST_CASE("order join: a scan that finds another fitting call skips only the calls before that one", "[order_join]") {
  // Steps every 0.5 ms, each opening with a prompt kernel then a queue;
  // odd steps launch their first kernel twice (that join could have been
  // the other call, so it does not count), even steps are clear. Device
  // times fall 1 us a step behind, to 150 us: the clear steps must keep
  // the lag measured.
  OrderJoin j;
  uint32_t id = dense_ids_seen(j);
  std::map<uint32_t, uint64_t> want;
  const uint64_t t = 1000000;
  for (uint32_t step = 0; step < 400; ++step) {
    uint64_t free_at = 0;
    const uint64_t behind = std::min<uint64_t>(1000ull * step, 150000);
    for (uint32_t n = 0; n < 10; ++n) {
      const uint64_t host = 100ull * step + n + 1, start = t + 500000ull * step + 10000ull * n;
      const uint32_t name = (step % 2 == 1 && n == 1) ? 50 : 50 + n;
      j.add(launch(host, start, start + 2000, name));
      const uint64_t run = std::max(start + 5000, free_at);
      free_at = run + 30000;
      j.add(kernel(id, run - behind, name), 0);
      want[id++] = host;
    }
  }
  Result r;
  collect(j, r, 0, UINT64_MAX, true);
  CHECK(r.host == want);
}
