// Python frames of a thread that released the GIL (every PyTorch op,
// ctypes.CDLL, Py_BEGIN_ALLOW_THREADS), read in place.
//
// A thread that released the GIL is inside C code: until it takes the GIL
// back its own frames cannot change, and each frame holds a strong reference
// to its code object, so the chain can be read where it lies. What the C API
// would work out (names, lines) is worked out here from the objects' fields,
// with the layout of the running version (python_frames_layouts.h). Nothing
// of the interpreter's is ever written, no reference count touched, no
// interpreter function called but a few that only read a flag or a
// thread-local. Every pointer is checked to be plausible (and of the expected
// type, for objects) before it is followed, and the walk is bounded.
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "shim/python_frames.h"
#include "shim/python_frames_layouts.h"
#include "shim/python_frames_lines.h"
#include "shim/python_frames_shared.h"

namespace nb::shim::python {
namespace {

constexpr int64_t kMaxName = 1 << 16;       // longer names are not copied ("<?>")
constexpr int64_t kMaxLineTable = 1 << 20;  // a longer line table is not copied (line 0)

// What tells a code object from another that later took its address. On
// 3.12 (where Layout::co_version is set), its version, read with the rest
// of the key from the first 128 bytes of the code object: 3.12 draws it,
// when a code object is made, from one counter for the whole process,
// never reset (not by a new Py_Initialize either), stopping at 0 rather
// than wrapping; so a code object that takes a freed one's address has
// another version. (Sub-interpreters with their own GIL increment it
// without a lock: two could in principle get one version; the pointers,
// size and first line left in the key would tell most such pairs apart.)
// Otherwise, or once the counter ran out (version 0): the objects it points
// to, and what cheaply tells their contents apart (a string's length, last
// bytes and hash, once computed; the line table's size and first bytes),
// since those may have been freed and reallocated in the same places too:
// three more objects read per frame. With the version, each code object
// made is a new entry (as on the path with the GIL), also one compiled
// again with the same contents at the same address; the table stops
// naming new ones at kMaxCodes. Were a version ever changed in place, the
// code object would only be seen anew, under the same names.
struct CodeKey {
  const void* code;
  uint32_t version;     // co_version (3.12; Layout::co_version); 0: none, the rest of the key decides
  int32_t firstlineno;
  const void* filename;
  const void* name;
  uint64_t extra;       // co_code (3.9, 3.10) / the bytecode's size in code units (3.11+)
  const void* lines;    // null when the version decides
  uint64_t file_tail;   // the last (up to) 8 bytes of a compact ASCII string
  uint64_t name_tail;
  uint64_t name_hash;   // -1 until computed
  uint64_t lines_head;  // the first (up to) 8 bytes
  uint32_t file_length;
  uint32_t name_length;
  uint32_t lines_size;

  bool operator==(const CodeKey& o) const {
    return code == o.code && version == o.version && firstlineno == o.firstlineno && filename == o.filename &&
           name == o.name && extra == o.extra && lines == o.lines && file_tail == o.file_tail &&
           name_tail == o.name_tail && name_hash == o.name_hash && lines_head == o.lines_head &&
           file_length == o.file_length && name_length == o.name_length && lines_size == o.lines_size;
  }
};

struct CodeKeyHash {
  size_t operator()(const CodeKey& k) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(k.code) ^ k.version ^ k.name_tail ^ k.file_tail) *
                                   0x9E3779B97F4A7C15ull >> 16);
  }
};

// Up to 8 bytes from `p`, `n` bytes readable there, as one number, with
// loads of fixed size only (no byte past the n-th is read).
inline uint64_t load_upto8(const char* p, int64_t n) {
  uint32_t lo = 0, hi = 0;
  if (n >= 8) {
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
  } else if (n >= 4) {
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
  } else if (n > 0) {
    lo = static_cast<unsigned char>(p[0]) | static_cast<unsigned char>(p[n / 2]) << 8 |
         static_cast<unsigned>(static_cast<unsigned char>(p[n - 1])) << 16;
  }
  return static_cast<uint64_t>(hi) << 32 | lo;
}

