#include "collector/trace_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "collector/deflaters.h"
#include "collector/output_files.h"
#include "core/lock_within.h"

namespace nb {

namespace {

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n != 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, uint64_t offset, char* out, size_t n) {
  while (n != 0) {
    const ssize_t r = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    out += r;
    offset += static_cast<uint64_t>(r);
    n -= static_cast<size_t>(r);
  }
  return true;
}

void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

// One file's body: written by the writer thread only, until a barrier
// hands it back to the collector.
struct TraceBody {
  struct Slice {
    int fd = -1;
    uint64_t raw = 0;     // uncompressed bytes
    uint32_t crc = 0;     // of the uncompressed bytes
    uint64_t stored = 0;  // bytes in fd
    double min_ts = 1e300, max_ts = -1e300;  // its events' "ts"
  };
  std::string near;  // the output's path: scratch files go beside it
  int level = 0;
  TraceToText to_text;
  std::string text;  // to_text's
  Deflaters* deflaters = nullptr;
  size_t max_in_flight = 1;
  // Pieces handed to the deflaters, oldest first: stored in this order.
  std::deque<std::shared_ptr<DeflatePiece>> in_flight;
  std::vector<std::string> spare_texts;  // buffers of stored pieces, for the next
  // The end of the current slice's text so far: the next piece's history.
  static constexpr size_t kHistory = size_t(32) << 10;
  std::string history;
  std::deque<Slice> slices;
  // The first problem; nothing more is written once set. Room is kept so
  // that saying "no memory" needs none.
  std::string failed;
  TraceBody() { failed.reserve(256); }

  ~TraceBody() {
    for (Slice& s : slices) {
      if (s.fd >= 0) ::close(s.fd);
    }
  }

  bool new_slice() {
    std::string problem;
    const int fd = open_unlinked(near, problem);
    if (fd < 0) {
      if (failed.empty()) failed = problem;
      return false;
    }
    slices.push_back(Slice{fd, 0, 0, 0});
    history.clear();  // a slice is read back (and dropped) on its own
    if (current == 0) current = level;
    return true;
  }

  bool store(const void* p, size_t n) {
    Slice& s = slices.back();
    if (!write_all(s.fd, p, n)) {
      if (failed.empty()) failed = std::string("could not write the trace's scratch file: ") + std::strerror(errno);
      return false;
    }
    s.stored += n;
    return true;
  }

  // Stores the pieces that are done, oldest first; with `all`, waits for
  // every one, else only while more than max_in_flight are out.
  void store_done(bool all) {
    while (!in_flight.empty()) {
      DeflatePiece& piece = *in_flight.front();
      if (!deflaters->is_done(piece)) {
        if (!all && in_flight.size() <= max_in_flight) return;
        deflaters->wait(piece);
      }
      if (!piece.ok) {
        if (failed.empty()) failed.assign("no memory to compress the trace");
      } else if (failed.empty() && store(piece.out.data(), piece.out.size())) {
        Slice& s = slices.back();
        s.crc = static_cast<uint32_t>(crc32_combine(s.crc, piece.crc, static_cast<z_off_t>(piece.text.size())));
        s.raw += piece.text.size();
      }
      if (spare_texts.size() < max_in_flight && piece.text.capacity() <= (size_t(16) << 20)) {
        piece.text.clear();
        spare_texts.push_back(std::move(piece.text));
      }
      in_flight.pop_front();
    }
  }

