// Packed on the collector thread, unpacked on the writer's: the text must
// be exactly what EventText writes from the events themselves.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "collector/event_pack.h"

using namespace nb;
using formats::Arg;

namespace {

formats::Event sample_event(uint32_t name, int i) {
  formats::Event e;
  e.name = name;
  e.cat = i % 2 ? formats::Category::Kernel : formats::Category::CudaDriver;
  e.pid = 7;
  e.tid = 100 + i;
  e.ts_ns = 1'000'000'000ull + 1234ull * static_cast<uint64_t>(i);
  e.dur_ns = 500 + static_cast<uint64_t>(i);
  e.stack = static_cast<uint32_t>(i % 3);
  if (i % 5 == 0) e.label = "ProfilerStep#" + std::to_string(i) + " \"quoted\"";
  e.args = {Arg::uinteger("correlation", static_cast<uint64_t>(i)), Arg::integer("device", -i),
            Arg::real("memory bandwidth (GB/s)", 1.5 * i), Arg::view("kind", i % 2 ? "HtoD" : "a \"view\"\n"),
            Arg::hex("stream handle", 0xdeadbeefull + static_cast<uint64_t>(i)), Arg::dim3("grid", 1, 2, 3 + i),
            Arg::name("kernel", name)};
  return e;
}

// Unpacked from the start (base time 0), `packed` is exactly `want`.
void unpacks_to(const std::string& packed, const std::string& want) {
  EventUnpacker unpacker(0);
  std::string got;
  REQUIRE(unpacker.unpack(packed.data(), packed.size(), got));
  CHECK(got == want);
}

}  // namespace

