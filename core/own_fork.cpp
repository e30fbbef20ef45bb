#include "core/own_fork.h"

namespace nb {

namespace {
// Plain __thread, initial-exec: read in fork handlers, where a lazily
// allocated TLS block is not an option (see shim/thread_state.h).
__thread bool t_own_fork __attribute__((tls_model("initial-exec"))) = false;
}  // namespace

bool in_own_fork() { return t_own_fork; }
OwnFork::OwnFork() { t_own_fork = true; }
OwnFork::~OwnFork() { t_own_fork = false; }

}  // namespace nb
