#include "shim/nvtx_ranges.h"

#include <mutex>
#include <string>
#include <unordered_map>

#include "core/clock.h"
#include "core/name_table.h"
#include "core/record.h"
#include "shim/hook_scope.h"
#include "shim/runtime.h"
#include "shim/steps.h"
#include "shim/thread_state.h"

namespace nb::shim {

namespace {

struct OpenRange {
  uint32_t name;   // NameTable id, 0 = not recorded (the shim was not recording at the push)
  uint32_t path;   // NameTable id of its path (Record::range)
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

// `domain` (may be null): the id is of "domain:name".
uint32_t name_id(const char* name, const char* domain = nullptr) {
  if (name == nullptr || *name == '\0') name = "(unnamed range)";
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  if (domain != nullptr) {
    for (const char* p = domain; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
    h = (h ^ static_cast<unsigned char>(':')) * 1099511628211ull;
  }
  for (const char* p = name; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  h |= 1;  // 0 marks an empty slot
  CachedName& c = t_names[h % kNameCache];
  if (c.hash == h) return c.id;
  const uint32_t id = domain != nullptr ? intern_name((std::string(domain) + ":" + name).c_str()) : intern_name(name);
  c = CachedName{h, id};
  return id;
}

// A nested range's path ("outer" kRangePathSep "inner"), interned like a
// name: a per-thread cache by (parent, name), the table on a miss.
struct CachedPath {
  uint64_t key;  // parent << 32 | name, 0 = empty
  uint32_t id;
};
__thread CachedPath t_paths[kNameCache] __attribute__((tls_model("initial-exec")));

uint32_t path_id(uint32_t parent, uint32_t name) {
  if (parent == 0 || name == 0) return name;
  const uint64_t key = uint64_t(parent) << 32 | name;
  CachedPath& c = t_paths[(key * 0x9E3779B97F4A7C15ull) >> 58];
  if (c.key == key) return c.id;
  NameTable* table = name_table();
  if (table == nullptr) return name;
  std::string text = table->get(parent);
  text += kRangePathSep;
  text += table->get(name);
  const uint32_t id = table->intern(text);
  c = CachedPath{key, id};
  return id;
}

OpenRange open(const char* name, uint32_t parent, const char* domain = nullptr) {
  if (!recording()) return OpenRange{0, 0, 0, 0};
  const uint32_t id = name_id(name);
  const uint32_t row = domain != nullptr && *domain != '\0' ? name_id(name, domain) : id;
  return OpenRange{id, path_id(parent, row), g_control.step.load(std::memory_order_relaxed), now_ticks()};
}

void close(const OpenRange& o) {
  if (o.name == 0) return;
  const uint64_t end = now_ticks();
  Record* r = reserve_standalone(Kind::Nvtx);
  if (r == nullptr) return;  // not recording now, or the ring is full (counted)
  r->start = o.start;
  r->end = end;
  r->name = o.name;
  r->range = o.path;
  r->step = o.step;
  if (nvtx_ends_step(o.name)) end_step(*r);
  publish_standalone();
}

}  // namespace

void nvtx_push(const char* name, const char* domain) {
  try {
    const uint32_t d = t_depth++;
    if (d < kMaxDepth) {
      t_open[d] = open(name, t_state.range, domain);
      t_state.range = t_open[d].path;  // the calls inside are this range's
    }
  } catch (...) {
  }
}

void nvtx_pop() {
  if (t_depth == 0) return;  // a pop without its push: nothing to close
  const uint32_t d = --t_depth;
  if (d >= kMaxDepth) return;
  t_state.range = d == 0 ? 0 : t_open[d - 1].path;
  try {
    close(t_open[d]);
  } catch (...) {
  }
}

uint64_t nvtx_start(const char* name) {
  const uint64_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  try {
    const OpenRange o = open(name, 0);  // process ranges do not nest
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
    OpenRange o{0, 0, 0, 0};
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
