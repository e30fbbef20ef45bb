// NB_TRIGGER=signal: the shim stays dormant (hooks pass straight through)
// until SIGUSR2 arms it. The handler only sets a flag; the first hooked call
// after it arms the shim (shim/state.h, recording()), and the collector
// learns the step and time of arming through take_arming(). Without a
// schedule the next SIGUSR2 ends the window (take_disarm()).
#pragma once
#include <atomic>
#include <cstdint>

namespace nb::shim {

extern std::atomic<bool> g_arm_request;  // set by the handler

// In the constructor, when NB_TRIGGER=signal: takes SIGUSR2 if the program
// left it at its default. False if the program handles SIGUSR2 itself.
bool install_trigger();
bool trigger_installed();
// In a forked child (disabled): SIGUSR2 back to its default, so that it ends
// a worker as it would without nb.
void release_trigger();

// Slow path of a hook while dormant: arm if a signal asked for it.
void arm_if_requested();
// The collector: armed since last asked (step and tick at arming)?
bool take_arming(uint64_t& step, uint64_t& tick);
// The collector, when nothing is left to record: back to dormant.
void go_dormant();

}  // namespace nb::shim
