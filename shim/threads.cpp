#include "shim/threads.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/hook_scope.h"
#include "shim/native_unwind.h"
#include "shim/runtime.h"
#include "shim/state.h"
#include "shim/thread_state.h"

namespace nb::shim {

__thread ThreadState t_state __attribute__((tls_model("initial-exec")));

namespace {

pthread_key_t g_exit_key;

void on_thread_exit(void* slot) {
  release_unwind_thread();
  ThreadRegistry::release(static_cast<ThreadSlot*>(slot));
  t_state.slot = nullptr;
}

}  // namespace

bool init_threads() { return pthread_key_create(&g_exit_key, on_thread_exit) == 0; }

bool register_thread(ThreadState& t) {
  t.lost = false;
  if (t.internal) return false;
  const Start started = ensure_started();
  if (started != Start::Running) {
    t.lost = started == Start::Lost;
    return false;
  }
  // acquire() takes no lock and allocates with mmap; pthread_setspecific
  // may allocate inside glibc but does not throw.
  const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  ThreadSlot* slot = thread_registry()->acquire(tid);
  if (slot == nullptr) {
    t.lost = true;  // the registry counts it (failed_acquires)
    return false;
  }
  t.slot = slot;
  t.tid = tid;
  t.seq = 0;
  t.stack_clock = static_cast<uint8_t>((tid * 0x9E3779B1u) >> 29);  // 0..7: the first timed stack (stack_capture.cpp)
  pthread_setspecific(g_exit_key, slot);
  return true;
}

void count_dropped_call(ThreadState& t, uint16_t api) {
  t.dropped = DroppedCall();
  if (api >= kApiCount) return;
  // With a ring, reserve fails only when it is full.
  if (t.slot != nullptr) t.dropped = DroppedCall::own(t.slot->drops, api);
  else if (t.lost) t.dropped = DroppedCall::shared(g_control.lost_calls, api);
}

// Only the outermost hook of a thread comes here, between its own
// count_dropped_call and its return: no other hook of the thread has
// touched t.dropped meanwhile (nested hooks leave it alone).
void count_dropped_result(int32_t rc) { t_state.dropped.returned(rc); }

void count_dropped_range(ThreadState& t) {
  if (t.slot != nullptr) t.slot->drops.add_own(t.slot->drops.ranges);
  else if (t.lost) g_control.lost_calls.add_shared(g_control.lost_calls.ranges);
}

}  // namespace nb::shim