  // The level follows the rate of the text: the configured one below kFast
  // bytes a second (level 9 compresses about 60 MB/s of trace text on the
  // CI kind, so it costs under a seventh of a core), kFastLevel (4 times
  // faster, its file 11% larger; level 3 is 1.8 times faster again but its
  // file 15% larger than level 5's, which took the 300,000-iteration demo's
  // trace over 30 MB) above that or while more than kBehind bytes wait (as
  // handed over: packed events are about a sixth of their text); back below
  // half that rate with the writer caught up. Each piece has its level.
  static constexpr int kFastLevel = 5;
  static constexpr uint64_t kFast = uint64_t(8) << 20;
  static constexpr uint64_t kBehind = uint64_t(1) << 20;
  int current = 0;  // the level of the next piece
  uint64_t window_bytes = 0;
  std::chrono::steady_clock::time_point window_start{};
  double rate = 0;  // bytes a second, over the last half second or more
  void pace(uint64_t waiting, size_t n) {
    if (level <= kFastLevel || !failed.empty()) return;
    const auto now = std::chrono::steady_clock::now();
    if (window_start == std::chrono::steady_clock::time_point{}) window_start = now;
    window_bytes += n;
    const double secs = std::chrono::duration<double>(now - window_start).count();
    if (secs >= 0.5) {
      rate = static_cast<double>(window_bytes) / secs;
      window_bytes = 0;
      window_start = now;
    }
    const bool fast = rate > static_cast<double>(kFast) || waiting > kBehind;
    const bool calm = rate < static_cast<double>(kFast) / 2 && waiting < kBehind / 4;
    current = fast ? kFastLevel : calm ? level : current;
  }

  // What the collector handed over: made text first when it is not.
  // `waiting`: bytes handed over and not yet taken (pace's).
  void take(const char* p, size_t n, uint64_t waiting) {
    if (!to_text || !failed.empty()) {
      pace(waiting, n);
      std::string copy = next_text();
      copy.assign(p, n);
      append(copy);
      return;
    }
    if (!spare_texts.empty()) {
      text = std::move(spare_texts.back());
      spare_texts.pop_back();
    }
    text.clear();
    try {
      if (!to_text(p, n, text)) failed = "the trace's events were garbled on their way to the writer";
    } catch (...) {
      failed.assign("no memory to write the trace's events");  // in its room: nothing escapes the writer thread
    }
    pace(waiting, text.size());
    append(text);
  }

  std::string next_text() {
    if (spare_texts.empty()) return std::string();
    std::string t = std::move(spare_texts.back());
    spare_texts.pop_back();
    return t;
  }

  // Takes `t`'s text into the slice: stored as it is (level 0), or as a
  // piece for the deflaters.
  void append(std::string& t) {
    if (!failed.empty() || t.empty()) return;
    if (level == 0) {
      Slice& s = slices.back();
      s.raw += t.size();
      store(t.data(), t.size());
      return;
    }
    auto piece = std::make_shared<DeflatePiece>();
    piece->history.swap(history);
    const size_t keep = std::min(t.size(), kHistory);
    history.assign(t, t.size() - keep, keep);
    piece->text.swap(t);
    piece->level = current;
    in_flight.push_back(piece);
    deflaters->submit(piece);
    store_done(false);
  }

  void note_times(double lo, double hi) {
    if (slices.empty()) return;
    slices.back().min_ts = std::min(slices.back().min_ts, lo);
    slices.back().max_ts = std::max(slices.back().max_ts, hi);
  }

  // Stores every piece of the current slice (each ends on a byte boundary).
  void close_slice() { store_done(true); }
};

TraceWriter::~TraceWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (backlog_fd_ >= 0) ::close(backlog_fd_);
}

bool TraceWriter::start(std::string& problem) {
  if (started_) return true;
  // Signals stay with the program's threads (as on the collector thread).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "nb-writer");
      // The collector must keep up with the rings (what it misses is
      // lost); the writer need not (text it has not compressed waits in
      // memory, then in the backlog file). Where they share a core, the
      // collector goes first.
      const id_t me = static_cast<id_t>(syscall(SYS_gettid));
      errno = 0;
      const int nice = getpriority(PRIO_PROCESS, me);
      if (errno == 0) setpriority(PRIO_PROCESS, me, std::min(19, nice + kNice));
      run();
    });
    started_ = true;
  } catch (...) {
    problem = "no thread for writing the trace: it is compressed on the collector thread";
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return started_;
}

bool TraceWriter::open_backlog(const std::string& near_path) {
  std::string problem;
  backlog_fd_ = open_unlinked(near_path, problem);
  if (backlog_fd_ < 0) backlog_fd_ = -2;
  return backlog_fd_ >= 0;
}

