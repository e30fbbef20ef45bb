// A trace file written while the run goes on, in constant memory.
//
// The collector appends events to the file's buffer (as text, or packed for
// the writer to make text of); each full buffer is handed to one background
// thread of nb's (TraceWriter), which makes it text and has it compressed
// (by Deflaters, on helper threads where the machine has cores to spare)
// into the file's body.
// The body lives in files already unlinked, beside the output: a process
// killed at any moment leaves nothing behind, and the page cache, not the
// process, holds what waits on disk. At the end the head (known only then: the table, the
// run's summary), the body and the tail are put together under the file's
// name through write_output_file (a temporary file, then link/rename).
//
// Compressed, the file is one gzip member (catapult's inflater stops after
// the first, and Perfetto's too): the head, each piece of the body (a
// buffer's text) and the tail are raw deflate streams of their own, each ended on a byte
// boundary without a final block but the tail's, so their concatenation is
// one valid deflate stream; the CRC of the whole is combined from the
// pieces' (crc32_combine).
//
// The body is a sequence of slices, each a deflate stream (or plain text)
// in its own file. A run keeps them all; a flight recorder (NB_KEEP) drops
// the oldest as it goes, so only the newest ones reach the file.
//
// When text comes faster than it can be compressed (a burst of a million
// calls a second), full buffers beyond a fixed amount of memory wait in a
// backlog file (unlinked too) rather than in memory, and the writer catches
// up from there; the collector never waits for compression.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collector/deflaters.h"

namespace nb {

struct TraceBody;

class TraceWriter {
 public:
  // `memory_bytes`: buffers handed over and waiting in memory before the
  // backlog file takes over.
  explicit TraceWriter(size_t memory_bytes = size_t(4) << 20) : memory_limit_(memory_bytes) {}
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Around a fork: the thread finishes the buffer it is on and waits
  // (at most 2 s), so that the child inherits no lock it held.
  void hold_for_fork();
  void release_after_fork();

  // Bytes of text handed over and not yet compressed (all files).
  uint64_t pending_bytes() const { return pending_bytes_.load(std::memory_order_relaxed); }

 private:
  friend class TraceFile;
  // A file to put together on the thread, once the text before it is in
  // (finish_async): what finish() does on the caller.
  struct FinishOrder;
  struct Job {
    enum class Kind { Text, EndSlice, Barrier, Finish } kind = Kind::Text;
    std::shared_ptr<TraceBody> body;
    std::string text;          // Text in memory
    uint64_t offset = 0;       // Text in the backlog file when text is empty and length != 0
    uint64_t length = 0;
    size_t keep_slices = 0;    // EndSlice: how many of the newest slices to keep (0 = all)
    double min_ts = 0, max_ts = 0;  // EndSlice, Barrier: the slice's event times (µs, as written)
    std::shared_ptr<std::atomic<bool>> done;  // Barrier
    std::shared_ptr<const FinishOrder> order;  // Finish
  };
  void submit(Job job);
  // A buffer that held text already handed over, for the next chunk (false:
  // none to spare). Reusing them keeps freed megabytes from piling up in
  // the allocator of a thread that is not the one that freed them.
  bool reuse(std::string& text);
  void spare(std::string&& text);  // with mu_ held
  bool start(std::string& problem);  // the thread, once
  void run();
  void work(Job& job);
  bool open_backlog(const std::string& near_path);

