#include "shim/threads.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

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
  if (t.internal || !ensure_started()) return false;
  // acquire() takes no lock and allocates with mmap; pthread_setspecific
  // may allocate inside glibc but does not throw.
  const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  ThreadSlot* slot = thread_registry()->acquire(tid);
  if (slot == nullptr) return false;
  t.slot = slot;
  t.tid = tid;
  t.seq = 0;
  t.stack_clock = static_cast<uint8_t>((tid * 0x9E3779B1u) >> 29);  // 0..7: the first timed stack (stack_capture.cpp)
  pthread_setspecific(g_exit_key, slot);
  return true;
}

}  // namespace nb::shim
