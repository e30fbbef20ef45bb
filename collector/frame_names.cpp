#include "collector/frame_names.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "collector/symbolizer.h"
#include "core/own_fork.h"

namespace nb {

namespace {

// The child must show progress this often, and may take this long in all
// (libdw on large modules is slow; a child stuck on a lock another thread
// held at fork must not hold the exit).
constexpr int kQuietMs = 15000;
constexpr auto kMaxTime = std::chrono::seconds(120);

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

formats::Frame to_frame(const SymbolizedFrame& s, uint64_t pc) {
  formats::Frame f;
  if (s.line > 0 && !s.file.empty()) {
    f.filename = s.file;
    f.line = s.line;
  } else {
    f.filename = s.module.empty() ? "??" : s.module;
    f.line = 0;
  }
  f.name = !s.function.empty() ? s.function : (s.module.empty() ? hex(pc) : base_name(s.module) + "+" + hex(s.offset));
  return f;
}

std::vector<formats::Frame> frames_of(Symbolizer& symbols, uint64_t pc) {
  std::vector<formats::Frame> out;
  // Every frame kept is a return address: the call is the byte before.
  for (const SymbolizedFrame& s : symbols.resolve_inlined(pc, true)) out.push_back(to_frame(s, pc));
  return out;
}

// The child's answer, one record per address, in the order asked:
//   u32 frames, then per frame: u32 length + file, i64 line, u32 length + name
void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_text(std::string& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

bool write_all(int fd, const std::string& data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

[[noreturn]] void child(const std::vector<uint64_t>& pcs, int fd) {
  try {
    Symbolizer symbols;
    std::string chunk;
    for (uint64_t pc : pcs) {
      const std::vector<formats::Frame> frames = frames_of(symbols, pc);
      put_u32(chunk, static_cast<uint32_t>(frames.size()));
      for (const formats::Frame& f : frames) {
        put_text(chunk, f.filename);
        const int64_t line = f.line;
        chunk.append(reinterpret_cast<const char*>(&line), sizeof line);
        put_text(chunk, f.name);
      }
      if (chunk.size() >= 1 << 16) {
        if (!write_all(fd, chunk)) _exit(3);
        chunk.clear();
      }
    }
    if (!write_all(fd, chunk)) _exit(3);
  } catch (...) {
    _exit(2);  // out of memory: what was sent stays usable
  }
  _exit(0);  // no atexit handlers, no stdio flush: the program's buffers are the parent's
}

// Reads records from `in` as they come, one per address of `pcs`.
class Reader {
 public:
  explicit Reader(const std::vector<uint64_t>& pcs, std::unordered_map<uint64_t, std::vector<formats::Frame>>& out)
      : pcs_(pcs), out_(out) {}
  void add(const char* p, size_t n) {
    buf_.append(p, n);
    while (next_ < pcs_.size() && parse_one()) ++next_;
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  size_t named() const { return next_; }

 private:
  bool get_u32(size_t& at, uint32_t& v) const {
    if (buf_.size() - at < sizeof v) return false;
    std::memcpy(&v, buf_.data() + at, sizeof v);
    at += sizeof v;
    return true;
  }
  bool get_text(size_t& at, std::string& s) const {
    uint32_t n = 0;
    if (!get_u32(at, n) || buf_.size() - at < n) return false;
    s.assign(buf_.data() + at, n);
    at += n;
    return true;
  }
  bool parse_one() {
    size_t at = pos_;
    uint32_t count = 0;
    if (!get_u32(at, count)) return false;
    std::vector<formats::Frame> frames(count);
    for (formats::Frame& f : frames) {
      int64_t line = 0;
      if (!get_text(at, f.filename) || buf_.size() - at < sizeof line) return false;
      std::memcpy(&line, buf_.data() + at, sizeof line);
      at += sizeof line;
      f.line = line;
      if (!get_text(at, f.name)) return false;
    }
    out_[pcs_[next_]] = std::move(frames);
    pos_ = at;
    return true;
  }

  const std::vector<uint64_t>& pcs_;
  std::unordered_map<uint64_t, std::vector<formats::Frame>>& out_;
  std::string buf_;
  size_t pos_ = 0;
  size_t next_ = 0;
};

// Runs the child and reads its answer; returns why it fell short ("" if it
// did not).
std::string named_in_child(const std::vector<uint64_t>& pcs, std::unordered_map<uint64_t, std::vector<formats::Frame>>& out) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return std::string("no pipe: ") + std::strerror(errno);
  pid_t pid;
  {
    const OwnFork own;  // nb's fork handlers stand aside (this may be the collector, mid-pass)
    pid = fork();
  }
  if (pid < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return std::string("no child process: ") + std::strerror(errno);
  }
  if (pid == 0) {
    ::close(pipe_fds[0]);
    child(pcs, pipe_fds[1]);
  }
  ::close(pipe_fds[1]);
  Reader reader(pcs, out);
  const auto deadline = std::chrono::steady_clock::now() + kMaxTime;
  std::string why;
  char buf[1 << 16];
  for (;;) {
    pollfd in{pipe_fds[0], POLLIN, 0};
    const int r = poll(&in, 1, kQuietMs);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 || std::chrono::steady_clock::now() > deadline) {
      why = "naming the frames took too long";
      kill(pid, SIGKILL);
      break;
    }
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reader.add(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (why.empty() && reader.named() < pcs.size()) {
    why = WIFSIGNALED(status) ? "the process naming them died of signal " + std::to_string(WTERMSIG(status))
                              : "the process naming them stopped (exit " + std::to_string(WEXITSTATUS(status)) +
                                    ", out of memory?)";
  }
  return why;
}

}  // namespace

std::unordered_map<uint64_t, std::vector<formats::Frame>> name_frames(const std::vector<uint64_t>& pcs,
                                                                       std::string& note) {
  std::unordered_map<uint64_t, std::vector<formats::Frame>> out;
  note.clear();
  if (pcs.empty()) return out;
  // libdw is loaded here, before the fork: the child then calls no dlopen,
  // which could wait forever on a loader lock another thread held.
  if (Symbolizer::load_line_info()) {
    const std::string why = named_in_child(pcs, out);
    if (!why.empty()) {
      note = "Native frames named without source lines where " + why + ": " +
             std::to_string(pcs.size() - out.size()) + " of " + std::to_string(pcs.size()) + " addresses";
    }
  }
  if (out.size() == pcs.size()) return out;
  Symbolizer linker_only(false);
  for (uint64_t pc : pcs) {
    if (out.find(pc) == out.end()) out[pc] = frames_of(linker_only, pc);
  }
  return out;
}

}  // namespace nb
