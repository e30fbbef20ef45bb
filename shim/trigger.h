// NB_TRIGGER=signal: SIGUSR2 is nb's while the program leaves it at its
// default. The handler only sets g_control.arm_request; the next hooked call
// arms the shim (arm_if_requested, shim/state.h), and the collector learns
// the step and time of arming from g_control. Without a schedule, the next
// SIGUSR2 ends the window (the collector takes the request).
#pragma once

namespace nb::shim {

// In the constructor: takes SIGUSR2 if the program left it at its default.
// False if the program handles SIGUSR2 itself.
bool install_trigger();
bool trigger_installed();
// In a forked child (disabled): SIGUSR2 back to its default, so that it ends
// a worker as it would without nb.
void release_trigger();

}  // namespace nb::shim
