// Join mode "api": CUPTI's API records matched to the hooks around them.
#include <catch2/catch.hpp>

#include "collector/api_join.h"

using namespace nb;

namespace {
ApiCall call(uint32_t tid, uint64_t start, uint64_t end, uint32_t corr) { return ApiCall{tid, start, end, corr}; }
}  // namespace

TEST_CASE("api join: the hook around the API record, on the same thread", "[join]") {
  ApiJoin j;
  // Thread 1: three calls 1 us apart; thread 2: one call at the same time as the second.
  j.add(1, {1000, 1500, 11, 0});
  j.add(1, {2500, 3000, 12, 0});
  j.add(1, {4000, 4600, 13, 5});
  j.add(2, {2500, 3000, 21, 0});
  ApiJoin::Host h;
  REQUIRE(j.match(call(1, 2600, 2900, 99), h));
  CHECK(h.id == 12);
  REQUIRE(j.match(call(2, 2600, 2900, 98), h));
  CHECK(h.id == 21);
  REQUIRE(j.match(call(1, 4100, 4500, 97), h));
  CHECK(h.id == 13);
  CHECK(h.window == 5);
  // Host times a little off (the tick conversion): still the nearest call.
  REQUIRE(j.match(call(1, 1450, 1600, 96), h));
  CHECK(h.id == 11);
  // No hook near it (made while nb was not recording, or on another thread).
  CHECK_FALSE(j.match(call(1, 8000, 8200, 95), h));
  CHECK_FALSE(j.match(call(3, 2600, 2900, 94), h));
}

TEST_CASE("api join: forgetting old calls", "[join]") {
  ApiJoin j;
  j.add(1, {1000, 1500, 11, 0});
  j.add(1, {2500, 3000, 12, 0});
  j.add(2, {1000, 1200, 21, 0});
  CHECK(j.size() == 3);
  j.forget_before(2000);
  CHECK(j.size() == 1);
  ApiJoin::Host h;
  CHECK_FALSE(j.match(call(1, 1100, 1400, 1), h));
  REQUIRE(j.match(call(1, 2600, 2900, 2), h));
  CHECK(h.id == 12);
}

TEST_CASE("api join: a thread's earlier calls leave once a later one is matched", "[join]") {
  ApiJoin j;
  j.add(1, {1000, 1500, 11, 0});
  j.add(1, {2500, 3000, 12, 0});
  j.add(1, {4000, 4600, 13, 0});
  j.add(2, {1000, 1200, 21, 0});
  ApiJoin::Host h;
  REQUIRE(j.match(call(1, 2600, 2900, 1), h));
  j.matched(1, h);
  CHECK(j.size() == 3);  // 12 and 13 on thread 1, 21 on thread 2
  REQUIRE(j.match(call(1, 2600, 2900, 1), h));
  CHECK(h.id == 12);
  REQUIRE(j.match(call(2, 1050, 1150, 2), h));
  CHECK(h.id == 21);
}
