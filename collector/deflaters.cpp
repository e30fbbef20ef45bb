#include "collector/deflaters.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "core/lock_within.h"

namespace nb {

namespace {

// Deflates `n` bytes at `p` with the ready stream `zs` into `out` (appended),
// ended by Z_FINISH (`last`) or Z_SYNC_FLUSH. Room for the whole piece at
// once, as deflateBound says (a little over the input for text that does
// not compress), more only if that is short.
bool deflate_into(z_stream& zs, const char* p, size_t n, bool last, std::string& out) {
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p));
  zs.avail_in = static_cast<uInt>(n);
  const size_t start = out.size();
  size_t room = deflateBound(&zs, static_cast<uLong>(n)) + 16;
  size_t used = 0;
  int rc;
  for (;;) {
    out.resize(start + used + room);
    zs.next_out = reinterpret_cast<Bytef*>(&out[start + used]);
    zs.avail_out = static_cast<uInt>(room);
    rc = deflate(&zs, last ? Z_FINISH : Z_SYNC_FLUSH);
    used += room - zs.avail_out;
    if (zs.avail_out != 0 || rc == Z_STREAM_ERROR || rc == Z_STREAM_END) break;
    room = size_t(1) << 16;
  }
  out.resize(start + used);
  return last ? rc == Z_STREAM_END : (rc == Z_OK || rc == Z_BUF_ERROR) && zs.avail_in == 0;
}

}  // namespace

bool deflate_piece(const char* p, size_t n, int level, bool last, std::string& out) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  bool ok = false;
  try {
    ok = deflate_into(zs, p, n, last, out);
  } catch (...) {
    ok = false;
  }
  deflateEnd(&zs);
  return ok;
}

// One zlib state per thread, reset for each piece: a piece then costs no
// allocation (zlib's state is a few hundred kB).
struct Deflaters::Stream {
  z_stream zs{};
  int level = 0;  // 0: not set up
  ~Stream() {
    if (level != 0) deflateEnd(&zs);
  }
  bool ready(int want) {
    if (level == 0) {
      if (deflateInit2(&zs, want, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
      level = want;
      return true;
    }
    deflateReset(&zs);
    if (want != level) {
      if (deflateParams(&zs, want, Z_DEFAULT_STRATEGY) != Z_OK) return false;
      level = want;
    }
    return true;
  }
};

Deflaters::Deflaters(unsigned helpers, int nice) : helpers_(helpers), nice_(nice) {}

Deflaters::~Deflaters() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

unsigned Deflaters::helpers_for_this_machine() {
  cpu_set_t set;
  CPU_ZERO(&set);
  long cores = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
  if (cores <= 0) cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores <= 1) return 0;
  return static_cast<unsigned>(std::clamp<long>(cores - 1, 1, 3));
}

void Deflaters::compress(Stream& stream, DeflatePiece& piece) {
  piece.out.clear();
  piece.ok = false;
  piece.crc = static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(piece.text.data()), piece.text.size()));
  try {
    if (!stream.ready(piece.level)) return;
    if (!piece.history.empty() &&
        deflateSetDictionary(&stream.zs, reinterpret_cast<const Bytef*>(piece.history.data()),
                             static_cast<uInt>(piece.history.size())) != Z_OK) {
      return;
    }
    piece.ok = deflate_into(stream.zs, piece.text.data(), piece.text.size(), false, piece.out);
  } catch (...) {
    piece.ok = false;  // no memory: the writer says so; nothing escapes a helper
  }
}

bool Deflaters::start() {
  tried_start_ = true;
  // Signals stay with the program's threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  for (unsigned i = 0; i < helpers_; ++i) {
    try {
      threads_.emplace_back([this] {
        pthread_setname_np(pthread_self(), "nb-deflate");
        const id_t me = static_cast<id_t>(syscall(SYS_gettid));
        errno = 0;
        const int nice = getpriority(PRIO_PROCESS, me);
        if (errno == 0) setpriority(PRIO_PROCESS, me, std::min(19, nice + nice_));
        Stream stream;
        run(stream);
      });
    } catch (...) {
      break;  // fewer helpers (or none: the submitter compresses)
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return !threads_.empty();
}

void Deflaters::submit(const std::shared_ptr<DeflatePiece>& piece) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!tried_start_ && helpers_ != 0) start();
  if (threads_.empty()) {
    lock.unlock();
    if (!own_) own_ = std::make_unique<Stream>();
    compress(*own_, *piece);
    lock.lock();
    piece->done = true;
    return;
  }
  piece->done = false;
  queue_.push_back(piece);
  lock.unlock();
  work_cv_.notify_one();
}

void Deflaters::wait(DeflatePiece& piece) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!piece.done) {
    if (!queue_.empty()) {
      if (!own_) {
        try {
          own_ = std::make_unique<Stream>();
        } catch (...) {
          done_cv_.wait(lock, [&] { return piece.done; });  // no memory to help: wait
          return;
        }
      }
      finish_one(lock, *own_);
      continue;
    }
    done_cv_.wait(lock);
  }
}

bool Deflaters::help_one() {
  std::unique_lock<std::mutex> lock(mu_);
  if (queue_.empty()) return false;
  // A stream for this piece alone (its setup is small next to a piece's
  // compression); no memory for one: the helpers go on alone.
  std::unique_ptr<Stream> stream;
  try {
    stream = std::make_unique<Stream>();
  } catch (...) {
    return false;
  }
  finish_one(lock, *stream);
  return true;
}

void Deflaters::finish_one(std::unique_lock<std::mutex>& lock, Stream& stream) {
  std::shared_ptr<DeflatePiece> piece = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  compress(stream, *piece);
  lock.lock();
  piece->done = true;
  done_cv_.notify_all();
}

bool Deflaters::is_done(DeflatePiece& piece) {
  std::lock_guard<std::mutex> lock(mu_);
  return piece.done;
}

void Deflaters::run(Stream& stream) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    finish_one(lock, stream);
  }
}

void Deflaters::hold_for_fork() {
  held_for_fork_ = lock_within(mu_, std::chrono::seconds(2));
}

void Deflaters::release_after_fork() {
  if (held_for_fork_) mu_.unlock();
  held_for_fork_ = false;
}

}  // namespace nb
