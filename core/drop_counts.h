// Calls whose record was dropped, counted per API, so that the ranking
// table's calls and errors stay exact when a record cannot be stored (a
// thread's ring full, no ring yet). Counted on the drop path only: a call
// whose record is kept pays nothing for them.
//
// Two kinds of writer. A thread's slot (ThreadSlot::drops) is written by its
// owner alone, so an increment is a relaxed load and store, no locked
// instruction; the process-wide counts of calls lost before a ring existed
// (Control::lost_calls) are written by any thread, with fetch_add (rare).
// The collector reads both. Counters only grow, across every owner a slot
// has had (a slot is recycled, never freed or reset): sums over all of them
// are the run's totals so far, and never lose or repeat a recycled slot's.
#pragma once
#include <atomic>
#include <cstdint>

#include "core/api.h"

namespace nb {

struct DropCounts {
  std::atomic<uint64_t> calls[kApiCount];
  std::atomic<uint64_t> errors[kApiCount];  // of those calls, the ones that returned non-zero
  std::atomic<uint64_t> ranges;             // NVTX ranges dropped (not API calls)
  // Bumped after each of the above (release): when the sum over every
  // DropCounts has not moved since a reader's last look, nothing has.
  std::atomic<uint64_t> changes;

  // One writer (the thread that owns the slot).
  void add_own(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    changes.store(changes.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  // Any thread.
  void add_shared(std::atomic<uint64_t>& c) {
    c.fetch_add(1, std::memory_order_relaxed);
    changes.fetch_add(1, std::memory_order_release);
  }
};

// Where a dropped call was counted, so that its error, known only when the
// call returns, is counted in the same place. Empty (false) when the call
// was not a drop: DroppedCall() (value-initialized). Trivial, so that it can
// sit in static TLS (the shim's ThreadState), which takes no constructor.
class DroppedCall {
 public:
  DroppedCall() = default;
  static DroppedCall own(DropCounts& c, uint16_t api) {
    c.add_own(c.calls[api]);
    return DroppedCall(&c, api, false);
  }
  static DroppedCall shared(DropCounts& c, uint16_t api) {
    c.add_shared(c.calls[api]);
    return DroppedCall(&c, api, true);
  }
  explicit operator bool() const { return counts_ != nullptr; }
  // The call returned `rc`; non-zero is an error, as the table counts them.
  void returned(int32_t rc) {
    if (counts_ == nullptr || rc == 0) return;
    if (shared_) counts_->add_shared(counts_->errors[api_]);
    else counts_->add_own(counts_->errors[api_]);
  }

 private:
  DroppedCall(DropCounts* c, uint16_t api, bool shared) : counts_(c), api_(api), shared_(shared) {}
  DropCounts* counts_;
  uint16_t api_;
  bool shared_;
};

}  // namespace nb
