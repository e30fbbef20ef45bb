// Python frames of a thread holding the main interpreter's GIL (a C extension
// that kept it, ctypes.PyDLL), through the public C API. A code object seen
// for the first time gets an id and a reference kept to it, so that its
// address is never reused by another code object.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "shim/python_frames.h"
#include "shim/python_frames_shared.h"

namespace nb::shim::python {
namespace {

// Code object → id. Only touched by a thread that holds the main
// interpreter's GIL, so the GIL is its lock. No interpreter call is made
// while the table is being changed (another thread may take the GIL during
// one), so it is consistent whenever the GIL can change hands.
class CodeTable {
 public:
  // The id of `code`, or 0 if it has none yet.
  uint32_t find(const void* code) const {
    if (slots_ == nullptr) return 0;
    for (size_t i = slot_of(code, bits_);; i = (i + 1) & mask()) {
      if (slots_[i].code == code) return slots_[i].id;
      if (slots_[i].code == nullptr) return 0;
    }
  }

  bool full() const { return count_ >= kMaxCodes; }

  // `code` must not be in the table. False when memory is short.
  bool insert(const void* code, uint32_t id) {
    if ((count_ + 1) * 2 > capacity() && !grow()) return false;
    place(slots_, bits_, code, id);
    ++count_;
    return true;
  }

  // After the interpreter was finalized (code objects may be gone, their
  // addresses reused). Ids are not reused: the names table only grows.
  void clear() {
    if (slots_ != nullptr) std::memset(slots_, 0, capacity() * sizeof(Slot));
    count_ = 0;
  }

 private:
  struct Slot {
    const void* code;
    uint32_t id;
  };

  static size_t slot_of(const void* code, unsigned bits) {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(code) * 0x9E3779B97F4A7C15ull) >> (64 - bits));
  }
  static void place(Slot* slots, unsigned bits, const void* code, uint32_t id) {
    const size_t mask = (size_t{1} << bits) - 1;
    size_t i = slot_of(code, bits);
    while (slots[i].code != nullptr) i = (i + 1) & mask;
    slots[i] = Slot{code, id};
  }
  size_t capacity() const { return slots_ ? size_t{1} << bits_ : 0; }
  size_t mask() const { return capacity() - 1; }

  bool grow() {
    const unsigned bits = slots_ ? bits_ + 1 : 12;
    auto* fresh = static_cast<Slot*>(std::calloc(size_t{1} << bits, sizeof(Slot)));
    if (fresh == nullptr) return false;
    for (size_t i = 0; i < capacity(); ++i) {
      if (slots_[i].code != nullptr) place(fresh, bits, slots_[i].code, slots_[i].id);
    }
    std::free(slots_);
    slots_ = fresh;
    bits_ = bits;
    return true;
  }

  Slot* slots_ = nullptr;
  unsigned bits_ = 0;
  size_t count_ = 0;
};

CodeTable g_codes;                        // under the GIL
std::atomic<bool> g_codes_used{false};    // the table holds entries (read without the GIL)
std::atomic<bool> g_codes_stale{false};   // set when the interpreter was seen finalized

void read_string(const PyApi& a, void* obj, const char* attr, std::string& out) {
  void* s = a.getattr(obj, attr);
  const char* p = s ? a.as_utf8(s) : nullptr;
  out = p ? p : "?";
  if (s != nullptr) a.decref(s);
}

// First sight of `code`: copy its names out and keep the reference we were
// handed, so that the address stays this code object's.
uint32_t first_sight(const PyApi& a, void* code) {
  if (g_codes.full()) {
    a.decref(code);
    return unknown();
  }
  uint32_t id = 0;
  try {
    std::string file, function;
    read_string(a, code, "co_filename", file);
    read_string(a, code, "co_name", function);
    // Reading ran interpreter code, during which another thread may have had
    // the GIL and named this code object.
    if (const uint32_t seen = g_codes.find(code)) {
      a.decref(code);
      return seen;
    }
    id = add_names(std::move(file), std::move(function));
  } catch (...) {
    id = 0;
  }
  if (id == 0 || !g_codes.insert(code, id)) {
    a.decref(code);
    return unknown();
  }
  g_codes_used.store(true, std::memory_order_relaxed);
  return id;
}

// Takes the reference `code`.
inline uint32_t code_id(const PyApi& a, void* code) {
  if (code == nullptr) return unknown();
  if (const uint32_t id = g_codes.find(code)) {
    a.decref(code);
    return id;
  }
  return first_sight(a, code);
}

