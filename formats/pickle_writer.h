// A minimal pickler for the memory snapshot. MemoryViz (pytorch.org/memory_viz)
// has its own JavaScript unpickler that accepts protocol 2-4 and only a short
// list of opcodes (test/tools/nbread.py lists them); this writer emits nothing else,
// so a file that Python's pickle loads is also one the viewer reads.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace nb::formats {

class PickleWriter {
 public:
  // Writes PROTO 4. With a sink, the bytes go there a piece at a time (a
  // million entries need not be held twice, as objects and as bytes).
  explicit PickleWriter(std::ostream* sink = nullptr);
  std::string finish();      // writes STOP and hands the bytes over (with a sink: writes the rest there)

  void none();
  void boolean(bool v);
  void integer(int64_t v);   // BININT1 / BININT2 / BININT / LONG1
  void uinteger(uint64_t v);
  void real(double v);       // BINFLOAT
  void string(std::string_view s);  // valid UTF-8 enforced (U+FFFD)

  // Containers: open, then for each element call item() and write it (for a
  // dict: the key, then the value), then close. Elements are grouped under
  // one MARK in batches of at most kBatch, as CPython's pickler does.
  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  void item();
  // A 2-tuple: write the two elements, then tuple2().
  void tuple2();

  // Memo: `memoize()` stores the object just written and returns its index;
  // `get(i)` pushes it again. Only MEMOIZE is used (never BINPUT), so indices
  // are the count of MEMOIZEs so far, as the protocol defines.
  uint32_t memoize();
  void get(uint32_t index);

  size_t size() const { return out_.size(); }

 private:
  static constexpr int kBatch = 1000;
  struct Frame { bool is_dict; int pending; };
  void op(uint8_t code) { out_.push_back(static_cast<char>(code)); }
  void raw_le(uint64_t v, int bytes);
  void close_batch();
  void spill();  // what is made so far, to the sink

  static constexpr size_t kPiece = size_t(1) << 20;
  std::string out_;
  std::ostream* sink_;
  Frame stack_[64];
  int depth_ = 0;
  uint32_t memo_count_ = 0;
};

}  // namespace nb::formats
