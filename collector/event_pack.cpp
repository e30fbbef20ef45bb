#include "collector/event_pack.h"

#include <cstring>
#include <limits>

namespace nb {

namespace {

// What each packed item starts with.
//
// Numbers are LEB128 varints (signed ones zigzagged). Times, pids, tids
// and flow ids are sent as the difference from the previous item's: events
// come nearly in time order from few threads, so most take one to three
// bytes. The packs are most of what the collector moves (into the writer's
// queue, and into its backlog file when the writer lags), so each byte
// saved there is one the collector does not copy.
enum Tag : char {
  kName = 'N',       // length, bytes: the next name (indexes count up from 0)
  kEvent = 'E',      // see EventPacker::event
  kFlowStart = 'S',  // id, pid, tid, ts (each as a difference)
  kFlowEnd = 'F',    // the same
  kCounter = 'C',    // name, pid, ts (differences), u8 count, count x (key, value)
};
// How a counter's value is sent: a whole number as a varint, any other as
// the bytes of a double.
constexpr uint8_t kWhole = 0;
constexpr uint8_t kDouble = 1;
// An argument key is its id (ids count up from 0, in the order keys are
// first used), or kNewKey and the key (u8 length, bytes): the next id; or
// kInlineKey and the key, when the ids are spent.
constexpr uint8_t kNewKey = 0xFE;
constexpr uint8_t kInlineKey = 0xFF;
constexpr size_t kMaxKeyBytes = 255;

template <typename T>
char* put(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}
// At most 10 bytes.
char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}
uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
// The difference b - a, sent zigzagged (wraps, as the reader's sum does).
char* put_delta(char* p, uint64_t a, uint64_t b) { return put_varint(p, zigzag(static_cast<int64_t>(b - a))); }
constexpr size_t kVarint = 10;

// A double that is a whole number in [0, 2^53) goes as a varint.
bool whole(double d) { return d >= 0 && d < 9007199254740992.0 && static_cast<double>(static_cast<uint64_t>(d)) == d; }

char* put_bytes(char* p, const void* s, size_t n) {
  if (n != 0) std::memcpy(p, s, n);  // (s may be null when n is 0: an empty view)
  return p + n;
}

// Reads what put wrote, refusing to run past the end.
struct Reader {
  const char* p;
  const char* end;
  bool ok = true;
  template <typename T>
  T get() {
    T v{};
    if (static_cast<size_t>(end - p) < sizeof v) {
      ok = false;
      p = end;
      return v;
    }
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) break;
      const auto b = static_cast<uint8_t>(*p++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    p = end;
    return 0;
  }
  // The value a put_delta from `last` carried; becomes the new `last`.
  uint64_t delta(uint64_t& last) { return last += static_cast<uint64_t>(unzigzag(varint())); }
  int64_t delta(int64_t& last) {
    return last = static_cast<int64_t>(static_cast<uint64_t>(last) + static_cast<uint64_t>(unzigzag(varint())));
  }
  std::string_view bytes(size_t n) {
    if (static_cast<size_t>(end - p) < n) {
      ok = false;
      p = end;
      return {};
    }
    std::string_view s(p, n);
    p += n;
    return s;
  }
};

}  // namespace

void EventPacker::send_names(std::string& out) {
  // Names are appended only: send the new ones.
  for (; names_sent_ < names_->size(); ++names_sent_) {
    const std::string& s = (*names_)[names_sent_];
    char buf[1 + kVarint];
    buf[0] = kName;
    out.append(buf, static_cast<size_t>(put_varint(buf + 1, s.size()) - buf));
    out.append(s);
  }
}

char* EventPacker::put_key(char* p, std::string_view key) {
  // The key's id, or the key itself the first time (see kNewKey). Writes at
  // most key_bound(key) bytes.
  if (key.size() > kMaxKeyBytes) {
    *p++ = static_cast<char>(kInlineKey);
    *p++ = static_cast<char>(0);  // cut to nothing rather than mislead; never for nb's keys
    return p;
  }
  const auto hash = static_cast<size_t>((reinterpret_cast<uintptr_t>(key.data()) >> 3) * 0x9E3779B97F4A7C15ull >> 55);
  for (size_t i = 0; i < kKeySlots; ++i) {
    KeySlot& s = keys_[(hash + i) % kKeySlots];
    if (s.data == key.data() && s.size == key.size()) {
      *p++ = static_cast<char>(s.id);
      return p;
    }
    if (s.data == nullptr) {
      if (keys_sent_ >= kNewKey) break;  // ids spent: inline from now on
      s.data = key.data();
      s.size = static_cast<uint32_t>(key.size());
      s.id = static_cast<uint8_t>(keys_sent_++);
      *p++ = static_cast<char>(kNewKey);
      *p++ = static_cast<char>(key.size());
      return put_bytes(p, key.data(), key.size());
    }
  }
  *p++ = static_cast<char>(kInlineKey);
  *p++ = static_cast<char>(key.size());
  return put_bytes(p, key.data(), key.size());
}