void TraceWriter::submit(Job job) {
  if (!started_) {  // no thread: the work is done here
    work(job);
    return;
  }
  const size_t n = job.text.size();
  std::unique_lock<std::mutex> lock(mu_);
  if (job.kind == Job::Kind::Text && queued_memory_ + n > memory_limit_) {
    // Memory is spent: the text waits in the backlog file instead.
    lock.unlock();
    if (backlog_fd_ == -1) open_backlog(job.body->near);
    bool stored = false;
    if (backlog_fd_ >= 0) {
      size_t done = 0;
      while (done < n) {
        const ssize_t w = ::pwrite(backlog_fd_, job.text.data() + done, n - done, static_cast<off_t>(backlog_end_ + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += static_cast<size_t>(w);
      }
      stored = done == n;
    }
    lock.lock();
    if (stored) {
      job.offset = backlog_end_;
      job.length = n;
      backlog_end_ += n;
      spare(std::move(job.text));
      std::string().swap(job.text);
    } else {
      // No backlog: wait for room (the rings hold what comes meanwhile).
      done_cv_.wait(lock, [&] { return queued_memory_ + n <= memory_limit_ || queued_memory_ == 0; });
    }
  }
  queued_memory_ += job.text.size();
  jobs_.push_back(std::move(job));
  lock.unlock();
  cv_.notify_one();
}

void TraceWriter::spare(std::string&& text) {
  if (spare_.size() >= kSpare || text.capacity() == 0) return;
  text.clear();
  try {
    spare_.push_back(std::move(text));
  } catch (...) {
  }
}

bool TraceWriter::reuse(std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_.empty()) return false;
  text.swap(spare_.back());
  spare_.pop_back();
  return true;
}

void TraceWriter::hold_for_fork() {
  // mu_ first: the thread never holds it with work_mu_.
  held_for_fork_ = lock_within(mu_, std::chrono::seconds(2));
  work_held_for_fork_ = lock_within(work_mu_, std::chrono::seconds(2));
  deflaters_.hold_for_fork();
}

void TraceWriter::release_after_fork() {
  deflaters_.release_after_fork();
  if (work_held_for_fork_) work_mu_.unlock();
  if (held_for_fork_) mu_.unlock();
  held_for_fork_ = work_held_for_fork_ = false;
}

void TraceWriter::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, nothing left
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    const size_t in_memory = job.text.size();
    {
      std::lock_guard<std::mutex> busy(work_mu_);
      try {
        work(job);
      } catch (...) {
        // Out of memory: this file is not written (said at its end); no
        // exception leaves the thread, and a barrier is never left waiting.
        if (job.body && job.body->failed.empty()) job.body->failed.assign("no memory to write the trace");
        if (job.done) job.done->store(true, std::memory_order_release);
      }
    }
    lock.lock();
    spare(std::move(job.text));
    job = Job{};  // before the room is given back
    queued_memory_ -= in_memory;
    done_cv_.notify_all();
  }
}