TEST_CASE("packed events unpack to the text EventText writes", "[pack]") {
  std::vector<std::string> names = {"cuLaunchKernel", "Device memory (bytes)"};
  EventPacker packer(&names);
  std::string packed;
  const std::vector<std::string>* direct_names = &names;
  formats::EventText direct(1'000'000'000ull, direct_names);
  std::string want;
  for (int i = 0; i < 50; ++i) {
    if (i == 20) names.push_back("kernel<float>(\"x\")");  // a name that comes later
    const uint32_t name = i >= 20 ? 2 : 0;
    const formats::Event e = sample_event(name, i);
    packer.event(packed, e);
    direct.event(want, e);
    const formats::Flow f{static_cast<uint64_t>(i), 7, 100 + i, e.ts_ns, i % 2 == 0};
    packer.flow(packed, f);
    direct.flow(want, f);
    formats::Counter c;
    c.name = 1;
    c.pid = 0;
    c.ts_ns = e.ts_ns + 1;
    c.values = {{"allocated", 1024.0 * i}, {"reserved", 4096.0}};
    packer.counter(packed, c);
    direct.counter(want, c);
  }
  EventUnpacker unpacker(1'000'000'000ull);
  std::string got;
  REQUIRE(unpacker.unpack(packed.data(), packed.size(), got));
  CHECK(got == want);
  CHECK(packed.size() < want.size());
}

TEST_CASE("an unpacker reads pieces in order, with names and keys sent once", "[pack]") {
  std::vector<std::string> names = {"a"};
  EventPacker packer(&names);
  formats::EventText direct(0, &names);
  EventUnpacker unpacker(0);
  std::string want, got;
  for (int piece = 0; piece < 3; ++piece) {
    names.push_back("n" + std::to_string(piece));
    std::string packed;
    for (int i = 0; i < 10; ++i) {
      const formats::Event e = sample_event(static_cast<uint32_t>(names.size() - 1), i);
      packer.event(packed, e);
      direct.event(want, e);
    }
    REQUIRE(unpacker.unpack(packed.data(), packed.size(), got));
  }
  CHECK(got == want);
}

TEST_CASE("more distinct argument keys than ids are sent inline", "[pack]") {
  std::vector<std::string> names = {"a"};
  EventPacker packer(&names);
  formats::EventText direct(0, &names);
  // 300 keys at distinct addresses (the packer knows keys by address).
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) keys.push_back("key" + std::to_string(i));
  std::string packed, want;
  for (int round = 0; round < 2; ++round) {
    for (const std::string& k : keys) {
      formats::Event e;
      e.args = {Arg::integer(k, round)};
      packer.event(packed, e);
      direct.event(want, e);
      formats::Counter c;
      c.values = {{k.c_str(), 1.0}};
      packer.counter(packed, c);
      direct.counter(want, c);
    }
  }
  unpacks_to(packed, want);
}

TEST_CASE("a pack cut short or garbled is refused, not read past its end", "[pack]") {
  std::vector<std::string> names = {"a"};
  EventPacker packer(&names);
  std::string packed;
  packer.event(packed, sample_event(0, 3));
  const size_t start = packed.size();  // names and keys sent: an event alone
  packer.event(packed, sample_event(0, 4));
  for (size_t cut = start; cut <= packed.size(); ++cut) {
    EventUnpacker unpacker(0);
    std::string got;
    const bool ok = unpacker.unpack(packed.data(), cut, got);
    INFO("cut at " << cut);
    CHECK((cut == start || cut == packed.size()) == ok);
  }
  EventUnpacker unpacker(0);
  std::string got;
  const std::string junk = "Zjunk";
  CHECK_FALSE(unpacker.unpack(junk.data(), junk.size(), got));
}

TEST_CASE("an event's arguments survive copies, moves and swaps, and grow past their first room", "[pack]") {
  formats::Event a = sample_event(1, 3);
  REQUIRE(a.args.size() == 7);
  for (int i = 0; i < 40; ++i) a.args.push_back(Arg::integer("n", i));  // past 16 and 32
  REQUIRE(a.args.size() == 47);
  CHECK(a.args[46].i == 39);
  formats::Event copy = a;
  formats::Event b = sample_event(2, 4);
  std::swap(a, b);
  CHECK(a.args.size() == 7);
  CHECK(b.args.size() == 47);
  CHECK(b.args[8].i == 1);
  formats::Event moved = std::move(b);
  CHECK(moved.args.size() == 47);
  CHECK(b.args.empty());  // NOLINT: a moved-from list is empty, not dangling
  b.args.push_back(Arg::integer("again", 5));
  CHECK(b.args.size() == 1);
  CHECK(copy.args.size() == 47);
  copy.args.clear();
  CHECK(copy.args.empty());
  CHECK(moved.args[0].u == 3);
}

TEST_CASE("times, threads and flow ids go as differences in either direction, extremes included", "[pack]") {
  std::vector<std::string> names = {"a"};
  EventPacker packer(&names);
  formats::EventText direct(0, &names);
  std::string packed, want;
  const uint64_t times[] = {5, 3, UINT64_MAX / 2, 0, 1'000'000'000'000ull, 999'999'999'999ull};
  const int64_t ids[] = {1, -1, INT64_MAX, INT64_MIN, 0, 42};
  for (size_t i = 0; i < std::size(times); ++i) {
    formats::Event e;
    e.pid = ids[i];
    e.tid = ids[(i + 1) % std::size(ids)];
    e.ts_ns = times[i];
    e.dur_ns = times[(i + 2) % std::size(times)];
    e.args = {Arg::integer("i", ids[i]), Arg::uinteger("u", times[i]), Arg::real("d", -0.5 * static_cast<double>(i)),
              Arg::dim3("grid", UINT32_MAX, 0, 7)};
    packer.event(packed, e);
    direct.event(want, e);
    const formats::Flow f{times[(i + 3) % std::size(times)], ids[i], ids[i], times[i], i % 2 == 1};
    packer.flow(packed, f);
    direct.flow(want, f);
    formats::Counter c;
    c.pid = ids[i];
    c.ts_ns = times[i];
    c.values = {{"whole", 4096.0 * static_cast<double>(i)}, {"not", 0.25 - static_cast<double>(i)}, {"big", 1e300}};
    packer.counter(packed, c);
    direct.counter(want, c);
  }
  unpacks_to(packed, want);
}

TEST_CASE("a run's packs are a small part of their text", "[pack]") {
  // A launch and its kernel, as the decode loop has them, a microsecond apart.
  std::vector<std::string> names = {"cuLaunchKernel", "gemm"};
  EventPacker packer(&names);
  formats::EventText direct(0, &names);
  std::string packed, want;
  for (uint64_t i = 0; i < 1000; ++i) {
    formats::Event host;
    host.cat = formats::Category::CudaDriver;
    host.pid = host.tid = 31710;
    host.ts_ns = 1'700'000'000'000'000'000ull + 1000 * i;
    host.dur_ns = 300 + i % 7;
    host.args = {Arg::uinteger("correlation", i), Arg::name("kernel", 1)};
    packer.event(packed, host);
    direct.event(want, host);
    formats::Event k;
    k.name = 1;
    k.cat = formats::Category::Kernel;
    k.tid = 7;
    k.ts_ns = host.ts_ns + 5000;
    k.dur_ns = 2000 + i % 13;
    k.args = {Arg::integer("device", 0), Arg::uinteger("stream", 7), Arg::uinteger("correlation", i),
              Arg::dim3("grid", 4096, 1, 1), Arg::dim3("block", 256, 1, 1)};
    packer.event(packed, k);
    direct.event(want, k);
    packer.flow(packed, formats::Flow{i, host.pid, host.tid, host.ts_ns, true});
    direct.flow(want, formats::Flow{i, host.pid, host.tid, host.ts_ns, true});
  }
  INFO(packed.size() << " bytes packed for " << want.size() << " of text");
  CHECK(packed.size() * 6 < want.size());
}
