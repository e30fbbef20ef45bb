// What every generated wrapper does around the real call: decide whether to
// record, take a slot in this thread's ring, time the call, publish. No lock,
// no allocation, no system call (the clock is read through the vDSO).
//
// A runtime call that lands in a driver call is recorded once: while a runtime
// hook runs, a driver hook of the same kind on that thread does not make its
// own record but adds what it knows (the CUfunction's name) to the runtime's.
#pragma once
#include "core/clock.h"
#include "core/drop_counts.h"
#include "core/record.h"
#include "core/ring.h"
#include "shim/program_end.h"
#include "shim/stack_capture.h"
#include "shim/state.h"
#include "shim/steps.h"
#include "shim/thread_state.h"

namespace nb::shim {

// A record that HookScope::reserve could not store: the call is counted by
// API where the collector adds it to the table (the thread's slot when its
// ring was full; process-wide when there was no ring), and t.dropped says
// where, for its result; empty when the call is not a drop but simply not
// recorded (nb off or stopping). Out of line and cold: a call whose record
// is kept never comes here.
__attribute__((cold, noinline)) void count_dropped_call(ThreadState& t, uint16_t api);
// That call returned `rc`: its error, if any, is counted where the call was.
__attribute__((cold, noinline)) void count_dropped_result(int32_t rc);
// The same for an NVTX range (not an API call: counted apart).
__attribute__((cold, noinline)) void count_dropped_range(ThreadState& t);

class HookScope {
 public:
  __attribute__((always_inline)) HookScope(uint16_t api, Kind kind, Level level) {
    ThreadState& t = t_state;
    if (t.depth != 0) {
      if (level == Level::Driver && t.outer_level == Level::Runtime && t.outer != nullptr &&
          t.outer->kind == kind) {
        target_ = t.outer;
      }
      return;
    }
    if (t.internal || !recording()) return;
    entered_ = true;
    t.depth = 1;
    t.outer_level = level;
    rec_ = reserve(t, api, kind);
    t.outer = rec_;
    target_ = rec_;
    if (rec_ == nullptr) {
      count_dropped_call(t, api);
      return;
    }
    t.corr_first = t.corr_last = 0;
    // After the program's end, memory calls are teardown (kind is a
    // constant of each wrapper: other calls pay nothing).
    if (is_memory_kind(kind) && program_ended()) rec_->flags |= record_flag::kTeardown;
    if (__builtin_expect(wants_stack(kind), 0)) capture_stack(t, rec_);
    rec_->start = now_ticks();  // last: our own work stays outside the call
    // Before the real call, so before its work can run (the shim is x86
    // only, and x86 keeps stores in order: the mark is visible before the
    // driver's doorbell write). Release, like the clear below, so that a
    // collector that reads this mark also sees the previous call's publish.
    if (is_device_work_kind(kind)) {
      t.slot->in_call.store(rec_->start, std::memory_order_release);
      marked_ = true;
    } else if (is_memory_kind(kind)) {
      t.slot->in_memory_call.store(rec_->start, std::memory_order_release);
      marked_memory_ = true;
    }
  }

  __attribute__((always_inline)) ~HookScope() {
    if (!entered_) return;
    ThreadState& t = t_state;
    if (rec_ != nullptr) t.slot->ring.publish();
    // After the publish: a collector that reads 0 then sees the record.
    if (marked_) t.slot->in_call.store(0, std::memory_order_release);
    if (marked_memory_) t.slot->in_memory_call.store(0, std::memory_order_release);
    t.depth = 0;
    t.outer = nullptr;
  }

  HookScope(const HookScope&) = delete;
  HookScope& operator=(const HookScope&) = delete;

  // False: pass the call straight through.
  bool active() const { return entered_ || target_ != nullptr; }
  // The record to fill after the call: our own, or the runtime call's we are
  // nested in; null when the record was dropped.
  Record* target() const { return target_; }
  // Own record only (not when annotating an outer one).
  Record* own() const { return rec_; }

  __attribute__((always_inline)) void finish(int32_t rc) {
    if (rec_ == nullptr) {
      // Our own record was dropped (or nb did not record the call): a
      // dropped call's error is known only now.
      if (__builtin_expect(entered_, 0)) count_dropped_result(rc);
      return;
    }
    rec_->end = now_ticks();
    rec_->result = static_cast<int16_t>(rc > 32767 ? 32767 : rc);
    const ThreadState& t = t_state;
    rec_->corr_first = t.corr_first;
    rec_->corr_last = t.corr_last;
    if (__builtin_expect(!g_exit_handler_registered.load(std::memory_order_relaxed), 0)) register_exit_handler();
  }

 public:
  static Record* reserve(ThreadState& t, uint16_t api, Kind kind) {
    // No ring: either the shim is shutting down or the mapping failed (the
    // registry counts that as a drop).
    if (__builtin_expect(t.slot == nullptr, 0) && !register_thread(t)) return nullptr;
    Record* r = t.slot->ring.reserve();
    if (r == nullptr) return nullptr;  // counted by the ring
    clear_record(r);
    r->id = (static_cast<uint64_t>(t.slot->index) << 32) | ++t.seq;
    r->tid = t.tid;
    r->api = api;
    r->kind = kind;
    r->device = -1;
    r->step = g_control.step.load(std::memory_order_relaxed);
    r->range = t.range;
    return r;
  }

 private:
  Record* rec_ = nullptr;
  Record* target_ = nullptr;
  bool entered_ = false;
  bool marked_ = false;         // slot->in_call set by this call
  bool marked_memory_ = false;  // slot->in_memory_call
};

// A record not made by a hooked call (an NVTX range) on this thread, to fill
// and then publish(); null when this thread cannot record now.
inline Record* reserve_standalone(Kind kind) {
  ThreadState& t = t_state;
  if (t.internal || t.depth != 0 || !recording()) return nullptr;
  Record* r = HookScope::reserve(t, 0, kind);
  if (__builtin_expect(r == nullptr, 0)) count_dropped_range(t);
  return r;
}
inline void publish_standalone() { t_state.slot->ring.publish(); }

}  // namespace nb::shim