// A str's length and last bytes (compact ASCII only; 0 otherwise). False if
// `s` is not a str.
[[gnu::always_inline]] inline bool str_marks(const Layout& l, const PyApi& a, const void* s, uint32_t& length,
                                             uint64_t& tail) {
  length = 0;
  tail = 0;
  if (s == nullptr || field<const void*>(s, kObType) != a.unicode_type) return false;
  const auto n = field<int64_t>(s, kStrLength);
  length = static_cast<uint32_t>(n);
  if ((field<uint32_t>(s, kStrState) & (kStrCompact | kStrAscii)) == (kStrCompact | kStrAscii) && n > 0 &&
      n <= kMaxName) {
    const int64_t k = n < 8 ? n : 8;
    tail = load_upto8(static_cast<const char*>(s) + l.str_ascii_data + n - k, k);
  }
  return true;
}

// `code` is a code object (checked). The objects it points to are alive as
// long as it is.
template <const Layout& l>
[[gnu::always_inline]] inline CodeKey key_of(const PyApi& a, const void* code) {
  CodeKey k;
  k.code = code;
  k.filename = field<const void*>(code, l.co_filename);
  k.name = field<const void*>(code, l.co_name);
  k.extra = l.co_code >= 0 ? field<uint64_t>(code, l.co_code) : field<uint64_t>(code, kObSize);
  k.firstlineno = field<int32_t>(code, l.co_firstlineno);
  k.version = 0;
  if constexpr (l.co_version >= 0) {
    if ((k.version = field<uint32_t>(code, l.co_version)) != 0) {
      k.lines = nullptr;
      k.file_tail = k.name_tail = k.name_hash = k.lines_head = 0;
      k.file_length = k.name_length = k.lines_size = 0;
      return k;
    }
  }
  k.lines = field<const void*>(code, l.co_lines);
  str_marks(l, a, k.filename, k.file_length, k.file_tail);
  // The file name's hash is left out: computed late, it would make a known
  // code object look new once (the name's is computed when it is interned).
  k.name_hash = str_marks(l, a, k.name, k.name_length, k.name_tail) ? field<uint64_t>(k.name, kStrHash) : 0;
  k.lines_head = 0;
  k.lines_size = 0;
  if (k.lines != nullptr && field<const void*>(k.lines, kObType) == a.bytes_type) {
    const auto size = field<int64_t>(k.lines, kObSize);
    k.lines_size = static_cast<uint32_t>(size);
    k.lines_head = load_upto8(static_cast<const char*>(k.lines) + kBytesData, size < 8 ? size : 8);
  }
  return k;
}

// What a code object seen without the GIL is, copied out at first sight:
// shared by all threads, never changed nor freed once made.
struct CodeInfo {
  uint32_t id;           // kUnknownPythonCode: no id (the table is full)
  int32_t firstlineno;
  uint32_t code_bytes;   // the bytecode's size; 0: not known
  uint32_t table_size;
  LineTable kind;
  const unsigned char* table() const { return reinterpret_cast<const unsigned char*>(this + 1); }
};

const CodeInfo kNoInfo{kUnknownPythonCode, 0, 0, 0, LineTable::kLnotab};

// The line of the instruction at byte offset `addr` in `c` (-1: none), by
// its table's format; past the bytecode's end, none.
int line_at(const CodeInfo& c, int addr) {
  if (c.code_bytes != 0 && addr >= static_cast<int64_t>(c.code_bytes)) return -1;
  switch (c.kind) {
    case LineTable::kLnotab: return lnotab_line(c.table(), c.table_size, c.firstlineno, addr);
    case LineTable::kPep626: return pep626_line(c.table(), c.table_size, c.firstlineno, addr);
    case LineTable::kLocations: return location_line(c.table(), c.table_size, c.firstlineno, addr);
  }
  return -1;
}

