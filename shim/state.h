// The shim's lifecycle, readable at a glance:
//
//   Uninit ──(constructor or first hook)──► Ready ──(first recorded call)──► Running
//     │                                       │                                 │
//     └──(NB_ENABLE=0, bad start, fork child)─┴──────────► Disabled             │
//                                                                      (exit) ──┴─► Stopping ─► Stopped
//
// Dormant (NB_TRIGGER=signal, or every window written) passes calls through
// like Disabled, but SIGUSR2 arms it: back to Ready (or Running, once the
// recorder exists).
//
// Ready and Running record; every other state passes calls straight through.
// The recorder (its collector thread) exists only from Running on, so a
// program that never touches CUDA gets no thread, no files and no output.
//
// startup.cpp: Uninit → Ready, Dormant or Disabled (settings, rings, stacks)
// lifecycle.cpp: Ready → Running (the recorder), arming and going dormant,
//                Stopping → Stopped (the files), a forked child
// threads.cpp:  a thread's ring, from its first record to its exit
#pragma once
#include <atomic>
#include <cstdint>

#include "core/control.h"

namespace nb::shim {

enum class State : int { ForkedChild = -2, Dormant, Uninit, Initializing, Ready, Running, Stopping, Stopped, Disabled };

extern std::atomic<int> g_state;

void init_once();         // idempotent; reads what start-up needs, sets Ready, Dormant or Disabled
void arm_if_requested();  // Dormant: a SIGUSR2 came → Ready, or Running once the recorder runs
// Idempotent; Ready → Running (the recorder, its thread, atexit). Lost:
// another thread was starting nb and did not finish in time; the call that
// asked passes through and is counted as dropped (Control::lost_at_start).
enum class Start : uint8_t { Running, Off, Lost };
Start ensure_started();
// Idempotent; Running → Stopping → Stopped, writes files. True if this call
// wrote them; a call while another thread writes them waits for it (at most
// 10 s) when `wait_for_other`.
bool finish(bool wait_for_other = true);
// Before an exec replaces this image: its files written under
// <prefix>.exec.* (the new image writes its own). Not in a vfork child,
// which shares this process's memory until it execs.
void finish_before_exec(const char* path);
// A fork: nb's threads hold still across it (Recorder::before_fork), then
// the child is Disabled (without exec).
void on_fork_prepare();
void on_fork_parent();
void on_fork_child();

extern std::atomic<bool> g_exit_handler_registered;
void register_exit_handler();  // once, after the first recorded call returned

// Every state but Running, out of line: start-up (init_once returns once the
// state is settled, so no call slips through unrecorded), arming, a call
// made while the files are written at exit (counted), a forked child's
// first call.
bool recording_slow(int state);

inline bool recording() {
  const int s = g_state.load(std::memory_order_relaxed);
  if (__builtin_expect(s == static_cast<int>(State::Running), 1)) return true;
  // Dormant: one relaxed load more, the whole cost of a hook until a signal.
  if (s == static_cast<int>(State::Dormant) && !g_control.arm_request.load(std::memory_order_relaxed)) return false;
  return recording_slow(s);
}

// Calls made while the files were written at exit: not recorded.
uint64_t calls_after_exit_began();

inline bool disabled() {
  return g_state.load(std::memory_order_relaxed) == static_cast<int>(State::Disabled);
}

inline void set_state(State s) { g_state.store(static_cast<int>(s), std::memory_order_release); }

}  // namespace nb::shim