namespace {

// The most bytes put_key writes for `key`.
size_t key_bound(std::string_view key) { return 2 + std::min(key.size(), kMaxKeyBytes); }

// Appends what `write` puts at the pointer it is given (at most `bound`
// bytes; it returns the end): one size check per event instead of one per
// field, through a stack buffer when the bound fits one.
template <typename Write>
void append_bounded(std::string& out, size_t bound, Write write) {
  char buf[1024];
  if (bound <= sizeof buf) {
    out.append(buf, static_cast<size_t>(write(buf) - buf));
    return;
  }
  const size_t start = out.size();
  out.resize(start + bound);
  const char* end = write(&out[start]);
  out.resize(static_cast<size_t>(end - out.data()));
}

}  // namespace

// 'E', name, stack, u8 category, argument count, label length, pid, tid,
// ts (the last three as differences), dur, the label, then each argument:
// its key, u8 type, and its value (Int zigzagged; UInt, Hex and Name as
// varints; Double 8 bytes; Dim3 three varints; View length and bytes).
void EventPacker::event(std::string& out, const formats::Event& e) {
  if (names_sent_ < names_->size()) send_names(out);
  const uint16_t nargs = static_cast<uint16_t>(std::min<size_t>(e.args.size(), std::numeric_limits<uint16_t>::max()));
  size_t bound = 1 + 1 + 7 * kVarint + e.label.size();
  for (uint16_t i = 0; i < nargs; ++i) {
    const formats::Arg& a = e.args[i];
    bound += key_bound(a.key) + 1 + 3 * kVarint + (a.type == formats::Arg::Type::View ? a.v.size() : 0);
  }
  append_bounded(out, bound, [&](char* p) {
    *p++ = kEvent;
    p = put_varint(p, e.name);
    p = put_varint(p, e.stack);
    p = put(p, static_cast<uint8_t>(e.cat));
    p = put_varint(p, nargs);
    p = put_varint(p, e.label.size());
    p = put_where(p, e.pid, e.tid, e.ts_ns);
    p = put_varint(p, e.dur_ns);
    p = put_bytes(p, e.label.data(), e.label.size());
    for (uint16_t i = 0; i < nargs; ++i) {
      const formats::Arg& a = e.args[i];
      p = put_key(p, a.key);
      p = put(p, static_cast<uint8_t>(a.type));
      switch (a.type) {
        case formats::Arg::Type::View:
          p = put_varint(p, a.v.size());
          p = put_bytes(p, a.v.data(), a.v.size());
          break;
        case formats::Arg::Type::Dim3:
          for (uint32_t d : a.dim) p = put_varint(p, d);
          break;
        case formats::Arg::Type::Int: p = put_varint(p, zigzag(a.i)); break;
        case formats::Arg::Type::Double: p = put(p, a.d); break;
        default: p = put_varint(p, a.u); break;
      }
    }
    return p;
  });
}

char* EventPacker::put_where(char* p, int64_t pid, int64_t tid, uint64_t ts) {
  p = put_delta(p, static_cast<uint64_t>(pid_), static_cast<uint64_t>(pid));
  p = put_delta(p, static_cast<uint64_t>(tid_), static_cast<uint64_t>(tid));
  p = put_delta(p, ts_, ts);
  pid_ = pid;
  tid_ = tid;
  ts_ = ts;
  return p;
}

void EventPacker::flow(std::string& out, const formats::Flow& f) {
  char buf[1 + 4 * kVarint];
  char* p = buf;
  *p++ = f.start ? kFlowStart : kFlowEnd;
  p = put_delta(p, flow_id_, f.id);
  flow_id_ = f.id;
  p = put_where(p, f.pid, f.tid, f.ts_ns);
  out.append(buf, static_cast<size_t>(p - buf));
}

