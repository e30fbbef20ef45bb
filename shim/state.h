// The shim's lifecycle, readable at a glance:
//
//   Uninit ──(constructor or first hook)──► Ready ──(first recorded call)──► Running
//     │                                       │                                 │
//     └──(NB_ENABLE=0, bad start, fork child)─┴──────────► Disabled             │
//                                                                      (exit) ──┴─► Stopping ─► Stopped
//
// Dormant (NB_TRIGGER=signal, or every window written) passes calls through
// like Disabled, but SIGUSR2 arms it: back to Ready (or Running, once the
// collector exists), see shim/trigger.h.
//
// Ready and Running record; every other state passes calls straight through.
// The collector thread exists only in Running, so a program that never touches
// CUDA gets no thread, no files and no output.
#pragma once
#include <atomic>
#include <cstdint>

namespace nb::shim {

void arm_if_requested();                 // shim/trigger.h
extern std::atomic<bool> g_arm_request;  // shim/trigger.h: SIGUSR2 came

// Dormant and Uninit/Initializing sort first: recording() tests them with one
// comparison on its slow path.
enum class State : int { Dormant = -1, Uninit, Initializing, Ready, Running, Stopping, Stopped, Disabled };

extern std::atomic<int> g_state;

void init_once();        // idempotent; reads options, sets Ready, Dormant or Disabled
void arm_state();        // Dormant → Ready, or Running when the collector runs
void dormant_state();    // Running or Ready → Dormant
bool ensure_started();   // idempotent; Ready → Running (collector thread, atexit)
// Idempotent; Running → Stopping → Stopped, writes files. True if this call
// wrote them; a call while another thread writes them waits for it (at most
// 10 s) when `wait_for_other`.
bool finish(bool wait_for_other = true);

// Whether a collector runs that would write files at exit (Running, or
// Dormant between windows): shim/exit_signals.cpp asks before a program
// kills itself.
bool outputs_to_write();

extern std::atomic<bool> g_exit_handler_registered;
void register_exit_handler();  // once, after the first recorded call returned

inline bool recording() {
  int s = g_state.load(std::memory_order_relaxed);
  // Uninit or Initializing (another thread is at it): init_once() returns
  // once the state is settled, so no call slips through unrecorded.
  if (__builtin_expect(s <= static_cast<int>(State::Initializing), 0)) {
    if (s == static_cast<int>(State::Dormant)) {
      // Dormant: one relaxed load, the whole cost of a hook until a signal.
      if (__builtin_expect(!g_arm_request.load(std::memory_order_relaxed), 1)) return false;
      arm_if_requested();
    } else {
      init_once();
    }
    s = g_state.load(std::memory_order_acquire);
  }
  return s == static_cast<int>(State::Ready) || s == static_cast<int>(State::Running);
}

inline bool disabled() {
  return g_state.load(std::memory_order_relaxed) == static_cast<int>(State::Disabled);
}

}  // namespace nb::shim
