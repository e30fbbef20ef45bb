// A strict reader for what formats/pickle_writer.h may emit: protocol 4, the
// opcodes MemoryViz accepts (test/tools/nbread.py) and of those only the
// ones the writer uses; anything else, a truncated argument, a MARK out of
// place, a memo index never stored, invalid UTF-8, bytes after STOP or more
// than one object left is an error. Python's loader is not usable in-process;
// this is enough to say the bytes are well-formed and what they hold.
#pragma once
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.h"

namespace nbfuzz {

struct PValue {
  enum class Kind { None, Bool, Int, Float, Str, List, Dict, Tuple };
  Kind kind = Kind::None;
  bool b = false;
  __int128 i = 0;
  uint64_t bits = 0;  // Float, compared bit for bit
  std::string s;
  std::vector<std::shared_ptr<PValue>> items;  // List, Tuple; Dict: key, value, key, value...
};
using PPtr = std::shared_ptr<PValue>;

inline PPtr make_value(PValue::Kind k) {
  auto v = std::make_shared<PValue>();
  v->kind = k;
  return v;
}

inline bool read_pickle(std::string_view in, PPtr& result, std::string& error) {
  std::vector<PPtr> stack;
  std::vector<size_t> marks;
  std::vector<PPtr> memo;
  size_t i = 0;
  const auto fail = [&](const std::string& why) {
    error = why + " at byte " + std::to_string(i);
    return false;
  };
  const auto take = [&](size_t n, std::string_view& out) {
    if (in.size() - i < n) return false;
    out = in.substr(i, n);
    i += n;
    return true;
  };
  const auto le = [](std::string_view b) {
    uint64_t v = 0;
    for (size_t k = b.size(); k-- > 0;) v = (v << 8) | static_cast<uint8_t>(b[k]);
    return v;
  };
  const auto push = [&](PPtr v) { stack.push_back(std::move(v)); };
  const auto base = [&]() -> size_t { return marks.empty() ? 0 : marks.back(); };

  std::string_view arg;
  if (!take(2, arg) || static_cast<uint8_t>(arg[0]) != 0x80 || arg[1] != 4) return fail("no PROTO 4");
  for (;;) {
    if (i >= in.size()) return fail("no STOP");
    const uint8_t op = static_cast<uint8_t>(in[i++]);
    switch (op) {
      case '.':  // STOP
        if (i != in.size()) return fail("bytes after STOP");
        if (!marks.empty()) return fail("MARK left open");
        if (stack.size() != 1) return fail(std::to_string(stack.size()) + " objects at STOP");
        result = stack.back();
        return true;
      case 'N': push(make_value(PValue::Kind::None)); break;
      case 0x88:
      case 0x89: {
        auto v = make_value(PValue::Kind::Bool);
        v->b = op == 0x88;
        push(v);
        break;
      }
      case 'K':
      case 'M':
      case 'J': {
        const size_t n = op == 'K' ? 1 : op == 'M' ? 2 : 4;
        if (!take(n, arg)) return fail("truncated integer");
        auto v = make_value(PValue::Kind::Int);
        const uint64_t u = le(arg);
        v->i = op == 'J' ? static_cast<int32_t>(static_cast<uint32_t>(u)) : static_cast<__int128>(u);
        push(v);
        break;
      }
      case 0x8a: {  // LONG1: n bytes, little-endian two's complement
        std::string_view len;
        if (!take(1, len)) return fail("truncated LONG1");
        const size_t n = static_cast<uint8_t>(len[0]);
        if (n > 16 || !take(n, arg)) return fail("LONG1 of " + std::to_string(n) + " bytes");
        unsigned __int128 u = 0;
        for (size_t k = n; k-- > 0;) u = (u << 8) | static_cast<uint8_t>(arg[k]);
        if (n > 0 && n < 16 && (static_cast<uint8_t>(arg[n - 1]) & 0x80)) u -= static_cast<unsigned __int128>(1) << (8 * n);
        auto v = make_value(PValue::Kind::Int);
        v->i = static_cast<__int128>(u);
        push(v);
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE 754
        if (!take(8, arg)) return fail("truncated BINFLOAT");
        auto v = make_value(PValue::Kind::Float);
        for (char c : arg) v->bits = (v->bits << 8) | static_cast<uint8_t>(c);
        push(v);
        break;
      }
      case 0x8c:
      case 'X': {
        std::string_view len;
        if (!take(op == 0x8c ? 1 : 4, len)) return fail("truncated string length");
        const uint64_t n = le(len);
        if (op == 'X' && n < 256) return fail("BINUNICODE for a short string");  // the writer's own rule
        if (n > in.size() || !take(static_cast<size_t>(n), arg)) return fail("truncated string");
        if (!ref_valid_utf8(arg)) return fail("string not valid UTF-8: " + shown(arg));
        auto v = make_value(PValue::Kind::Str);
        v->s = std::string(arg);
        push(v);
        break;
      }
      case '}': push(make_value(PValue::Kind::Dict)); break;
      case ']': push(make_value(PValue::Kind::List)); break;
      case '(': marks.push_back(stack.size()); break;
      case 'e':
      case 'u': {
        if (marks.empty()) return fail("APPENDS/SETITEMS without MARK");
        const size_t m = marks.back();
        marks.pop_back();
        if (m == 0) return fail("MARK at the bottom of the stack");
        PValue& target = *stack[m - 1];
        const size_t count = stack.size() - m;
        if (count == 0) return fail("empty batch");  // CPython never writes one; the writer should not either
        if (op == 'e' && target.kind != PValue::Kind::List) return fail("APPENDS to a non-list");
        if (op == 'u' && (target.kind != PValue::Kind::Dict || count % 2 != 0)) return fail("bad SETITEMS");
        target.items.insert(target.items.end(), stack.begin() + static_cast<long>(m), stack.end());
        stack.resize(m);
        break;
      }
      case 0x86: {  // TUPLE2
        if (stack.size() < base() + 2) return fail("TUPLE2 across a MARK or on a short stack");
        auto v = make_value(PValue::Kind::Tuple);
        v->items = {stack[stack.size() - 2], stack[stack.size() - 1]};
        stack.resize(stack.size() - 2);
        push(v);
        break;
      }
      case 0x94:  // MEMOIZE
        if (stack.size() <= base()) return fail("MEMOIZE with nothing to store");
        memo.push_back(stack.back());
        break;
      case 'h':
      case 'j': {
        if (!take(op == 'h' ? 1 : 4, arg)) return fail("truncated GET");
        const uint64_t idx = le(arg);
        if (op == 'j' && idx < 256) return fail("LONG_BINGET for a small index");
        if (idx >= memo.size()) return fail("GET of memo " + std::to_string(idx) + " never stored");
        push(memo[static_cast<size_t>(idx)]);
        break;
      }
      default: return fail("opcode " + std::to_string(op) + " is not one the writer may emit");
    }
  }
}

// Deep equality; shared (memoized) parts are compared once per pair.
using SeenPairs = std::set<std::pair<const PValue*, const PValue*>>;
inline bool same_value(const PPtr& a, const PPtr& b, SeenPairs& seen, std::string& where) {
  if (a == b || seen.count({a.get(), b.get()})) return true;
  if (a->kind != b->kind) { where = "kinds differ"; return false; }
  switch (a->kind) {
    case PValue::Kind::None: break;
    case PValue::Kind::Bool: if (a->b != b->b) { where = "bools differ"; return false; } break;
    case PValue::Kind::Int: if (a->i != b->i) { where = "integers differ"; return false; } break;
    case PValue::Kind::Float: if (a->bits != b->bits) { where = "floats differ"; return false; } break;
    case PValue::Kind::Str:
      if (a->s != b->s) {
        where = "strings differ: " + shown(a->s) + " vs " + shown(b->s);
        return false;
      }
      break;
    default:
      if (a->items.size() != b->items.size()) {
        where = "sizes differ: " + std::to_string(a->items.size()) + " vs " + std::to_string(b->items.size());
        return false;
      }
      for (size_t k = 0; k < a->items.size(); ++k) {
        if (!same_value(a->items[k], b->items[k], seen, where)) {
          where = "[" + std::to_string(k) + "] " + where;
          return false;
        }
      }
  }
  if (!a->items.empty()) seen.emplace(a.get(), b.get());
  return true;
}

}  // namespace nbfuzz
