#include "formats/pickle_writer.h"

#include <cstring>

#include "formats/text_encoding.h"

namespace nb::formats {

namespace op {
constexpr uint8_t PROTO = 0x80, STOP = '.', NONE = 'N', NEWTRUE = 0x88, NEWFALSE = 0x89;
constexpr uint8_t BININT = 'J', BININT1 = 'K', BININT2 = 'M', LONG1 = 0x8a, BINFLOAT = 'G';
constexpr uint8_t SHORT_BINUNICODE = 0x8c, BINUNICODE = 'X';
constexpr uint8_t EMPTY_DICT = '}', EMPTY_LIST = ']', MARK = '(', SETITEMS = 'u', APPENDS = 'e';
constexpr uint8_t TUPLE2 = 0x86, MEMOIZE = 0x94, BINGET = 'h', LONG_BINGET = 'j';
}  // namespace op

PickleWriter::PickleWriter(std::ostream* sink) : sink_(sink) {
  op(op::PROTO);
  op(4);
}

std::string PickleWriter::finish() {
  op(op::STOP);
  if (sink_ != nullptr) spill();
  return std::move(out_);
}

void PickleWriter::spill() {
  sink_->write(out_.data(), static_cast<std::streamsize>(out_.size()));
  out_.clear();
}

void PickleWriter::raw_le(uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void PickleWriter::none() { op(op::NONE); }
void PickleWriter::boolean(bool v) { op(v ? op::NEWTRUE : op::NEWFALSE); }

void PickleWriter::integer(int64_t v) {
  if (v >= 0 && v < 256) { op(op::BININT1); raw_le(static_cast<uint64_t>(v), 1); return; }
  if (v >= 0 && v < 65536) { op(op::BININT2); raw_le(static_cast<uint64_t>(v), 2); return; }
  if (v >= INT32_MIN && v <= INT32_MAX) { op(op::BININT); raw_le(static_cast<uint32_t>(v), 4); return; }
  // LONG1: little-endian two's complement in the fewest bytes that keep the sign.
  uint8_t bytes[9];
  int n = 0;
  uint64_t u = static_cast<uint64_t>(v);
  for (; n < 8; ++n) bytes[n] = static_cast<uint8_t>(u >> (8 * n));
  n = 8;
  while (n > 1) {
    const bool top_zero = bytes[n - 1] == 0x00 && (bytes[n - 2] & 0x80) == 0;
    const bool top_ff = bytes[n - 1] == 0xFF && (bytes[n - 2] & 0x80) != 0;
    if (!(top_zero || top_ff)) break;
    --n;
  }
  op(op::LONG1);
  out_.push_back(static_cast<char>(n));
  out_.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(n));
}

void PickleWriter::uinteger(uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) { integer(static_cast<int64_t>(v)); return; }
  // Needs a ninth byte so the value stays positive.
  op(op::LONG1);
  out_.push_back(9);
  raw_le(v, 8);
  out_.push_back(0);
}

void PickleWriter::real(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  op(op::BINFLOAT);
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
}

void PickleWriter::string(std::string_view s) {
  std::string valid;
  valid.reserve(s.size());
  append_valid_utf8(valid, s);
  if (valid.size() < 256) {
    op(op::SHORT_BINUNICODE);
    out_.push_back(static_cast<char>(valid.size()));
  } else {
    op(op::BINUNICODE);
    raw_le(valid.size(), 4);
  }
  out_ += valid;
}

void PickleWriter::close_batch() {
  Frame& f = stack_[depth_ - 1];
  op(f.is_dict ? op::SETITEMS : op::APPENDS);
  f.pending = 0;
}

void PickleWriter::begin_dict() {
  op(op::EMPTY_DICT);
  stack_[depth_++] = Frame{true, 0};
}

void PickleWriter::begin_list() {
  op(op::EMPTY_LIST);
  stack_[depth_++] = Frame{false, 0};
}

void PickleWriter::item() {
  if (sink_ != nullptr && out_.size() >= kPiece) spill();
  Frame& f = stack_[depth_ - 1];
  if (f.pending == kBatch) close_batch();
  if (f.pending == 0) op(op::MARK);
  ++f.pending;
}

void PickleWriter::end_dict() { if (stack_[depth_ - 1].pending) close_batch(); --depth_; }
void PickleWriter::end_list() { if (stack_[depth_ - 1].pending) close_batch(); --depth_; }
void PickleWriter::tuple2() { op(op::TUPLE2); }

uint32_t PickleWriter::memoize() {
  op(op::MEMOIZE);
  return memo_count_++;
}

void PickleWriter::get(uint32_t index) {
  if (index < 256) { op(op::BINGET); out_.push_back(static_cast<char>(index)); }
  else { op(op::LONG_BINGET); raw_le(index, 4); }
}

}  // namespace nb::formats