// (code id, instruction offset) → line, direct-mapped, under the GIL like the
// code table. From 3.11 on PyFrame_GetLineNumber walks the code object's line
// table from its start on every call, most of a capture's cost without this.
class LineCache {
 public:
  // 0 when not known (lines are 1-based).
  uint32_t find(uint32_t id, int lasti) const {
    if (entries_ == nullptr) return 0;
    const Entry& e = entries_[slot_of(key(id, lasti))];
    return e.key == key(id, lasti) ? e.line : 0;
  }
  void store(uint32_t id, int lasti, uint32_t line) {
    if (entries_ == nullptr && (entries_ = static_cast<Entry*>(std::calloc(kSize, sizeof(Entry)))) == nullptr) return;
    entries_[slot_of(key(id, lasti))] = Entry{key(id, lasti), line};
  }
  void clear() {
    if (entries_ != nullptr) std::memset(entries_, 0, kSize * sizeof(Entry));
  }

 private:
  static constexpr unsigned kBits = 13;
  static constexpr size_t kSize = size_t{1} << kBits;
  struct Entry {
    uint64_t key;  // 0: empty (code ids start at 1)
    uint32_t line;
  };
  static uint64_t key(uint32_t id, int lasti) { return (static_cast<uint64_t>(id) << 32) | static_cast<uint32_t>(lasti); }
  static size_t slot_of(uint64_t key) { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - kBits)); }

  Entry* entries_ = nullptr;
};

LineCache g_lines;  // under the GIL

inline uint32_t line_of(const PyApi& a, void* frame, uint32_t id) {
  if (a.frame_lasti == nullptr || id == kUnknownPythonCode) {
    const int line = a.frame_line(frame);
    return line > 0 ? static_cast<uint32_t>(line) : 0;
  }
  const int lasti = a.frame_lasti(frame);
  if (lasti < 0) return 0;  // not started
  if (const uint32_t line = g_lines.find(id, lasti)) return line;
  const int line = a.frame_line(frame);
  if (line <= 0) return 0;
  g_lines.store(id, lasti, static_cast<uint32_t>(line));
  return static_cast<uint32_t>(line);
}

// Any exception pending when the CUDA call was made stays pending, and none
// of ours leaks out.
class SavedError {
 public:
  explicit SavedError(const PyApi& a) : a_(a) {
    if (a_.err_get_raised != nullptr) {
      value_ = a_.err_get_raised();
    } else {
      a_.err_fetch(&type_, &value_, &traceback_);
    }
  }
  ~SavedError() {
    if (a_.err_set_raised != nullptr) {
      a_.err_set_raised(value_);
    } else {
      a_.err_restore(type_, value_, traceback_);
    }
  }
  SavedError(const SavedError&) = delete;
  SavedError& operator=(const SavedError&) = delete;

 private:
  const PyApi& a_;
  void* type_ = nullptr;
  void* value_ = nullptr;
  void* traceback_ = nullptr;
};

// From 3.11 on, PyFrame_GetBack makes frame objects, and in 3.11 making one
// can run a garbage collection then and there: finalizers, arbitrary Python
// code (a CUDA call of its own, inside the one being recorded, or a GIL
// switch). The collector is off while we walk.
class NoGc {
 public:
  explicit NoGc(const PyApi& a) : a_(a), was_enabled_(a.gc_disable != nullptr && a.gc_disable() != 0) {}
  ~NoGc() {
    if (was_enabled_) a_.gc_enable();
  }
  NoGc(const NoGc&) = delete;
  NoGc& operator=(const NoGc&) = delete;

 private:
  const PyApi& a_;
  bool was_enabled_;
};

}  // namespace

size_t capture_with_gil(const PyApi& a, uint64_t* out, size_t max) {
  if (__builtin_expect(g_codes_stale.load(std::memory_order_relaxed), 0)) {
    g_codes.clear();
    g_lines.clear();
    g_codes_used.store(false, std::memory_order_relaxed);
    g_codes_stale.store(false, std::memory_order_relaxed);
  }
  SavedError saved(a);
  NoGc no_gc(a);
  size_t n = 0;
  void* frame = a.get_frame();  // borrowed: the running frame keeps it alive
  bool owned = false;
  while (frame != nullptr && n < max) {
    const uint32_t id = code_id(a, a.frame_code(frame));
    out[n++] = kPythonFrameBit | (static_cast<uint64_t>(id) << 32) | line_of(a, frame, id);
    void* back = a.frame_back(frame);
    if (owned) a.decref(frame);
    frame = back;
    owned = true;
  }
  if (owned && frame != nullptr) a.decref(frame);
  return n;
}

void forget_gil_codes() {
  // Cleared by the next capture, under the GIL that guards the tables.
  if (g_codes_used.load(std::memory_order_relaxed)) g_codes_stale.store(true, std::memory_order_relaxed);
}

}  // namespace nb::shim::python
