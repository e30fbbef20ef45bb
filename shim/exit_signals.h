// SIGINT, SIGTERM and SIGHUP left at their default action by the program:
// the process would die without writing anything. nb takes them (only
// those still at the default when recording starts), lets the collector
// write what was recorded, then restores the default and raises the signal
// again, so the process ends with the same status as without nb. A second
// signal while the files are written ends the process at once.
#pragma once

namespace nb::shim {

void install_exit_signals();  // when recording starts
int pending_exit_signal();    // 0 = none; polled by the collector
[[noreturn]] void die_of(int sig);

}  // namespace nb::shim
