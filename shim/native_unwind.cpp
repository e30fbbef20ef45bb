#include "shim/native_unwind.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <atomic>
#include <mutex>
#include <vector>

#include "shim/eh_frame_rules.h"

namespace nb::shim {
namespace {

// One cached rule: 16 bytes, so four share a cache line. A thread's table
// starts at 1,024 (16 KiB, four pages) and doubles when half full, up to
// 65,536; full at that size, it starts over empty.
struct Entry {
  uint64_t pc;
  cfi::Rule rule;
};
static_assert(sizeof(Entry) == 16);
constexpr uint32_t kFirstBits = 10, kMaxBits = 16;

// The frames of the thread's last stack, outermost last: the next stack
// shares most of its outer frames, at the same stack addresses, so their
// rules are read in order from here (a few lines the prefetcher sees
// coming) instead of from one cache line of the table each.
//
// A frame's rbp is kept with it, so that a run of frames the same as the
// last stack's can be checked by reading only what each step out of them
// reads (its return address, the rbp it restores), at the stack addresses
// the last stack had, all at once (verify_run), instead of one frame after
// another, each address found from the frame before.
struct Seen {
  uint64_t sp, pc, fp;
  int32_t cfa_offset;
  int16_t rbp_offset;
  cfi::Kind kind;
  bool fp_known;
  cfi::Rule rule() const { return cfi::Rule{cfa_offset, rbp_offset, kind, 0}; }
};
static_assert(sizeof(Seen) == 32);
constexpr uint32_t kSeen = 256;

// The first frames of the thread's recent stacks, each kept by the first
// frame outside nb's own code (where a hook was called from, at its stack
// address). Launches of different kernels take turns, so the last stack
// often differs from this one in its inner frames, while the last stack
// made from the same call site, at the same depth, is the same: its rules
// are read in order from here too, rather than each from the table (one
// line each, in a chain: 46 ns a frame on the H200, docs/performance.md).
// Any (pc, rule) here is right for that pc, whichever stack put it here,
// so a slot overwritten in part is only a worse guess.
constexpr uint32_t kRecent = 32, kRecentFrames = 64;

struct UnwindThread {
  Entry* table;
  uint32_t bits;
  uint32_t used;
  Seen* seen[2];  // the last stack's frames, and room for the next one's
  uint32_t seen_n;
  Seen* recent;         // kRecent slots of kRecentFrames (see kRecent)
  uint8_t recent_n[kRecent];
  uint32_t last_key;    // the slot the last stack was kept in (kRecent: none)
  uint64_t own_lo, own_hi;  // nb's own code (own_code_range)
  uint32_t generation;  // g_generation when the rules above were read
  uint32_t stacks;      // taken so far: every kCheckEvery-th asks the loader (check_loader)
  uint64_t stack_lo, stack_hi;  // the thread's stack; 0 until known
  bool no_stack;                // its bounds could not be had: always libunwind
  // Frames walked, and of them read from the memos (the last stack, a
  // recent one), since the last flush into g_frames_walked / g_frames_memo.
  uint64_t frames_walked, frames_memo;
};
__thread UnwindThread t_unwind __attribute__((tls_model("initial-exec")));

// The executable ranges of the loaded modules and where each one's
// .eh_frame_hdr is, rebuilt when the loader's counts of loads and unloads
// change. Read and rebuilt under g_modules_mu only (cache misses and each
// thread's check every kCheckEvery stacks), so a
// capture never reads an entry of a module unloaded since.
struct Module {
  uint64_t lo, hi;
  const uint8_t* eh_frame_hdr;  // null: the module has none
};
std::mutex g_modules_mu;  // constant-initialized
std::vector<Module>* g_modules = nullptr;
unsigned long long g_adds = ~0ull, g_subs = ~0ull;
// + 1 each time a rebuild finds a module unloaded: every thread's rules and
// memo may then hold a pc whose code is gone, and another module (or
// generated code) may be mapped there since; each thread drops its own on
// its next capture. An unload is seen at the next rule-cache miss of any
// thread, and a stack during whose walk one was seen goes to libunwind.
std::atomic<uint32_t> g_generation{0};

// All threads' frames walked and read from the memos, for NB_LOG=debug
// (unwind_memo_text): what share of a program's frames the memos serve
// tells where its stacks' cost is. A thread adds its own counts every
// kCheckEvery stacks and when it ends.
std::atomic<uint64_t> g_frames_walked{0}, g_frames_memo{0};

void flush_frame_counts(UnwindThread& t) {
  if (t.frames_walked == 0) return;
  g_frames_walked.fetch_add(t.frames_walked, std::memory_order_relaxed);
  g_frames_memo.fetch_add(t.frames_memo, std::memory_order_relaxed);
  t.frames_walked = t.frames_memo = 0;
}

// One dl_iterate_phdr pass, allocating nothing under the loader's lock: a
// first pass (out null) says whether anything changed since the table was
// made and counts the ranges, a second fills what was reserved in between.
struct Scan {
  Module* out = nullptr;
  size_t capacity = 0, n = 0;
  unsigned long long adds = 0, subs = 0;
  bool started = false, unchanged = false, failed = false;
};

int scan_module(dl_phdr_info* info, size_t size, void* data) noexcept {
  auto* s = static_cast<Scan*>(data);
  if (size < offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    s->failed = true;  // no counts to tell a change by
    return 1;
  }
  if (!s->started) {
    s->started = true;
    s->adds = info->dlpi_adds;
    s->subs = info->dlpi_subs;
    if (s->out == nullptr && g_modules != nullptr && s->adds == g_adds && s->subs == g_subs) {
      s->unchanged = true;  // nothing loaded or unloaded since: keep the table
      return 1;
    }
  }
  const uint8_t* hdr = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) {
      hdr = reinterpret_cast<const uint8_t*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
  }
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
    if (s->out != nullptr) {
      if (s->n == s->capacity) {
        s->failed = true;  // more were loaded since the count: next time
        return 1;
      }
      s->out[s->n] = Module{info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz, hdr};
    }
    ++s->n;
  }
  return 0;
}