// A copy of a str's characters: compact ASCII, or compact with its UTF-8
// form already made; anything else "<?>".
std::string read_str(const Layout& l, const PyApi& a, const void* s) {
  if (!is_a(s, a.unicode_type)) return "<?>";
  const uint32_t state = field<uint32_t>(s, kStrState);
  if ((state & kStrCompact) == 0) return "<?>";
  const char* data;
  int64_t length;
  if ((state & kStrAscii) != 0) {
    data = static_cast<const char*>(s) + l.str_ascii_data;
    length = field<int64_t>(s, kStrLength);
  } else {
    data = field<const char*>(s, l.str_utf8);
    length = field<int64_t>(s, l.str_utf8_length);
  }
  if (data == nullptr || length < 0 || length > kMaxName) return "<?>";
  return std::string(data, static_cast<size_t>(length));
}

// Code objects seen without the GIL, all threads': CodeKey → CodeInfo. Taken
// only on a miss of the thread's own cache. Never destroyed (the collector may
// run from an exit handler); forgotten when the interpreter was finalized.
std::mutex g_released_mutex;
std::atomic<uint32_t> g_released_epoch{1};  // + 1 each time the interpreter is seen finalized
std::atomic<bool> g_released_used{false};
uint32_t g_released_table_epoch = 0;         // under g_released_mutex

std::unordered_map<CodeKey, const CodeInfo*, CodeKeyHash>& released_codes() {
  static auto* m = new std::unordered_map<CodeKey, const CodeInfo*, CodeKeyHash>();
  return *m;
}

// First sight of a code object on this path (the calling thread's frame
// keeps it alive meanwhile): its names and line table are copied out.
const CodeInfo* released_first_sight(const Layout& l, const PyApi& a, const CodeKey& k) {
  try {
    std::lock_guard<std::mutex> lock(g_released_mutex);
    auto& codes = released_codes();
    const uint32_t epoch = g_released_epoch.load(std::memory_order_relaxed);
    if (g_released_table_epoch != epoch) {
      codes.clear();
      g_released_table_epoch = epoch;
    }
    if (auto it = codes.find(k); it != codes.end()) return it->second;
    if (codes.size() >= kMaxCodes) return &kNoInfo;
    const unsigned char* table = nullptr;
    int64_t table_size = 0;
    const void* lines = field<const void*>(k.code, l.co_lines);  // the key may not hold it
    if (is_a(lines, a.bytes_type)) {
      table_size = field<int64_t>(lines, kObSize);
      table = static_cast<const unsigned char*>(lines) + kBytesData;
      if (table_size < 0 || table_size > kMaxLineTable) table_size = 0;
    }
    int64_t code_bytes = 0;
    if (l.co_code >= 0) {
      const void* bytecode = reinterpret_cast<const void*>(k.extra);
      if (is_a(bytecode, a.bytes_type)) code_bytes = field<int64_t>(bytecode, kObSize);
    } else {
      code_bytes = static_cast<int64_t>(k.extra) * 2;  // code units of 2 bytes
    }
    auto* info = static_cast<CodeInfo*>(std::malloc(sizeof(CodeInfo) + static_cast<size_t>(table_size)));
    if (info == nullptr) return &kNoInfo;
    info->firstlineno = static_cast<int32_t>(k.firstlineno);
    info->code_bytes = code_bytes > 0 && code_bytes < INT32_MAX ? static_cast<uint32_t>(code_bytes) : 0;
    info->table_size = static_cast<uint32_t>(table_size);
    info->kind = l.lines;
    if (table_size > 0) std::memcpy(info + 1, table, static_cast<size_t>(table_size));
    info->id = add_names(read_str(l, a, k.filename), read_str(l, a, k.name));
    codes.emplace(k, info);
    g_released_used.store(true, std::memory_order_relaxed);
    return info;
  } catch (...) {
    return &kNoInfo;
  }
}

