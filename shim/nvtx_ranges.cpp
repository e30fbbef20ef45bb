#include "shim/nvtx_ranges.h"

#include <mutex>
#include <unordered_map>

#include "core/clock.h"
#include "shim/hook_scope.h"
#include "shim/runtime.h"
#include "shim/steps.h"

namespace nb::shim {

namespace {

struct OpenRange {
  uint32_t name;   // NameTable id, 0 = not recorded (the shim was not recording at the push)
  uint32_t step;   // the step the range began in
  uint64_t start;  // ticks
};

// Thread ranges nest: a fixed stack per thread, no allocation. Deeper
// ranges than this are counted in the depth but not recorded.
constexpr uint32_t kMaxDepth = 64;
__thread OpenRange t_open[kMaxDepth] __attribute__((tls_model("initial-exec")));
__thread uint32_t t_depth __attribute__((tls_model("initial-exec")));

// Process ranges may end on another thread: kept by id.
// Constant-initialized or made on first use (never destroyed): NVTX calls
// can come from other libraries' constructors and destructors.
std::mutex g_process_mu;
std::unordered_map<uint64_t, OpenRange>& process_ranges() {
  static auto* m = new std::unordered_map<uint64_t, OpenRange>;
  return *m;
}
std::atomic<uint64_t> g_next_id{1};

// Names are interned through the shared table (a mutex, an allocation);
// programs push the same few names over and over, so each thread keeps the
// last ids by a 64-bit hash of the text (never by pointer: Python passes a
// fresh buffer each time, and an address can come back with other text).
struct CachedName {
  uint64_t hash;
  uint32_t id;
};
constexpr uint32_t kNameCache = 64;
__thread CachedName t_names[kNameCache] __attribute__((tls_model("initial-exec")));

uint32_t name_id(const char* name) {
  if (name == nullptr || *name == '\0') name = "(unnamed range)";
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char* p = name; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  h |= 1;  // 0 marks an empty slot
  CachedName& c = t_names[h % kNameCache];
  if (c.hash == h) return c.id;
  const uint32_t id = intern_name(name);
  c = CachedName{h, id};
  return id;
}

OpenRange open(const char* name) {
  if (!recording()) return OpenRange{0, 0, 0};
  return OpenRange{name_id(name), g_control.step.load(std::memory_order_relaxed), now_ticks()};
}

void close(const OpenRange& o) {
  if (o.name == 0) return;
  const uint64_t end = now_ticks();
  Record* r = reserve_standalone(Kind::Nvtx);
  if (r == nullptr) return;  // not recording now, or the ring is full (counted)
  r->start = o.start;
  r->end = end;
  r->name = o.name;
  r->step = o.step;
  if (nvtx_ends_step(o.name)) end_step(*r);
  publish_standalone();
}

}  // namespace

void nvtx_push(const char* name) {
  try {
    const uint32_t d = t_depth++;
    if (d < kMaxDepth) t_open[d] = open(name);
  } catch (...) {
  }
}

void nvtx_pop() {
  if (t_depth == 0) return;  // a pop without its push: nothing to close
  const uint32_t d = --t_depth;
  if (d >= kMaxDepth) return;
  try {
    close(t_open[d]);
  } catch (...) {
  }
}

uint64_t nvtx_start(const char* name) {
  const uint64_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  try {
    const OpenRange o = open(name);
    if (o.name != 0) {
      std::lock_guard<std::mutex> lock(g_process_mu);
      process_ranges().emplace(id, o);
    }
  } catch (...) {
  }
  return id;
}

void nvtx_end(uint64_t id) {
  if (!recording()) return;  // nothing was kept while not recording
  try {
    OpenRange o{0, 0, 0};
    {
      std::lock_guard<std::mutex> lock(g_process_mu);
      auto it = process_ranges().find(id);
      if (it == process_ranges().end()) return;
      o = it->second;
      process_ranges().erase(it);
    }
    close(o);
  } catch (...) {
  }
}

}  // namespace nb::shim
