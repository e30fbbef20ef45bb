#include "collector/schedule.h"

namespace nb {

StepPlan plan_step(const Schedule& s, uint64_t step) {
  StepPlan p;
  if (s.active == 0) {  // no schedule: everything is one window
    p.action = StepAction::Record;
    p.window = 1;
    p.step_in_window = step;
    return p;
  }
  if (step < s.skip_first) return p;
  const uint64_t k = step - s.skip_first;
  const uint64_t cycle = s.wait + s.warmup + s.active;
  const uint64_t n = k / cycle;  // which repeat
  if (s.repeat != 0 && n >= s.repeat) return p;
  const uint64_t at = k % cycle;
  if (at < s.wait) return p;
  p.window = n + 1;
  if (at < s.wait + s.warmup) {
    p.action = StepAction::Warmup;
    return p;
  }
  p.step_in_window = at - s.wait - s.warmup;
  p.action = at + 1 == cycle ? StepAction::RecordAndSave : StepAction::Record;
  return p;
}

bool schedule_done(const Schedule& s, uint64_t step) {
  if (s.active == 0 || s.repeat == 0 || step < s.skip_first) return false;
  const uint64_t cycle = s.wait + s.warmup + s.active;
  return (step - s.skip_first) / cycle >= s.repeat;
}

}  // namespace nb