namespace {
// Writes the events of slice `s` whose "ts" is `from_ts` or later to `put`,
// as a piece of the file's deflate stream (raw text when `level` is 0), a
// buffer at a time: a slice can hold a hundred MB of text. `crc` and `raw`
// grow by the text kept. False when the slice cannot be read back.
// Events are ",\n{...}" each, as EventText writes them; each event's first
// "ts" key is its own (names and arguments are strings, whose quotes are
// escaped, or nb's own keys).
bool filter_slice(const TraceBody::Slice& s, int level, double from_ts, const std::function<void(const char*, size_t)>& put,
                  uint32_t& crc, uint64_t& raw) {
  z_stream in{}, out{};
  const bool gz = level > 0;
  if (gz && inflateInit2(&in, -15) != Z_OK) return false;
  // Level 1 for the kept part: it is written while the program waits (at
  // exit, or a dump on the collector thread).
  if (gz && deflateInit2(&out, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    inflateEnd(&in);
    return false;
  }
  std::vector<char> stored(size_t(1) << 20), text_buf(size_t(1) << 20), zbuf(size_t(1) << 18);
  std::string pending;  // text not yet split into whole events
  bool ok = true;
  const auto emit = [&](const char* p, size_t n, bool last) {
    crc = static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(p), n));
    raw += n;
    if (!gz) {
      put(p, n);
      return;
    }
    out.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(p));
    out.avail_in = static_cast<uInt>(n);
    do {
      out.next_out = reinterpret_cast<Bytef*>(zbuf.data());
      out.avail_out = static_cast<uInt>(zbuf.size());
      deflate(&out, last ? Z_SYNC_FLUSH : Z_NO_FLUSH);
      put(zbuf.data(), zbuf.size() - out.avail_out);
    } while (out.avail_out == 0);
  };
  // Whole events of `pending` (each starts with ",\n{"), up to the last
  // start, unless `all`.
  const auto take = [&](bool all) {
    size_t at = 0;
    std::string kept;
    while (at < pending.size()) {
      size_t next = pending.find(",\n{", at + 1);
      if (next == std::string::npos) {
        if (!all) break;
        next = pending.size();
      }
      const size_t key = pending.find("\"ts\":", at);
      const double ts = key < next ? std::strtod(pending.c_str() + key + 5, nullptr) : from_ts;
      if (ts >= from_ts) kept.append(pending, at, next - at);
      at = next;
    }
    pending.erase(0, at);
    if (!kept.empty()) emit(kept.data(), kept.size(), false);
  };
  for (uint64_t at = 0; ok && at < s.stored;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(stored.size(), s.stored - at));
    if (!read_all(s.fd, at, stored.data(), n)) {
      ok = false;
      break;
    }
    at += n;
    if (!gz) {
      pending.append(stored.data(), n);
    } else {
      in.next_in = reinterpret_cast<Bytef*>(stored.data());
      in.avail_in = static_cast<uInt>(n);
      do {
        in.next_out = reinterpret_cast<Bytef*>(text_buf.data());
        in.avail_out = static_cast<uInt>(text_buf.size());
        const uInt before = in.avail_in;
        const int rc = inflate(&in, Z_SYNC_FLUSH);
        const size_t got = text_buf.size() - in.avail_out;
        if ((rc != Z_OK && rc != Z_BUF_ERROR && rc != Z_STREAM_END) || (got == 0 && in.avail_in == before)) {
          ok = rc == Z_BUF_ERROR && in.avail_in == 0;  // no progress: corrupt, unless all was taken
          break;
        }
        pending.append(text_buf.data(), got);
        take(false);  // a megabyte of text at a time: 1 MB read can inflate to 20
      } while (in.avail_out == 0 || in.avail_in != 0);
    }
    take(false);
  }
  if (ok) {
    take(true);
    emit("", 0, true);  // ends the piece on a byte boundary
  }
  if (gz) {
    inflateEnd(&in);
    deflateEnd(&out);
  }
  return ok;
}

// Puts head + the body's slices + tail together under `path`, once all the
// body's text is in its slices (after a barrier, or on the writer thread in
// the order of its jobs). `written`: the file's bytes.
bool assemble(const TraceBody& b, const std::string& path, int level, const std::string& head, const std::string& tail,
              const TraceFinish& how, std::string& problem, uint64_t& written) {
  if (!b.failed.empty()) {
    problem = b.failed + "; " + path + " not written";
    return false;
  }
  const bool gz = level > 0;
  written = 0;
  return write_output_file(path, how.overwrite, [&](std::ostream& os) {
    const auto put = [&](const std::string& s) {
      os.write(s.data(), static_cast<std::streamsize>(s.size()));
      written += s.size();
    };
    uint32_t crc = 0;
    uint64_t raw = 0;
    if (gz) {
      // gzip header: deflate, no name, no time, Unix.
      put(std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10));
      std::string piece;
      if (!deflate_piece(head.data(), head.size(), level, false, piece)) {
        errno = ENOMEM;  // not published: a file that looks whole must be whole
        os.setstate(std::ios::badbit);
        return;
      }
      put(piece);
      crc = static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(head.data()), head.size()));
      raw = head.size();
    } else {
      put(head);
    }
    std::vector<char> buf(size_t(1) << 20);
    for (const TraceBody::Slice& s : b.slices) {
      if (s.max_ts < how.from_ts) continue;  // wholly before: left out
      if (s.min_ts < how.from_ts) {
        // Partly before: its events from `from_ts` on, as a piece of their own.
        uint32_t piece_crc = 0;
        uint64_t piece_raw = 0;
        if (!filter_slice(s, level, how.from_ts, [&](const char* p, size_t n) {
              os.write(p, static_cast<std::streamsize>(n));
              written += n;
            }, piece_crc, piece_raw)) {
          errno = EIO;
          os.setstate(std::ios::badbit);
          return;
        }
        if (gz) {
          crc = static_cast<uint32_t>(crc32_combine(crc, piece_crc, static_cast<z_off_t>(piece_raw)));
          raw += piece_raw;
        }
        continue;
      }
      for (uint64_t at = 0; at < s.stored;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), s.stored - at));
        if (!read_all(s.fd, at, buf.data(), n)) {
          // Not published: a file that looks whole must be whole.
          errno = EIO;
          os.setstate(std::ios::badbit);
          return;
        }
        os.write(buf.data(), static_cast<std::streamsize>(n));
        written += n;
        at += n;
      }
      if (gz) {
        crc = static_cast<uint32_t>(crc32_combine(crc, s.crc, static_cast<z_off_t>(s.raw)));
        raw += s.raw;
      }
    }
    if (gz) {
      std::string piece;
      if (!deflate_piece(tail.data(), tail.size(), level, true, piece)) {
        errno = ENOMEM;
        os.setstate(std::ios::badbit);
        return;
      }
      put(piece);
      crc = static_cast<uint32_t>(crc32_combine(crc, static_cast<uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(tail.data()), tail.size())),
                                                static_cast<z_off_t>(tail.size())));
      raw += tail.size();
      std::string trailer;
      put_le32(trailer, crc);
      put_le32(trailer, static_cast<uint32_t>(raw & 0xffffffffu));
      put(trailer);
    } else {
      put(tail);
    }
  }, problem);
}
}  // namespace

