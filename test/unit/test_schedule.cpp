// The window arithmetic against torch.profiler.schedule's meaning, as golden
// strings: one letter per step (. none, w warmup, r record, S record and
// save), then window numbers.
#include <catch2/catch.hpp>

#include <string>

#include "collector/schedule.h"

using nb::plan_step;
using nb::Schedule;
using nb::StepAction;

namespace {
std::string letters(const Schedule& s, uint64_t steps) {
  std::string out;
  for (uint64_t i = 0; i < steps; ++i) {
    switch (plan_step(s, i).action) {
      case StepAction::None: out += '.'; break;
      case StepAction::Warmup: out += 'w'; break;
      case StepAction::Record: out += 'r'; break;
      case StepAction::RecordAndSave: out += 'S'; break;
    }
  }
  return out;
}
std::string windows(const Schedule& s, uint64_t steps) {
  std::string out;
  for (uint64_t i = 0; i < steps; ++i) out += static_cast<char>('0' + plan_step(s, i).window);
  return out;
}
}  // namespace

TEST_CASE("schedule: the seed's loop, wait 4 warmup 2 active 8 repeat 1", "[unit][schedule]") {
  const Schedule s{0, 4, 2, 8, 1};
  CHECK(letters(s, 32) == "....wwrrrrrrrS..................");
  CHECK(windows(s, 16) == "0000111111111100");
  CHECK(plan_step(s, 6).step_in_window == 0);
  CHECK(plan_step(s, 13).step_in_window == 7);
  CHECK_FALSE(nb::schedule_done(s, 13));
  CHECK(nb::schedule_done(s, 14));
}

TEST_CASE("schedule: skip_first, then two windows", "[unit][schedule]") {
  const Schedule s{3, 1, 1, 2, 2};
  CHECK(letters(s, 16) == "....wrS.wrS.....");
  CHECK(windows(s, 16) == "0000111022200000");
}

TEST_CASE("schedule: repeat 0 cycles until exit; no wait or warmup", "[unit][schedule]") {
  CHECK(letters(Schedule{0, 1, 0, 2, 0}, 12) == ".rS.rS.rS.rS");
  CHECK(letters(Schedule{0, 0, 0, 3, 0}, 9) == "rrSrrSrrS");
  CHECK(windows(Schedule{0, 0, 0, 3, 0}, 9) == "111222333");
  CHECK_FALSE(nb::schedule_done(Schedule{0, 0, 0, 3, 0}, 1000000));
}

TEST_CASE("schedule: no schedule (active 0) is one window over the whole run", "[unit][schedule]") {
  const Schedule s{};
  CHECK(letters(s, 5) == "rrrrr");
  CHECK(windows(s, 5) == "11111");
  CHECK(plan_step(s, 4).step_in_window == 4);
  CHECK_FALSE(nb::schedule_done(s, 100));
}