// Each thread's own cache in front of the shared table: code objects (4-way
// sets) and (code, instruction) → line (direct-mapped). Made on the thread's
// first capture without the GIL, freed when it ends.
constexpr size_t kCodeSets = 64;
constexpr size_t kCodeWays = 4;
constexpr size_t kLineSlots = 1024;
constexpr size_t kMaxSeen = 256;  // NB_STACK_DEPTH's largest

struct ThreadCache {
  uint32_t epoch;
  uint32_t victim;
  struct CodeSlot {
    CodeKey key;
    const CodeInfo* info;
  } codes[kCodeSets * kCodeWays];
  struct LineSlot {
    const CodeInfo* info;
    int32_t addr;
    uint32_t line;
  } lines[kLineSlots];
  // 3.12: the frames of the thread's last stack, in walk order. The next
  // stack shares most outer frames, at the same addresses, suspended at the
  // same instruction: such a frame's code and line are read from here, in
  // order, instead of from the sets above (several lines each).
  struct SeenFrame {
    const void* frame;
    const void* code;
    uint32_t version;  // never 0 here: the version tells the code object
    int32_t addr;
    const CodeInfo* info;
    uint32_t line;
  } seen[2][kMaxSeen];
  uint32_t seen_n;
  uint32_t seen_last;  // which of seen[] holds the last stack
};

__thread ThreadCache* t_cache __attribute__((tls_model("initial-exec")));
pthread_key_t g_cache_key;
bool g_cache_key_made = false;
std::once_flag g_cache_key_once;

void free_thread_cache(void* cache) {
  std::free(cache);
  t_cache = nullptr;
}

ThreadCache* thread_cache() {
  if (__builtin_expect(t_cache != nullptr, 1)) return t_cache;
  std::call_once(g_cache_key_once, [] { g_cache_key_made = pthread_key_create(&g_cache_key, free_thread_cache) == 0; });
  auto* cache = static_cast<ThreadCache*>(std::calloc(1, sizeof(ThreadCache)));
  if (cache == nullptr) return nullptr;
  if (g_cache_key_made) pthread_setspecific(g_cache_key, cache);
  t_cache = cache;
  return cache;
}

// The last stack's frames and their code objects are fetched into the
// cache at once, before the walk: the walk itself follows a chain (each
// frame's address is read from the one before it), so frames evicted by
// the program's own work since would otherwise cost a miss each, one after
// another (docs/performance.md, "A stack with cold caches"). A prefetch
// never faults, so a frame since gone costs nothing but the prefetch.
template <const Layout& l>
[[gnu::always_inline]] inline void prefetch_last_stack(const ThreadCache& tc) {
  const ThreadCache::SeenFrame* last = tc.seen[tc.seen_last];
  for (uint32_t i = 0; i < tc.seen_n; ++i) {
    const char* f = static_cast<const char*>(last[i].frame);
    const char* code = static_cast<const char*>(last[i].code);
    __builtin_prefetch(f);
    __builtin_prefetch(f + l.f_owner);
    __builtin_prefetch(code + l.co_version);  // all a frame seen before reads of its code object
  }
}

// Where the frame at `f` (the walk's next, in the current stack) stands
// against the last stack's frame at the same address: the same code
// object (by address; the caller compares versions) at the same
// instruction, at another, or not the same. Moves `k` to the last stack's
// frame at `f` or past it: frames lie at falling addresses, outward.
enum class Place { kNew, kSameCode, kSameInstruction };
[[gnu::always_inline]] inline Place place_in_last(const ThreadCache& tc, const ThreadCache::SeenFrame* last,
                                                  size_t& k, const void* f, const void* code, int addr) {
  while (k < tc.seen_n && last[k].frame > f) ++k;
  // Not a frame whose instruction is out of the bytecode (addr -1: that
  // of a frame just pushed, too), nor one whose code object got no id (a
  // first sight may succeed now).
  if (k >= tc.seen_n || last[k].frame != f || last[k].code != code || addr < 0 ||
      last[k].info->id == kUnknownPythonCode) {
    return Place::kNew;
  }
  return last[k].addr == addr ? Place::kSameInstruction : Place::kSameCode;
}

