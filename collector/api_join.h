// Join mode "api": device work reaches its host call through CUPTI's API
// records. CUPTI writes one record per traced call (only the launch, copy
// and set calls are traced) with the calling thread, the call's start and
// end, and the correlation id its device work carries. nb's hook wraps the
// same call on the same thread, so the hook whose interval holds the
// record is the call: calls on one thread never overlap, and nothing runs
// on the calling thread during a callback (there is none). No CUPTI
// callback per call, which is what the "callback" join pays for.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>

#include "collector/device_record.h"

namespace nb {

class ApiJoin {
 public:
  struct Host {
    uint64_t start_ns = 0, end_ns = 0;  // the hook's interval, monotonic ns
    uint64_t id = 0;                    // the host record's id
    uint64_t window = 0;                // 0 outside windowed recording
  };

  // Host calls of one thread arrive in the order they were made.
  void add(uint32_t tid, const Host& h);
  // The host call around `a` (its midpoint inside the hook's interval, or
  // within `slack_ns` of it, for the error of converting host ticks to
  // nanoseconds); false if there is none yet.
  bool match(const ApiCall& a, Host& out, uint64_t slack_ns = 1000) const;
  // `h` was matched: CUPTI writes a thread's API records in the order of its
  // calls, so that thread's earlier calls will not be asked for again.
  void matched(uint32_t tid, const Host& h);
  // Forgets host calls that ended before `ns` (a bound for threads whose
  // records stop coming).
  void forget_before(uint64_t ns);
  size_t size() const;

 private:
  std::unordered_map<uint32_t, std::deque<Host>> by_thread_;
};

}  // namespace nb
