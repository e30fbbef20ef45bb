// Compresses pieces of a trace's text on helper threads, so that the text
// of a burst is compressed on every core the machine can spare rather than
// on the one writer thread (pigz's idea, within one gzip member).
//
// Each piece is a raw deflate stream of its own, primed with the last 32 KB
// of the text before it (pigz's way: its matches may reach back into that
// text, which a reader has just inflated) and ended on a byte boundary
// without a final block (Z_SYNC_FLUSH): pieces put one after another in the
// order they were made are one valid deflate stream, and the CRC of the
// whole is combined from theirs.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace nb {

// Raw deflate of `n` bytes at `p` at `level`, appended to `out`: ended on
// a byte boundary (`last` false) or with the final block (`last` true).
bool deflate_piece(const char* p, size_t n, int level, bool last, std::string& out);

struct DeflatePiece {
  std::string text;  // in
  int level = 1;
  // In: the end of the text just before this piece in the stream (at most
  // 32 KB), or empty where the piece starts a stream that may be read on
  // its own.
  std::string history;
  // Out, once done: the compressed bytes and the CRC-32 of `text`; `ok`
  // false when zlib had no memory (`out` is then not to be used).
  std::string out;
  uint32_t crc = 0;
  bool ok = false;
  bool done = false;  // under the pool's lock
};

class Deflaters {
 public:
  // `helpers`: threads to start at the first piece (0: each piece is
  // compressed by the thread that submits it); `nice`: how much nicer they
  // are than that thread.
  Deflaters(unsigned helpers, int nice);
  ~Deflaters();
  Deflaters(const Deflaters&) = delete;
  Deflaters& operator=(const Deflaters&) = delete;

  // One fewer than the cores nb may run on, at least one where there are
  // two, at most 3: while the program runs they are nicer than the
  // collector, and after it ends every core is free to compress a burst's
  // text while the program waits to exit. None on one core.
  static unsigned helpers_for_this_machine();

  unsigned helpers() const { return helpers_; }

  // Compresses `piece` (on a helper, or here when there is none).
  void submit(const std::shared_ptr<DeflatePiece>& piece);
  // Until `piece` is done; meanwhile the caller compresses pieces still
  // waiting for a helper (the oldest first), rather than sit idle.
  void wait(DeflatePiece& piece);
  // Compresses the oldest piece waiting for a helper on the calling thread;
  // false when none waits. For a thread that waits for the writer anyway
  // (the program's, at exit): every core compresses the last burst.
  bool help_one();
  bool is_done(DeflatePiece& piece);

  // Around a fork: no helper holds the lock the child would inherit.
  void hold_for_fork();
  void release_after_fork();

 private:
  struct Stream;
  static void compress(Stream& stream, DeflatePiece& piece);
  // Takes the oldest queued piece (queue_ not empty, `lock` held on mu_),
  // compresses it with `stream` unlocked, marks it done.
  void finish_one(std::unique_lock<std::mutex>& lock, Stream& stream);
  void run(Stream& stream);
  bool start();  // with mu_ held

  const unsigned helpers_;
  const int nice_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // helpers wait for pieces
  std::condition_variable done_cv_;  // submitters wait for theirs
  std::deque<std::shared_ptr<DeflatePiece>> queue_;
  std::vector<std::thread> threads_;
  bool tried_start_ = false;
  bool stop_ = false;
  bool held_for_fork_ = false;
  std::unique_ptr<Stream> own_;  // the submitter's, when there is no helper
};

}  // namespace nb