template <const Layout& l>
[[gnu::always_inline]] inline const CodeInfo& code_info(const PyApi& a, ThreadCache& tc,
                                                        const void* code) {
  const CodeKey k = key_of<l>(a, code);
  ThreadCache::CodeSlot* set =
      &tc.codes[(reinterpret_cast<uintptr_t>(code) * 0x9E3779B97F4A7C15ull >> 58) % kCodeSets * kCodeWays];
  for (size_t w = 0; w < kCodeWays; ++w) {
    if (set[w].info != nullptr && set[w].key == k) return *set[w].info;
  }
  const CodeInfo* info = released_first_sight(l, a, k);
  set[tc.victim++ % kCodeWays] = ThreadCache::CodeSlot{k, info};
  return *info;
}

inline uint32_t released_line(ThreadCache& tc, const CodeInfo& c, int addr) {
  const uint64_t h = (reinterpret_cast<uintptr_t>(&c) ^ (static_cast<uint64_t>(static_cast<uint32_t>(addr)) << 20)) *
                     0x9E3779B97F4A7C15ull;
  ThreadCache::LineSlot& slot = tc.lines[h >> 54];
  static_assert(kLineSlots == 1024, "h >> 54 is 10 bits");
  if (slot.info == &c && slot.addr == addr) return slot.line;
  const int line = line_at(c, addr);
  slot = ThreadCache::LineSlot{&c, addr, line > 0 ? static_cast<uint32_t>(line) : 0};
  return slot.line;
}