void TraceWriter::work(Job& job) {
  TraceBody& b = *job.body;
  switch (job.kind) {
    case Job::Kind::Text: {
      uint64_t n = job.text.size();
      if (!job.text.empty()) {
        b.take(job.text.data(), job.text.size(), pending_bytes_.load(std::memory_order_relaxed));
      } else if (job.length != 0) {
        n = job.length;
        read_buf_.resize(job.length);
        if (read_all(backlog_fd_, job.offset, read_buf_.data(), job.length)) {
          b.take(read_buf_.data(), job.length, pending_bytes_.load(std::memory_order_relaxed));
        } else if (b.failed.empty()) {
          b.failed = "could not read back the trace's backlog";
        }
        // The backlog's space is given back as soon as it is read.
        fallocate(backlog_fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(job.offset),
                  static_cast<off_t>(job.length));
      }
      pending_bytes_.fetch_sub(n, std::memory_order_relaxed);
      break;
    }
    case Job::Kind::EndSlice:
      b.note_times(job.min_ts, job.max_ts);
      b.close_slice();
      if (b.failed.empty() && b.new_slice() && job.keep_slices != 0) {
        while (b.slices.size() > job.keep_slices) {
          ::close(b.slices.front().fd);
          b.slices.pop_front();
        }
      }
      break;
    case Job::Kind::Barrier:
      b.note_times(job.min_ts, job.max_ts);
      b.close_slice();
      job.done->store(true, std::memory_order_release);
      break;
    case Job::Kind::Finish: {
      b.note_times(job.min_ts, job.max_ts);
      b.close_slice();
      const FinishOrder& o = *job.order;
      std::string problem;
      uint64_t written = 0;
      bool ok = false;
      try {
        ok = assemble(b, o.path, o.level, o.head, o.tail, o.how, problem, written);
      } catch (...) {
        problem = "no memory to write " + o.path;
      }
      if (o.done) o.done(ok, problem, written);
      break;
    }
  }
}

TraceFile::TraceFile(TraceWriter& writer, TraceFileConfig config) : writer_(writer), config_(std::move(config)) {}

TraceFile::~TraceFile() = default;  // the body's files are unlinked: closing them frees them

bool TraceFile::open(std::string& problem) {
  if (!make_parent_dirs(config_.path, problem)) {
    open_problem_ = problem;
    return false;
  }
  auto body = std::make_shared<TraceBody>();
  body->near = config_.path;
  body->level = config_.level;
  body->to_text = config_.to_text;
  body->deflaters = &writer_.deflaters_;
  body->max_in_flight = writer_.deflaters_.helpers() + 1;
  if (!body->new_slice()) {
    problem = body->failed + "; " + config_.path + " not written";
    open_problem_ = problem;
    return false;
  }
  std::string why;
  writer_.start(why);  // without a thread the work is done inline
  body_ = std::move(body);
  text_.reserve(kChunk + (kChunk >> 4));
  return true;
}