void EventPacker::counter(std::string& out, const formats::Counter& c) {
  if (names_sent_ < names_->size()) send_names(out);
  const uint8_t n = static_cast<uint8_t>(std::min<size_t>(c.values.size(), 255));
  size_t bound = 1 + 3 * kVarint + 1;
  for (uint8_t i = 0; i < n; ++i) bound += key_bound(c.values[i].first) + 1 + kVarint;
  append_bounded(out, bound, [&](char* p) {
    *p++ = kCounter;
    p = put_varint(p, c.name);
    p = put_delta(p, static_cast<uint64_t>(pid_), static_cast<uint64_t>(c.pid));
    p = put_delta(p, ts_, c.ts_ns);
    pid_ = c.pid;
    ts_ = c.ts_ns;
    p = put(p, n);
    for (uint8_t i = 0; i < n; ++i) {
      p = put_key(p, c.values[i].first);
      const double v = c.values[i].second;
      if (whole(v)) {
        *p++ = static_cast<char>(kWhole);
        p = put_varint(p, static_cast<uint64_t>(v));
      } else {
        *p++ = static_cast<char>(kDouble);
        p = put(p, v);
      }
    }
    return p;
  });
}

bool EventUnpacker::unpack(const char* data, size_t n, std::string& out) {
  Reader r{data, data + n};
  // A key as put_key wrote it. Known keys are NUL-terminated (counters
  // need C strings); an inline one is not (`inline_key` says so).
  bool inline_key = false;
  const auto key = [&]() -> std::string_view {
    inline_key = false;
    const auto id = r.get<uint8_t>();
    if (!r.ok) return {};
    if (id == kNewKey) {
      const auto len = r.get<uint8_t>();
      keys_.emplace_back(r.bytes(len));
      return keys_.back();
    }
    if (id == kInlineKey) {
      inline_key = true;
      const auto len = r.get<uint8_t>();
      return r.bytes(len);
    }
    if (id >= keys_.size()) {
      r.ok = false;
      return {};
    }
    return keys_[id];
  };
  while (r.ok && r.p < r.end) {
    const char tag = *r.p++;
    switch (tag) {
      case kName: {
        const auto len = r.varint();
        names_.emplace_back(r.bytes(len));
        break;
      }
      case kEvent: {
        formats::Event& e = event_;
        e.name = static_cast<uint32_t>(r.varint());
        e.stack = static_cast<uint32_t>(r.varint());
        e.cat = static_cast<formats::Category>(r.get<uint8_t>());
        const auto nargs = r.varint();
        const auto label = r.varint();
        e.pid = r.delta(pid_);
        e.tid = r.delta(tid_);
        e.ts_ns = r.delta(ts_);
        e.dur_ns = r.varint();
        e.label.assign(r.bytes(label));
        e.args.clear();
        for (uint64_t i = 0; i < nargs && r.ok; ++i) {
          formats::Arg a;
          a.key = key();
          a.type = static_cast<formats::Arg::Type>(r.get<uint8_t>());
          switch (a.type) {
            case formats::Arg::Type::View: a.v = r.bytes(r.varint()); break;
            case formats::Arg::Type::Dim3:
              for (uint32_t& d : a.dim) d = static_cast<uint32_t>(r.varint());
              break;
            case formats::Arg::Type::Int: a.i = unzigzag(r.varint()); break;
            case formats::Arg::Type::Double: a.d = r.get<double>(); break;
            case formats::Arg::Type::UInt:
            case formats::Arg::Type::Hex:
            case formats::Arg::Type::Name: a.u = r.varint(); break;
            default: r.ok = false; break;
          }
          e.args.push_back(a);
        }
        if (r.ok) text_.event(out, e);
        break;
      }
      case kFlowStart:
      case kFlowEnd: {
        formats::Flow f;
        f.id = r.delta(flow_id_);
        f.pid = r.delta(pid_);
        f.tid = r.delta(tid_);
        f.ts_ns = r.delta(ts_);
        f.start = tag == kFlowStart;
        if (r.ok) text_.flow(out, f);
        break;
      }
      case kCounter: {
        formats::Counter& c = counter_;
        c.name = static_cast<uint32_t>(r.varint());
        c.pid = r.delta(pid_);
        c.ts_ns = r.delta(ts_);
        const auto count = r.get<uint8_t>();
        c.values.clear();
        inline_keys_.clear();
        for (uint8_t i = 0; i < count && r.ok; ++i) {
          const std::string_view k = key();
          // Inline keys (never nb's own: fewer than 254) are copied.
          const char* ks = inline_key ? inline_keys_.emplace_back(k).c_str() : k.data();
          const auto how = r.get<uint8_t>();
          double v = 0;
          if (how == kWhole) {
            v = static_cast<double>(r.varint());
          } else if (how == kDouble) {
            v = r.get<double>();
          } else {
            r.ok = false;
          }
          c.values.emplace_back(ks, v);
        }
        if (r.ok) text_.counter(out, c);
        break;
      }
      default: r.ok = false; break;
    }
  }
  return r.ok;
}

}  // namespace nb
