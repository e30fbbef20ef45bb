#include "core/log.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <ctime>
#include <memory>
#include <mutex>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace nb::log {

namespace {
// Never destroyed: the shim logs from atexit handlers, after static
// destructors of other objects may have run.
spdlog::logger* g_logger = nullptr;
LogLevel g_level = LogLevel::Warn;

// nb's stderr (open_stream): -1 until opened, or when the process had none.
std::atomic<int> g_fd{-1};
std::atomic<bool> g_opened{false};
// True when g_fd may block (a copy of fd 2 that could not be made
// non-blocking): each write then first asks poll whether it fits.
bool g_may_block = false;
std::atomic<uint64_t> g_dropped{0};
std::mutex g_open_mu;  // constant-initialized

// How long one message may wait for room: a terminal or a reader that
// drains gets everything, a pipe nobody reads yet (a parent that reads
// stdout to its end before stderr) costs the program at most this.
constexpr int kWaitMs = 250;

int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Waits until `fd` takes a write, at most until `deadline_ms`.
bool room(int fd, int64_t deadline_ms) {
  for (;;) {
    const int64_t wait = std::max<int64_t>(0, deadline_ms - now_ms());
    pollfd w{fd, POLLOUT, 0};
    const int r = poll(&w, 1, static_cast<int>(wait));
    if (r < 0 && errno == EINTR) continue;
    return r == 1 && (w.revents & POLLOUT);
  }
}

// Writes what fits within kWaitMs and counts the rest. Control characters
// other than newline and tab (from a prefix or a kernel name) go out as
// '?', so nothing nb echoes can steer a terminal. No lock, no allocation.
void write_text(const char* p, size_t left) {
  const int fd = g_fd.load(std::memory_order_acquire);
  const int64_t deadline = now_ms() + kWaitMs;
  char chunk[PIPE_BUF];
  while (fd >= 0 && left > 0) {
    if (g_may_block && !room(fd, deadline)) break;
    // At most PIPE_BUF at a time: on a pipe that poll said has room, such a
    // write does not block, and it is never interleaved with the program's.
    const size_t size = std::min<size_t>(left, PIPE_BUF);
    for (size_t i = 0; i < size; ++i) {
      const auto c = static_cast<unsigned char>(p[i]);
      chunk[i] = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : static_cast<char>(c);
    }
    const ssize_t n = ::write(fd, chunk, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && room(fd, deadline)) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (left) g_dropped.fetch_add(left, std::memory_order_relaxed);
}

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

// spdlog's lines go through write_text: never blocking, never to a later fd 2.
class StreamSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t text;
    formatter_->format(msg, text);
    write_text(text.data(), text.size());
  }
  void flush_() override {}
};

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

void open_stream() {
  if (g_opened.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_open_mu);
  if (g_opened.load(std::memory_order_relaxed)) return;
  struct stat st {};
  int fd = -1;
  if (fstat(STDERR_FILENO, &st) == 0) {
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
      // A new open file description of the same pipe or terminal, so that
      // non-blocking mode on it leaves the program's fd 2 as it is. Not for
      // a regular file: a new description would write from offset 0.
      fd = ::open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    }
    if (fd < 0) {
      fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
      g_may_block = fd >= 0 && !S_ISREG(st.st_mode);
    }
  }
  g_fd.store(fd, std::memory_order_release);
  g_opened.store(true, std::memory_order_release);
}

uint64_t dropped_bytes() { return g_dropped.load(std::memory_order_relaxed); }

void init(LogLevel level) {
  open_stream();
  g_level = level;
  if (g_logger != nullptr) return;
  try {
    auto sink = std::make_shared<StreamSink>();
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
  open_stream();
  without_sigpipe([&] { write_text(text.data(), text.size()); });
}

}  // namespace nb::log
