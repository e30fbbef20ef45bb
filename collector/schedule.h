// The recording window's arithmetic, with torch.profiler.schedule's meaning:
// after `skip_first` steps, cycles of `wait` steps ignored, `warmup` steps
// recorded and thrown away, `active` steps kept; `repeat` cycles (0 = until
// the program exits). Steps count from 0, as the marker sees them end. Pure:
// the collector asks what a step is, and when a window closes.
#pragma once
#include <cstdint>

namespace nb {

struct Schedule {
  uint64_t skip_first = 0;
  uint64_t wait = 0;
  uint64_t warmup = 0;
  uint64_t active = 0;  // 0 = no schedule: one window over the whole run
  uint64_t repeat = 0;  // 0 = cycle until exit
};

enum class StepAction : uint8_t {
  None,           // not recorded
  Warmup,         // recorded (so the next step starts warm), then thrown away
  Record,         // kept
  RecordAndSave,  // kept, and the window closes when this step ends
};

struct StepPlan {
  StepAction action = StepAction::None;
  uint64_t window = 0;         // 1-based window number for Warmup / Record*, 0 otherwise
  uint64_t step_in_window = 0; // 0-based position among the window's active steps (Record*)
};

StepPlan plan_step(const Schedule& s, uint64_t step);

// Whether any step at or after `step` can still be recorded (false once the
// last repeat is over: the shim can stop looking).
bool schedule_done(const Schedule& s, uint64_t step);

}  // namespace nb
