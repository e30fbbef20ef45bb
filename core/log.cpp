#include "core/log.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace nb::log {

namespace {
// Never destroyed: the shim logs from atexit handlers, after static
// destructors of other objects may have run.
spdlog::logger* g_logger = nullptr;
LogLevel g_level = LogLevel::Warn;

spdlog::level::level_enum to_spdlog(LogLevel l) {
  switch (l) {
    case LogLevel::Trace: return spdlog::level::trace;
    case LogLevel::Debug: return spdlog::level::debug;
    case LogLevel::Info: return spdlog::level::info;
    case LogLevel::Warn: return spdlog::level::warn;
    case LogLevel::Error: return spdlog::level::err;
    case LogLevel::Off: return spdlog::level::off;
  }
  return spdlog::level::warn;
}

// stderr may be a pipe whose reader is gone (`prog 2>&1 | head`): a write
// must not raise SIGPIPE in the program, which would kill it with another
// status. Runs `write` with SIGPIPE blocked for this thread and swallows one
// that the write made pending.
template <typename Write>
void without_sigpipe(Write&& write) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  write();
  if (!sigismember(&old, SIGPIPE)) {
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE)) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe_only, nullptr, &zero);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void emit(LogLevel l, const std::string& msg) {
  if (!enabled(l)) return;
  if (g_logger == nullptr) {  // before init: still one plain line
    print("nb: " + msg + "\n");
    return;
  }
  without_sigpipe([&] {
    try {
      g_logger->log(to_spdlog(l), msg);
    } catch (...) {
      // Logging must never throw into the host program.
    }
  });
}
}  // namespace

void init(LogLevel level) {
  g_level = level;
  if (g_logger != nullptr) return;
  try {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    g_logger = new spdlog::logger("nb", std::move(sink));
    g_logger->set_pattern("nb: %v");
    g_logger->set_level(to_spdlog(level));
    g_logger->flush_on(spdlog::level::trace);
  } catch (...) {
    g_logger = nullptr;
  }
}

bool enabled(LogLevel level) { return level >= g_level && g_level != LogLevel::Off; }
void debug(const std::string& msg) { emit(LogLevel::Debug, msg); }
void info(const std::string& msg) { emit(LogLevel::Info, msg); }
void warn(const std::string& msg) { emit(LogLevel::Warn, msg); }
void error(const std::string& msg) { emit(LogLevel::Error, msg); }

void print(const std::string& text) {
  if (g_level == LogLevel::Off) return;
  without_sigpipe([&] {
    const char* p = text.data();
    size_t left = text.size();
    while (left > 0) {
      const ssize_t n = ::write(STDERR_FILENO, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      p += n;
      left -= static_cast<size_t>(n);
    }
  });
}

}  // namespace nb::log