// Brings g_modules up to date (under g_modules_mu); false when it could not
// be (no memory, the loader's list grew between the two passes).
bool refresh_modules() {
  Scan count;
  dl_iterate_phdr(scan_module, &count);
  if (count.unchanged) return true;
  if (count.failed) return false;
  std::vector<Module> fresh(count.n + 16);  // may throw: the caller catches
  Scan fill;
  fill.out = fresh.data();
  fill.capacity = fresh.size();
  dl_iterate_phdr(scan_module, &fill);
  if (fill.failed) return false;
  fresh.resize(fill.n);
  std::sort(fresh.begin(), fresh.end(), [](const Module& a, const Module& b) { return a.lo < b.lo; });
  const bool unloaded = g_modules != nullptr && fill.subs != g_subs;
  auto* table = new std::vector<Module>(std::move(fresh));
  delete g_modules;
  g_modules = table;
  g_adds = fill.adds;
  g_subs = fill.subs;
  if (unloaded) g_generation.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// A thread asks the loader whether a module was unloaded every this many
// stacks, as well as on each rule-cache miss: a library unloaded and
// another mapped at its addresses at once would otherwise go on being
// stepped through by the first one's rules (wrong frames, never a wrong
// read: reads stay on the stack) for as long as no miss happened. So at
// most this many stacks per thread can use them. The check is one
// dl_iterate_phdr that stops at its first object: well under 1 ns a stack.
constexpr uint32_t kCheckEvery = 32;

void check_loader() {
  std::unique_lock<std::mutex> lock(g_modules_mu, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is at it
  try {
    refresh_modules();
  } catch (...) {
  }
}

// The rule at pc from the module's own tables; Kind::Unknown when it cannot
// be had now (another thread holds the lock, or no memory): not cached.
cfi::Rule compute_rule(uint64_t pc) {
  cfi::Rule r;
  std::unique_lock<std::mutex> lock(g_modules_mu, std::try_to_lock);
  if (!lock.owns_lock()) return r;
  try {
    if (!refresh_modules()) return r;
  } catch (...) {
    return r;
  }
  if (g_modules == nullptr) return r;
  auto it = std::upper_bound(g_modules->begin(), g_modules->end(), pc,
                             [](uint64_t v, const Module& m) { return v < m.lo; });
  r.kind = cfi::Kind::Other;  // a pc in no module (generated code)
  if (it == g_modules->begin()) return r;
  --it;
  if (pc >= it->hi || it->eh_frame_hdr == nullptr) return r;
  return cfi::rule_at(it->eh_frame_hdr, pc);
}

Entry* map_table(uint32_t bits) {
  void* p = mmap(nullptr, sizeof(Entry) << bits, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<Entry*>(p);
}

inline uint32_t slot_of(uint64_t pc, uint32_t bits) {
  return static_cast<uint32_t>((pc * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

void insert(UnwindThread& t, uint64_t pc, cfi::Rule rule) {
  const uint32_t mask = (1u << t.bits) - 1;
  for (uint32_t i = slot_of(pc, t.bits);; i = (i + 1) & mask) {
    if (t.table[i].rule.kind == cfi::Kind::Unknown) {
      t.table[i] = Entry{pc, rule};
      ++t.used;
      return;
    }
  }
}

// Room for one more entry, keeping the table at most half full.
bool make_room(UnwindThread& t) {
  if (t.used + 1 <= (1u << t.bits) / 2) return true;
  if (t.bits == kMaxBits) {
    std::fill(t.table, t.table + (1u << t.bits), Entry{});
    t.used = 0;
    return true;
  }
  Entry* bigger = map_table(t.bits + 1);
  if (bigger == nullptr) return false;
  Entry* old = t.table;
  const uint32_t old_bits = t.bits;
  t.table = bigger;
  t.bits = old_bits + 1;
  t.used = 0;
  for (uint32_t i = 0; i < (1u << old_bits); ++i) {
    if (old[i].rule.kind != cfi::Kind::Unknown) insert(t, old[i].pc, old[i].rule);
  }
  munmap(old, sizeof(Entry) << old_bits);
  return true;
}

cfi::Rule rule_for(UnwindThread& t, uint64_t pc) {
  const uint32_t mask = (1u << t.bits) - 1;
  for (uint32_t i = slot_of(pc, t.bits);; i = (i + 1) & mask) {
    const Entry& e = t.table[i];
    if (e.pc == pc && e.rule.kind != cfi::Kind::Unknown) return e.rule;
    if (e.rule.kind == cfi::Kind::Unknown) break;
  }
  const cfi::Rule r = compute_rule(pc);
  if (r.kind != cfi::Kind::Unknown && make_room(t)) insert(t, pc, r);
  return r;
}

// The last stack's frames, room for the next one's, and the recent stacks'.
constexpr size_t kSeenBytes = (2 * kSeen + kRecent * kRecentFrames) * sizeof(Seen);

bool init_thread(UnwindThread& t) {
  if (t.no_stack) return false;
  pthread_attr_t attr;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) {
    t.no_stack = true;
    return false;
  }
  const bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0 && size != 0;
  pthread_attr_destroy(&attr);
  t.table = ok ? map_table(kFirstBits) : nullptr;
  uint64_t own_lo = 0, own_hi = 0;
  own_code_range(own_lo, own_hi);
  void* seen = mmap(nullptr, kSeenBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (t.table == nullptr || seen == MAP_FAILED) {
    if (t.table != nullptr) munmap(t.table, sizeof(Entry) << kFirstBits);
    if (seen != MAP_FAILED) munmap(seen, kSeenBytes);
    t.table = nullptr;
    t.no_stack = true;
    return false;
  }
  t.seen[0] = static_cast<Seen*>(seen);
  t.seen[1] = t.seen[0] + kSeen;
  t.seen_n = 0;
  t.recent = t.seen[1] + kSeen;
  std::fill(t.recent_n, t.recent_n + kRecent, 0);
  t.last_key = kRecent;
  t.own_lo = own_lo;
  t.own_hi = own_hi;
  t.bits = kFirstBits;
  t.used = 0;
  t.stack_lo = reinterpret_cast<uint64_t>(addr);
  t.stack_hi = t.stack_lo + size;
  return true;
}

constexpr int kStale = -2;

// Why stacks went to libunwind, for NB_LOG=debug (unwind_fallbacks_text):
// counts by reason, and the first pcs that stopped a walk. Touched on the
// fallback path only.
enum Reason : uint8_t { kOtherStack, kNoRuleNow, kOtherRule, kFrameUnknown, kCfaOutside, kUnloaded, kReasons };
constexpr const char* kReasonText[kReasons] = {
    "a stack other than the thread's own (a signal's, a coroutine's), or none known",
    "no rule at hand (nb's lock busy or no memory)", "a rule nb does not follow (a CFA expression, a signal frame, no module)",
    "a frame-pointer rule with the frame pointer unknown", "a CFA outside the thread's stack",
    "libraries unloaded during the walk, twice"};
std::atomic<uint64_t> g_fallbacks[kReasons];
constexpr int kFallbackPcs = 16;
std::atomic<uint64_t> g_fallback_pc[kFallbackPcs];
std::atomic<uint8_t> g_fallback_reason[kFallbackPcs];

int give_up(Reason why, uint64_t pc) {
  g_fallbacks[why].fetch_add(1, std::memory_order_relaxed);
  if (pc == 0) return -1;  // not a frame's
  for (int i = 0; i < kFallbackPcs; ++i) {
    uint64_t seen = g_fallback_pc[i].load(std::memory_order_relaxed);
    if (seen == pc) return -1;
    if (seen == 0 && g_fallback_pc[i].compare_exchange_strong(seen, pc, std::memory_order_relaxed)) {
      g_fallback_reason[i].store(why, std::memory_order_relaxed);
      return -1;
    }
    if (seen == pc) return -1;
  }
  return -1;
}

// How far `run` (frames of one earlier stack, in order) still holds, from
// its frame k, which the walk has reached with the same stack pointer and
// pc: the index of the first frame past k that the stack no longer has, or
// `end`. Stepping out of a frame with the same state by the same rule
// reaches the same stack address, so each step is checked by what it reads
// there: the return address, and the rbp it restores. None of these reads
// waits for another (their addresses are the run's), so the cache misses
// of a stack the program's work evicted come together rather than one
// after another. rbp: from frame `fp_from` on, the walk's rbp is the
// run's (k if it is at frame k; kNoFrame if not yet). Where it is not (rbp
// holding data in code without frame pointers) the run goes on until a
// frame would step by it; from the first frame that restores rbp from the
// stack (or leaves it unknown to both) it is the run's. Only the rules the
// walk follows by arithmetic (Rsp, Rbp) are taken. Until the walk has its
// key frame (the first outside nb's code, [own_lo, own_hi)), the run ends
// at that frame, so that the walk sees it.
constexpr uint32_t kNoFrame = ~0u;
__attribute__((no_sanitize("address", "thread"))) uint32_t verify_run(const Seen* run, uint32_t k, uint32_t end,
                                                                       uint32_t& fp_from, uint64_t own_lo,
                                                                       uint64_t own_hi) {
  uint32_t j = k;
  for (; j < end; ++j) {
    const Seen& from = run[j];
    const Seen& to = run[j + 1];
    if (from.kind != cfi::Kind::Rsp && (from.kind != cfi::Kind::Rbp || j < fp_from)) break;
    uint64_t differs = *reinterpret_cast<const uint64_t*>(to.sp - 8) ^ (to.pc + 1);
    if (from.rbp_offset != cfi::kRbpUndefined && from.rbp_offset != cfi::kRbpSame) {
      differs |= *reinterpret_cast<const uint64_t*>(to.sp + static_cast<uint64_t>(int64_t(from.rbp_offset))) ^ to.fp;
    }
    if (differs != 0) break;
    // Restored from the stack, or unknown to both walks from here.
    if (from.rbp_offset != cfi::kRbpSame && fp_from == kNoFrame) fp_from = j + 1;
    if (to.pc < own_lo || to.pc >= own_hi) return j + 1;
  }
  return j;
}

// The walk from this state: a frame at `pc` (its exact rules; return
// addresses after it look up the call before them) with these rsp and rbp.
// kStale: an unload was seen during it (g_generation), so some of the rules
// it used may be stale. Not instrumented in a sanitizer build: it reads
// other frames' slots, as libunwind (not instrumented either) does.
__attribute__((no_sanitize("address", "thread"))) int walk(UnwindThread& t, uint64_t pc, uint64_t sp, uint64_t fp,
                                                            uint64_t* out, int max) {
  const uint32_t generation = g_generation.load(std::memory_order_relaxed);
  if (__builtin_expect(generation != t.generation, 0)) {
    std::fill(t.table, t.table + (1u << t.bits), Entry{});  // a module was unloaded: see g_generation
    t.used = 0;
    t.seen_n = 0;
    std::fill(t.recent_n, t.recent_n + kRecent, 0);
    t.last_key = kRecent;
    t.generation = generation;
  }
  bool fp_known = true;
  uint64_t lookup = pc;
  int n = 0;
  const Seen* last = t.seen[0];
  uint32_t last_n = t.seen_n;
  Seen* next = t.seen[1];
  uint32_t k = 0, next_n = 0;
  uint32_t key = kRecent;  // the recent stacks' slot of this one: none yet
  uint32_t from_memo = 0;
  // Every frame since the key's (up to the slot's size) read from frames
  // the slot holds already: then it need not be written again.
  bool slot_holds_it = false;
  // The slots the walk will read where the last stack's frames were (a
  // return address and a saved rbp below each frame's stack pointer), asked
  // of the cache at once: outside a run (verify_run) the walk reads them one
  // after another, each address found from the frame before, and frames the
  // program's own work evicted since would cost a miss each in turn
  // (docs/performance.md, "A stack with cold caches"). A prefetch never
  // faults.
  for (uint32_t i = 1; i < last_n; ++i) __builtin_prefetch(reinterpret_cast<const void*>(last[i].sp - 16));
  while (n < max) {
    // The last stack's frame at this stack address, if it was at this pc.
    while (k < last_n && last[k].sp < sp) ++k;
    if (k == last_n && last != t.seen[0]) {
      // Past the slot's frames: the last stack's again.
      last = t.seen[0];
      last_n = t.seen_n;
      k = 0;
      while (k < last_n && last[k].sp < sp) ++k;
    }
    bool known = k < last_n && last[k].sp == sp && last[k].pc == lookup;
    if (key == kRecent && (lookup < t.own_lo || lookup >= t.own_hi)) {
      // The first frame outside nb: the stack last made from here, if the
      // last stack was not.
      key = static_cast<uint32_t>(((lookup ^ (sp << 16)) * 0x9E3779B97F4A7C15ull) >> 59);
      static_assert(kRecent == 32, "a 5-bit slot");
      const Seen* slot = t.recent + key * kRecentFrames;
      slot_holds_it = known && key == t.last_key;  // the last stack, kept in this slot
      if (!known && next_n < t.recent_n[key] && slot[next_n].sp == sp && slot[next_n].pc == lookup) {
        last = slot;
        last_n = t.recent_n[key];
        k = next_n;
        known = true;
        slot_holds_it = true;
        for (uint32_t i = k + 1; i < last_n; ++i) __builtin_prefetch(reinterpret_cast<const void*>(last[i].sp - 16));
      }
    }
    if (next_n < kRecentFrames) slot_holds_it = slot_holds_it && known;
    from_memo += known;
    if (known && fp_known == last[k].fp_known) {
      // This frame is the earlier stack's: take the frames beyond it that
      // the stack still has in one go (verify_run).
      uint32_t fp_from = !fp_known || fp == last[k].fp ? k : kNoFrame;
      const uint32_t room = std::min<uint32_t>(static_cast<uint32_t>(max - n), kSeen - next_n);
      const bool keyed = key != kRecent;
      const uint32_t e = verify_run(last, k, std::min(last_n - 1, k + room), fp_from, keyed ? 0 : t.own_lo,
                                    keyed ? ~0ull : t.own_hi);  // keyed: no frame ends the run
      if (e > k) {
        for (uint32_t j = k; j < e; ++j) {
          next[next_n] = last[j];
          if (j < fp_from) next[next_n].fp = fp;  // this walk's rbp, until the run restores it
          ++next_n;
          out[n++] = last[j + 1].pc + 1;
        }
        from_memo += e - k - 1;  // frame k is counted above, frame e on the next turn
        k = e;
        sp = last[e].sp;
        lookup = last[e].pc;
        if (e >= fp_from) fp = last[e].fp;
        fp_known = last[e].fp_known;
        continue;  // frame e, by the rule it had
      }
    }
    const cfi::Rule r = known ? last[k].rule() : rule_for(t, lookup);
    if (next_n < kSeen) next[next_n++] = Seen{sp, lookup, fp, r.cfa_offset, r.rbp_offset, r.kind, fp_known};
    if (r.kind == cfi::Kind::End) break;
    if (r.kind == cfi::Kind::Unknown) return give_up(kNoRuleNow, lookup);
    if (r.kind == cfi::Kind::Chain) {
      // Code without unwind tables: the caller's rbp and return address are
      // where a frame-pointer prologue put them, as libunwind (1.6) assumes
      // for such a frame, with its limits: a zero rbp, or one below this
      // frame's stack pointer or more than 16 KiB above it (not this
      // frame's: a guess that failed), ends the stack here. Nothing is
      // assumed of the caller's rbp: the caller may not keep a frame pointer.
      if (!fp_known) return give_up(kFrameUnknown, lookup);
      if (fp == 0 || fp < sp || fp - sp > 0x4000) break;
      if (fp > t.stack_hi - 16) return give_up(kCfaOutside, lookup);
      const uint64_t caller_fp = *reinterpret_cast<const uint64_t*>(fp);
      const uint64_t ra = *reinterpret_cast<const uint64_t*>(fp + 8);
      sp = fp + 16;
      fp = caller_fp;
      if (ra == 0) break;
      out[n++] = ra;
      lookup = ra - 1;
      continue;
    }
    if (r.kind == cfi::Kind::RbpDeref) {
      // A frame realigned by GCC's DRAP (cuBLASLt's): the CFA is stored at
      // rbp + k, the caller's rbp at rbp + j, both in this frame.
      if (!fp_known) return give_up(kFrameUnknown, lookup);
      const uint64_t cfa_at = fp + static_cast<uint64_t>(int64_t(r.cfa_offset));
      const uint64_t rbp_at = fp + static_cast<uint64_t>(int64_t(r.rbp_offset));
      if (cfa_at < sp || cfa_at > t.stack_hi - 8 || rbp_at < sp || rbp_at > t.stack_hi - 8) {
        return give_up(kCfaOutside, lookup);
      }
      const uint64_t cfa = *reinterpret_cast<const uint64_t*>(cfa_at);
      if (cfa < sp + 8 || cfa > t.stack_hi) return give_up(kCfaOutside, lookup);
      const uint64_t ra = *reinterpret_cast<const uint64_t*>(cfa - 8);
      fp = *reinterpret_cast<const uint64_t*>(rbp_at);
      sp = cfa;
      if (ra == 0) break;
      out[n++] = ra;
      lookup = ra - 1;
      continue;
    }
    if (r.kind != cfi::Kind::Rsp && r.kind != cfi::Kind::Rbp) return give_up(kOtherRule, lookup);
    if (r.kind == cfi::Kind::Rbp && !fp_known) return give_up(kFrameUnknown, lookup);
    const uint64_t cfa = (r.kind == cfi::Kind::Rsp ? sp : fp) + static_cast<uint64_t>(int64_t(r.cfa_offset));
    if (cfa < sp + 8 || cfa > t.stack_hi) return give_up(kCfaOutside, lookup);
    const uint64_t ra = *reinterpret_cast<const uint64_t*>(cfa - 8);
    if (r.rbp_offset == cfi::kRbpUndefined) {
      fp_known = false;
    } else if (r.rbp_offset != cfi::kRbpSame) {
      const uint64_t at = cfa + static_cast<uint64_t>(int64_t(r.rbp_offset));
      if (at < sp || at + 8 > cfa) return -1;
      fp = *reinterpret_cast<const uint64_t*>(at);
      fp_known = true;
    }
    sp = cfa;
    if (ra == 0) break;
    out[n++] = ra;
    lookup = ra - 1;  // the call instruction's rules, not the next one's
  }
  if (g_generation.load(std::memory_order_relaxed) != generation) return kStale;
  t.frames_walked += next_n;
  t.frames_memo += from_memo;
  if (key != kRecent && !slot_holds_it) {
    const uint32_t kept = std::min(next_n, kRecentFrames);
    std::copy(next, next + kept, t.recent + key * kRecentFrames);
    t.recent_n[key] = static_cast<uint8_t>(kept);
  }
  t.last_key = key;
  t.seen[1] = t.seen[0];
  t.seen[0] = next;
  t.seen_n = next_n;
  return n;
}

}  // namespace

int unwind_native(uint64_t* out, int max) {
  UnwindThread& t = t_unwind;
  if (t.table == nullptr && !init_thread(t)) return give_up(kOtherStack, 0);
  uint64_t pc, sp, fp;
  // This frame's own state, at the label: the first rule looked up is this
  // function's at that address, so that out[0] is our caller's return
  // address, as unw_backtrace's is.
  asm volatile("leaq 0f(%%rip), %0\n0:\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2" : "=r"(pc), "=r"(sp), "=r"(fp));
  if (sp < t.stack_lo || sp >= t.stack_hi) return give_up(kOtherStack, 0);  // a signal's, a coroutine's
  if (__builtin_expect(++t.stacks % kCheckEvery == 0, 0)) {
    check_loader();
    flush_frame_counts(t);
  }
  int n = walk(t, pc, sp, fp, out, max);
  // Once more from rules read afresh, rather than hand the stack to
  // libunwind: its own caches are never told of an unload, and after a
  // library is replaced at the same addresses unw_backtrace can crash
  // (test_unwind.cpp's reload case did, with the bundled libunwind 1.6).
  if (n == kStale) n = walk(t, pc, sp, fp, out, max);
  if (n == kStale) return give_up(kUnloaded, 0);
  return n < 0 ? -1 : n;
}

std::string unwind_fallbacks_text() {
  std::string out;
  for (int w = 0; w < kReasons; ++w) {
    const uint64_t n = g_fallbacks[w].load(std::memory_order_relaxed);
    if (n == 0) continue;
    out += (out.empty() ? "" : "; ") + std::to_string(n) + " at " + kReasonText[w];
  }
  if (out.empty()) return out;
  out = "native stacks left to libunwind: " + out + ". First pcs:";
  const auto hex = [](uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return std::string(buf);
  };
  for (int i = 0; i < kFallbackPcs; ++i) {
    const uint64_t pc = g_fallback_pc[i].load(std::memory_order_relaxed);
    if (pc == 0) break;
    out += " [" + std::to_string(g_fallback_reason[i].load(std::memory_order_relaxed)) + "] " + hex(pc);
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(pc), &info) != 0 && info.dli_fname != nullptr) {
      out += std::string(" ") + info.dli_fname + "+" + hex(pc - reinterpret_cast<uint64_t>(info.dli_fbase));
      if (info.dli_sname != nullptr) out += std::string(" (") + info.dli_sname + ")";
    }
  }
  return out;
}

bool own_code_range(uint64_t& begin, uint64_t& end) {
  struct Range {
    uint64_t here, begin = 0, end = 0;
  } range{reinterpret_cast<uint64_t>(&unwind_native)};
  dl_iterate_phdr(
      [](dl_phdr_info* i, size_t, void* data) {
        auto* r = static_cast<Range*>(data);
        for (int k = 0; k < i->dlpi_phnum; ++k) {
          const auto& ph = i->dlpi_phdr[k];
          const uint64_t lo = i->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && r->here >= lo && r->here < lo + ph.p_memsz) {
            r->begin = lo;
            r->end = lo + ph.p_memsz;
            return 1;
          }
        }
        return 0;
      },
      &range);
  begin = range.begin;
  end = range.end;
  return end > begin;
}

UnwindFrameCounts unwind_frame_counts() {
  flush_frame_counts(t_unwind);  // the calling thread's, so far
  return {g_frames_walked.load(std::memory_order_relaxed), g_frames_memo.load(std::memory_order_relaxed)};
}

std::string unwind_memo_text() {
  const auto [walked, memo] = unwind_frame_counts();
  if (walked == 0) return "";
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "native frames walked by nb's unwinder: %llu, %.1f%% of them with the rule of a recent stack's "
                "frame at the same address (the rest from the rule cache)",
                static_cast<unsigned long long>(walked), 100.0 * static_cast<double>(memo) / static_cast<double>(walked));
  return buf;
}

void release_unwind_thread() {
  UnwindThread& t = t_unwind;
  flush_frame_counts(t);
  if (t.table != nullptr) munmap(t.table, sizeof(Entry) << t.bits);
  if (t.seen[0] != nullptr) munmap(std::min(t.seen[0], t.seen[1]), kSeenBytes);
  t = UnwindThread{};
}

}  // namespace nb::shim
