#include "collector/event_pack.h"

#include <cstring>
#include <limits>

namespace nb {

namespace {

// What each packed item starts with.
enum Tag : char {
  kName = 'N',     // u32 length, bytes: the next name (indexes count up from 0)
  kEvent = 'E',    // see EventPacker::event
  kFlow = 'F',     // u64 id, i64 pid, i64 tid, u64 ts, u8 start
  kCounter = 'C',  // u32 name, i64 pid, u64 ts, u8 count, count x (key, f64)
};
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
    const uint32_t n = static_cast<uint32_t>(s.size());
    out += kName;
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
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

// 'E', u32 name, u32 stack, u8 category, u16 argument count, u32 label
// length, i64 pid, i64 tid, u64 ts, u64 dur, the label, then each argument:
// its key, u8 type, and its value (8 bytes; Dim3 12; View u32 length and
// the bytes).
void EventPacker::event(std::string& out, const formats::Event& e) {
  if (names_sent_ < names_->size()) send_names(out);
  const uint16_t nargs = static_cast<uint16_t>(std::min<size_t>(e.args.size(), std::numeric_limits<uint16_t>::max()));
  size_t bound = 1 + 4 + 4 + 1 + 2 + 4 + 8 * 4 + e.label.size();
  for (uint16_t i = 0; i < nargs; ++i) {
    const formats::Arg& a = e.args[i];
    bound += key_bound(a.key) + 1 + 12 + (a.type == formats::Arg::Type::View ? a.v.size() : 0);
  }
  append_bounded(out, bound, [&](char* p) {
    *p++ = kEvent;
    p = put(p, e.name);
    p = put(p, e.stack);
    p = put(p, static_cast<uint8_t>(e.cat));
    p = put(p, nargs);
    p = put(p, static_cast<uint32_t>(e.label.size()));
    p = put(p, e.pid);
    p = put(p, e.tid);
    p = put(p, e.ts_ns);
    p = put(p, e.dur_ns);
    p = put_bytes(p, e.label.data(), e.label.size());
    for (uint16_t i = 0; i < nargs; ++i) {
      const formats::Arg& a = e.args[i];
      p = put_key(p, a.key);
      p = put(p, static_cast<uint8_t>(a.type));
      switch (a.type) {
        case formats::Arg::Type::View:
          p = put(p, static_cast<uint32_t>(a.v.size()));
          p = put_bytes(p, a.v.data(), a.v.size());
          break;
        case formats::Arg::Type::Dim3: p = put_bytes(p, a.dim, sizeof a.dim); break;
        default: p = put(p, a.u); break;
      }
    }
    return p;
  });
}

void EventPacker::flow(std::string& out, const formats::Flow& f) {
  char buf[1 + 8 * 4 + 1];
  char* p = buf;
  *p++ = kFlow;
  p = put(p, f.id);
  p = put(p, f.pid);
  p = put(p, f.tid);
  p = put(p, f.ts_ns);
  p = put(p, static_cast<uint8_t>(f.start));
  out.append(buf, static_cast<size_t>(p - buf));
}

void EventPacker::counter(std::string& out, const formats::Counter& c) {
  if (names_sent_ < names_->size()) send_names(out);
  const uint8_t n = static_cast<uint8_t>(std::min<size_t>(c.values.size(), 255));
  size_t bound = 1 + 4 + 8 + 8 + 1;
  for (uint8_t i = 0; i < n; ++i) bound += key_bound(c.values[i].first) + sizeof(double);
  append_bounded(out, bound, [&](char* p) {
    *p++ = kCounter;
    p = put(p, c.name);
    p = put(p, c.pid);
    p = put(p, c.ts_ns);
    p = put(p, n);
    for (uint8_t i = 0; i < n; ++i) p = put(put_key(p, c.values[i].first), c.values[i].second);
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
        const auto len = r.get<uint32_t>();
        names_.emplace_back(r.bytes(len));
        break;
      }
      case kEvent: {
        formats::Event& e = event_;
        e.name = r.get<uint32_t>();
        e.stack = r.get<uint32_t>();
        e.cat = static_cast<formats::Category>(r.get<uint8_t>());
        const auto nargs = r.get<uint16_t>();
        const auto label = r.get<uint32_t>();
        e.pid = r.get<int64_t>();
        e.tid = r.get<int64_t>();
        e.ts_ns = r.get<uint64_t>();
        e.dur_ns = r.get<uint64_t>();
        e.label.assign(r.bytes(label));
        e.args.clear();
        for (uint16_t i = 0; i < nargs && r.ok; ++i) {
          formats::Arg a;
          a.key = key();
          a.type = static_cast<formats::Arg::Type>(r.get<uint8_t>());
          switch (a.type) {
            case formats::Arg::Type::View: a.v = r.bytes(r.get<uint32_t>()); break;
            case formats::Arg::Type::Dim3:
              a.dim[0] = r.get<uint32_t>();
              a.dim[1] = r.get<uint32_t>();
              a.dim[2] = r.get<uint32_t>();
              break;
            case formats::Arg::Type::Int:
            case formats::Arg::Type::UInt:
            case formats::Arg::Type::Double:
            case formats::Arg::Type::Hex:
            case formats::Arg::Type::Name: a.u = r.get<uint64_t>(); break;
            default: r.ok = false; break;
          }
          e.args.push_back(a);
        }
        if (r.ok) text_.event(out, e);
        break;
      }
      case kFlow: {
        formats::Flow f;
        f.id = r.get<uint64_t>();
        f.pid = r.get<int64_t>();
        f.tid = r.get<int64_t>();
        f.ts_ns = r.get<uint64_t>();
        f.start = r.get<uint8_t>() != 0;
        if (r.ok) text_.flow(out, f);
        break;
      }
      case kCounter: {
        formats::Counter& c = counter_;
        c.name = r.get<uint32_t>();
        c.pid = r.get<int64_t>();
        c.ts_ns = r.get<uint64_t>();
        const auto count = r.get<uint8_t>();
        c.values.clear();
        inline_keys_.clear();
        for (uint8_t i = 0; i < count && r.ok; ++i) {
          const std::string_view k = key();
          // Inline keys (never nb's own: fewer than 254) are copied.
          const char* ks = inline_key ? inline_keys_.emplace_back(k).c_str() : k.data();
          c.values.emplace_back(ks, r.get<double>());
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
