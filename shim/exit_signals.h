// SIGINT, SIGTERM and SIGHUP left at their default action by the program:
// the process would die without writing anything. nb takes them (only
// those still at the default when recording starts), lets the collector
// write what was recorded, then restores the default and raises the signal
// again, so the process ends with the same status as without nb. While the
// files are written, the same signal again within 1 s of the first is taken
// for a duplicate delivery (`timeout` signals the child and then its group;
// launchers forward Ctrl-C to workers the terminal signalled too) and let
// go; any later one, or a different one, ends the process at once.
#pragma once
#include "core/control.h"

namespace nb::shim {

// When recording starts. A signal that comes is left in
// g_control.exit_signal for the collector to act on. `outputs_to_write`
// tells, when the program is about to signal itself, whether files would
// be written (a recorder runs): only then is its signal held back.
void install_exit_signals(bool (*outputs_to_write)());
// The pending signal came from the program's own kill to its process group
// (or to all): the collector writes, calls exit_signal_written(), and lets
// the program's kill do the rest instead of dying first.
bool exit_signal_write_only();
void exit_signal_written();
// Gives the signals back (those still ours) once nothing will write files
// any more: after the outputs are written, and in a forked child, where no
// collector runs to act on them. Returns a signal that arrived meanwhile.
int release_exit_signals();
[[noreturn]] void die_of(int sig);

}  // namespace nb::shim