void TraceFile::hand_over() {
  if (!body_) {
    text_.clear();
    return;
  }
  if (text_.empty()) return;
  TraceWriter::Job job;
  job.kind = TraceWriter::Job::Kind::Text;
  job.body = body_;
  writer_.pending_bytes_.fetch_add(text_.size(), std::memory_order_relaxed);
  job.text.swap(text_);
  if (!writer_.reuse(text_)) text_.reserve(kChunk + (kChunk >> 4));
  writer_.submit(std::move(job));
}

TraceWriter::Job TraceFile::slice_job(TraceWriter::Job::Kind kind) {
  TraceWriter::Job job;
  job.kind = kind;
  job.body = body_;
  job.min_ts = min_ts_;  // the times of the slice this job closes (or pauses)
  job.max_ts = max_ts_;
  min_ts_ = 1e300;
  max_ts_ = -1e300;
  return job;
}

void TraceFile::end_slice(size_t keep) {
  if (!body_) return;
  hand_over();
  TraceWriter::Job job = slice_job(TraceWriter::Job::Kind::EndSlice);
  job.keep_slices = keep;
  writer_.submit(std::move(job));
}

bool TraceFile::finish(const std::string& head, const std::string& tail, const TraceFinish& how, std::string& problem,
                       const std::function<void(uint64_t, uint64_t)>& progress) {
  if (!body_) {
    // What open() said (a missing directory fails the other files the same way).
    problem = open_problem_.empty() ? config_.path + " not written: its events could not be kept" : open_problem_;
    return false;
  }
  hand_over();
  // Everything handed over before this point is written once the barrier
  // is reached (one thread, jobs in order).
  const uint64_t waiting = writer_.pending_bytes();
  auto done = std::make_shared<std::atomic<bool>>(false);
  TraceWriter::Job job = slice_job(TraceWriter::Job::Kind::Barrier);
  job.done = done;
  writer_.submit(std::move(job));
  const auto began = std::chrono::steady_clock::now();
  auto next_report = began + std::chrono::seconds(2);
  {
    std::unique_lock<std::mutex> lock(writer_.mu_);
    while (!done->load(std::memory_order_acquire)) {
      // This thread waits anyway: it compresses what waits for a helper.
      lock.unlock();
      const bool helped = writer_.deflaters_.help_one();
      lock.lock();
      if (!helped) writer_.done_cv_.wait_for(lock, std::chrono::milliseconds(writer_.deflaters_.helpers() ? 5 : 100));
      if (progress && std::chrono::steady_clock::now() >= next_report) {
        const uint64_t left = writer_.pending_bytes();
        lock.unlock();
        progress(waiting > left ? waiting - left : 0, waiting);
        lock.lock();
        next_report = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      }
    }
  }
  uint64_t written = 0;
  const bool ok = assemble(*body_, config_.path, config_.level, head, tail, how, problem, written);
  if (!how.keep_body || !body_->failed.empty()) body_.reset();  // the scratch files go
  if (ok) file_bytes_ = written;
  return ok;
}

void TraceFile::finish_async(const std::string& head, const std::string& tail, const TraceFinish& how,
                             std::function<void(bool, const std::string&, uint64_t)> done) {
  if (!body_) {
    const std::string problem =
        open_problem_.empty() ? config_.path + " not written: its events could not be kept" : open_problem_;
    if (done) done(false, problem, 0);
    return;
  }
  hand_over();
  auto order = std::make_shared<TraceWriter::FinishOrder>();
  order->path = config_.path;
  order->level = config_.level;
  order->head = head;
  order->tail = tail;
  order->how = how;
  order->done = std::move(done);
  TraceWriter::Job job = slice_job(TraceWriter::Job::Kind::Finish);
  job.order = std::move(order);
  writer_.submit(std::move(job));
  if (!how.keep_body) body_.reset();  // the job holds the body until it is written
}

}  // namespace nb