  // How much nicer the writer's threads are than the thread that starts
  // them (a tenth of the collector's weight when both want the same core).
  static constexpr int kNice = 10;
  size_t memory_limit_;
  std::mutex work_mu_;        // held while a job is worked on (and freed)
  bool held_for_fork_ = false, work_held_for_fork_ = false;
  std::mutex mu_;
  std::condition_variable cv_;       // the thread waits for jobs
  std::condition_variable done_cv_;  // barriers and memory room
  std::deque<Job> jobs_;
  std::vector<std::string> spare_;  // at most kSpare
  static constexpr size_t kSpare = 2;
  size_t queued_memory_ = 0;
  bool stop_ = false;
  bool started_ = false;
  std::thread thread_;
  std::atomic<uint64_t> pending_bytes_{0};
  int backlog_fd_ = -1;        // -1: none yet; -2: could not be made
  uint64_t backlog_end_ = 0;   // where the next buffer goes (collector side)
  std::vector<char> read_buf_;  // the thread's, for backlog text
  // Compress the text the thread makes (on helpers of their own; last, so
  // that they stop after the thread).
  Deflaters deflaters_{Deflaters::helpers_for_this_machine(), kNice};
};

// How finish() puts the file together.
struct TraceFinish {
  bool overwrite = false;
  // Leave out events whose "ts" is before this (µs, as written): a flight
  // recorder's oldest slices hold some of those.
  double from_ts = -1e300;
  // A copy now, the file goes on (a flight recorder's dump): the body stays.
  bool keep_body = false;
};

struct TraceWriter::FinishOrder {
  std::string path;
  int level = 0;
  std::string head, tail;
  TraceFinish how;
  // Called on the writer thread once written (true) or not (false, with
  // the problem), with the file's bytes.
  std::function<void(bool ok, const std::string& problem, uint64_t bytes)> done;
};

// Turns what the collector handed over into the file's text, on the writer
// thread, each file's in the order handed over (TraceStream's: packed
// events, see event_pack.h). False: the input is not what it should be.
using TraceToText = std::function<bool(const char* p, size_t n, std::string& text)>;

struct TraceFileConfig {
  std::string path;        // the final name, e.g. out.trace.json.gz
  int level = 1;           // zlib level 1-9; 0 = plain JSON
  TraceToText to_text;     // none: what is handed over is the text
};

class TraceFile {
 public:
  TraceFile(TraceWriter& writer, TraceFileConfig config);
  ~TraceFile();  // a file never finished leaves nothing
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // False, with `problem`, when the body cannot be kept (no room for its
  // files): events are then not written, the rest of the outputs are, and
  // finish() gives the same problem.
  bool open(std::string& problem);
  bool is_open() const { return body_ != nullptr; }
  const std::string& path() const { return config_.path; }
  // The name can change until finish() (a prefix decided at the end): the
  // body's files stay where they are, in the same directory.
  void set_path(std::string path) { config_.path = std::move(path); }

  // Append event text (or what config.to_text reads) here, then call
  // committed() with the event's "ts".
  std::string& text() { return text_; }
  void committed(double ts) {
    if (ts < min_ts_) min_ts_ = ts;
    if (ts > max_ts_) max_ts_ = ts;
    if (text_.size() >= kChunk) hand_over();
  }
  // Hands what was appended so far to the writer now (it goes on its own
  // at each full buffer).
  void hand_over();
  // Ends the current slice (what was appended so far goes into it) and
  // starts a new one; keeps only the newest `keep` slices (0 = all).
  void end_slice(size_t keep);

  // Writes head + body + tail under the file's name. Waits for the writer
  // to finish this file's text; `progress` is called about once a second
  // meanwhile with (bytes done, bytes in all) of what was waiting.
  bool finish(const std::string& head, const std::string& tail, const TraceFinish& how, std::string& problem,
              const std::function<void(uint64_t, uint64_t)>& progress = nullptr);

  // As finish(), without waiting: the writer thread puts the file together
  // once it has written the text handed over before, then calls `done` (on
  // that thread). For a copy taken while the run goes on (a flight
  // recorder's dump): the collector goes back to the rings at once rather
  // than wait for a burst's text to be compressed.
  void finish_async(const std::string& head, const std::string& tail, const TraceFinish& how,
                    std::function<void(bool ok, const std::string& problem, uint64_t bytes)> done);

  // The file's size once finished.
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  // What is handed over at a time: 128 KB of packs make about 0.8 MB of
  // text, the piece a deflater compresses (the writer holds a few).
  static constexpr size_t kChunk = size_t(1) << 17;
  TraceWriter::Job slice_job(TraceWriter::Job::Kind kind);
  TraceWriter& writer_;
  TraceFileConfig config_;
  std::shared_ptr<TraceBody> body_;
  std::string text_;
  double min_ts_ = 1e300, max_ts_ = -1e300;  // of the slice being filled
  std::string open_problem_;
  uint64_t file_bytes_ = 0;
};

}  // namespace nb