// The calling thread's frames, from its thread state `ts`, which it does not
// hold the GIL with; one copy per version, its offsets constants.
template <const Layout& l>
size_t walk_released(const PyApi& a, ThreadCache& tc, const void* ts, uint64_t* out, size_t max) {
  const uint32_t epoch = g_released_epoch.load(std::memory_order_relaxed);
  if (__builtin_expect(tc.epoch != epoch, 0)) {
    std::memset(tc.codes, 0, sizeof tc.codes);
    std::memset(tc.lines, 0, sizeof tc.lines);
    tc.seen_n = 0;
    tc.epoch = epoch;
  }
  const ThreadCache::SeenFrame* last = tc.seen[tc.seen_last];
  ThreadCache::SeenFrame* next = tc.seen[tc.seen_last ^ 1];
  size_t k = 0, next_n = 0;
  if constexpr (l.co_version >= 0) prefetch_last_stack<l>(tc);
  const void* f = field<const void*>(ts, l.ts_frame);
  if constexpr (l.cframe_top >= 0) f = plausible(f) ? field<const void*>(f, l.cframe_top) : nullptr;
  size_t n = 0;
  // A bound on the steps, skipped frames included, also stops a cycle.
  for (size_t steps = 4 * max + 64; f != nullptr && n < max && steps != 0; --steps) {
    // Finalization frees other threads' states (and, from 3.11, their frames):
    // stop as soon as it begins.
    if (!plausible(f) || finalizing(a)) return 0;
    const void* code = field<const void*>(f, l.f_code);
    const void* back = field<const void*>(f, l.f_back);
    int addr;               // byte offset of the instruction, -1: not started
    uint32_t version = 0;   // the code object's (l.co_version)
    Place seen = Place::kNew;  // against the last stack's frames (3.12)
    if constexpr (l.frames == FrameKind::kObject) {
      if (field<const void*>(f, kObType) != a.frame_type || !is_a(code, a.code_type)) break;
      const int lasti = field<int32_t>(f, l.f_instr);
      addr = l.lines == LineTable::kPep626 && lasti >= 0 ? lasti * 2 : lasti;  // 3.10 counts code units
    } else {
      const auto owner = field<signed char>(f, l.f_owner);
      if (owner == kOwnedByCStack && l.minor >= 12) {
        f = back;
        continue;
      }
      if (owner < 0 || owner > kOwnedByCStack || !plausible(code)) break;
      const char* bytecode = static_cast<const char*>(code) + l.co_code_adaptive;
      const char* instr = field<const char*>(f, l.f_instr);
      const ptrdiff_t d = instr - bytecode;
      addr = d >= 0 && d < INT32_MAX ? static_cast<int>(d) : -1;
      // A frame where the last stack had one, with the same code object:
      // that code object was checked then, so of it only the line with its
      // version is read (it tells the object from one made since at a
      // freed one's address), and its names and line table are the ones
      // found then. At the same instruction, too, the frame was complete
      // then, so is now: no first-traceable check, nor line to look up.
      if constexpr (l.co_version >= 0) seen = place_in_last(tc, last, k, f, code, addr);
      if (seen != Place::kNew) {
        version = field<uint32_t>(code, l.co_version);
        if (version == 0 || version != last[k].version) seen = Place::kNew;
      }
      if (seen == Place::kNew) {
        if (!is_a(code, a.code_type)) break;
        if constexpr (l.co_version >= 0) version = field<uint32_t>(code, l.co_version);
      }
      // _PyFrame_IsIncomplete: a frame still being set up is not shown.
      if (seen != Place::kSameInstruction && owner != kOwnedByGenerator &&
          instr < bytecode + 2 * int64_t{field<int32_t>(code, l.co_firsttraceable)}) {
        f = back;
        continue;
      }
    }
    const CodeInfo* info = nullptr;
    uint32_t line = 0;
    if constexpr (l.co_version >= 0) {
      if (seen == Place::kSameInstruction) {
        info = last[k].info;
        line = last[k].line;
      } else if (seen == Place::kSameCode) {
        info = last[k].info;  // the same code object: its names and line table
        line = released_line(tc, *info, addr);
      }
      if (info == nullptr) {
        info = &code_info<l>(a, tc, code);
        line = released_line(tc, *info, addr);
      }
      if (version != 0 && next_n < kMaxSeen) next[next_n++] = ThreadCache::SeenFrame{f, code, version, addr, info, line};
    } else {
      info = &code_info<l>(a, tc, code);
      line = released_line(tc, *info, addr);
    }
    if (info->id == kUnknownPythonCode) unknown();
    out[n++] = kPythonFrameBit | (static_cast<uint64_t>(info->id) << 32) | line;
    f = back;
  }
  if constexpr (l.co_version >= 0) {
    tc.seen_last ^= 1;
    tc.seen_n = static_cast<uint32_t>(next_n);
  }
  return n;
}

}  // namespace

size_t capture_released(const PyApi& a, const void* ts, const void* cur, uint64_t* out, size_t max) {
  const Layout* l = a.layout;
  if (l == nullptr || !plausible(ts)) return 0;
  if (l->minor >= 12) {
    // `cur` is this thread's: another thread state of its own (a
    // sub-interpreter's) runs here.
    if (cur != nullptr) return 0;
  } else if (cur != nullptr && a.gil_check()) {
    // `cur` is whichever thread holds the GIL, and PyGILState_Check answers 1
    // although `ts` is not it: a sub-interpreter was created, and the holder
    // may be this thread, in it.
    return 0;
  }
  if (field<const void*>(ts, l->ts_interp) != main_interpreter(a)) return 0;
  ThreadCache* tc = thread_cache();
  if (tc == nullptr) return 0;
  switch (l->minor) {
    case 9: return walk_released<k39>(a, *tc, ts, out, max);
    case 10: return walk_released<k310>(a, *tc, ts, out, max);
    case 11: return walk_released<k311>(a, *tc, ts, out, max);
    case 12: return walk_released<k312>(a, *tc, ts, out, max);
    case 13: return walk_released<k313>(a, *tc, ts, out, max);
  }
  return 0;
}

void forget_released_codes() {
  // Every thread's cache notices the new epoch on its next walk, the shared
  // table on its next first sight.
  if (g_released_used.load(std::memory_order_relaxed) && g_released_used.exchange(false)) {
    g_released_epoch.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace nb::shim::python
