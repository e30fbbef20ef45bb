// nb's own forks (the child that names stack frames) against nb's fork
// handlers. The handlers hold nb's threads still while the program forks
// (Recorder::before_fork); when the thread that forks is one of nb's, it
// may hold what they would wait for (the collector forks while it writes a
// flight recorder's dump, inside its drain pass), and the child only names
// frames and exits. So the handlers stand aside for a fork made inside an
// OwnFork scope.
#pragma once

namespace nb {

// True on a thread inside an OwnFork scope (and in the child it forks).
bool in_own_fork();

class OwnFork {
 public:
  OwnFork();
  ~OwnFork();
  OwnFork(const OwnFork&) = delete;
  OwnFork& operator=(const OwnFork&) = delete;
};

}  // namespace nb
