// Taking a mutex with a time limit, by polling try_lock: used where nb must
// not wait forever (a start that another thread holds across the loader
// lock, fork handlers). Not std::timed_mutex::try_lock_for: it locks through
// pthread_mutex_clocklock, which GCC 12's ThreadSanitizer does not
// intercept, so the unlock after it is reported as the unlock of an
// unlocked mutex; symbolizing that report (even a suppressed one) took
// half a second on the first CUDA call of a TSan build. These waits are
// rare and off the hot path, so a 1 ms poll costs nothing that matters.
#pragma once

#include <chrono>
#include <mutex>
#include <thread>

namespace nb {

// True once `m` is held by the caller; false when `limit` passed first.
inline bool lock_within(std::mutex& m, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (m.try_lock()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace nb
