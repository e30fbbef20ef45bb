// Turns memory records into the snapshot's view: which device allocations are
// live (segments with their blocks) and the history of allocations, frees,
// mappings and OOMs (device_traces), kept in a ring of the newest entries.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "core/clock.h"
#include "core/record.h"
#include "formats/snapshot_model.h"

namespace nb {

struct MemoryCounts {
  uint64_t allocs = 0, frees = 0, maps = 0, unmaps = 0, ooms = 0;
  uint64_t teardown_frees = 0, teardown_bytes = 0;  // freed (or unmapped) after the program's end
  uint64_t unmatched_frees = 0;   // frees of addresses we never saw allocated
  uint64_t overwritten = 0;       // history entries pushed out of the ring
  uint64_t aged_out = 0;          // history entries older than NB_KEEP, forgotten
};

// Device memory over time, one point per change (the trace's counters).
struct MemoryPoint {
  uint64_t ticks;
  int device;
  uint64_t allocated;  // bytes live in allocations nb saw
  uint64_t reserved;   // bytes held from CUDA: allocations + mappings + what pools keep beyond them
};

class MemoryTracker {
 public:
  explicit MemoryTracker(size_t max_entries) : max_entries_(max_entries ? max_entries : 1) {}

  // Ignores records that are not about device memory. `r.stack` is a
  // StackTable id here (the collector has interned it).
  void on_record(const Record& r);

  // Live allocations as segments and the newest history, with ticks turned
  // into epoch microseconds.
  // Entries older than `from_ticks` are left out of device_traces (a
  // recording window's snapshot starts at the window).
  formats::SnapshotData snapshot(const TimeMap& time, uint64_t from_ticks = 0) const;

  const MemoryCounts& counts() const { return counts_; }
  // Forgets history entries older than `ticks` (a flight recorder keeps the
  // last NB_KEEP of it); the live allocations stay.
  void forget_before(uint64_t ticks);
  // Each change of the curve, as it happens (the trace's counters).
  void on_point(std::function<void(const MemoryPoint&)> f) { on_point_ = std::move(f); }
  // Bytes live now on `device` (at the program's end, once it ended), and
  // the most that were live at once.
  uint64_t live_bytes(int device) const;
  uint64_t peak_bytes(int device) const;
  // The program ended (a record flagged teardown came): its state then is
  // what the snapshot's segments and live_bytes show.
  bool ended() const { return ended_; }

 private:
  struct Live {
    uint64_t size;
    int device;
    uint64_t stream;
    bool mapped;  // cuMemMap'ed range (virtual memory), not an allocation
    bool async;   // stream-ordered, from a memory pool
    uint32_t stack;  // StackTable id of the allocating call (0 = none)
  };
  // The history, one fact per change, expanded into the snapshot's entries
  // only as they are written: an allocation or a mapping is two entries
  // (segment_alloc or segment_map, then alloc), a free or an unmap three
  // (free_requested, free_completed, segment_free or segment_unmap), an
  // OOM one. A million entries cost about 19 MB this way (56 MB as
  // entries, and as much again to copy them for writing).
  enum class FactKind : uint8_t { Alloc, Map, Free, Unmap, Oom };
  struct Fact {
    uint64_t ticks;   // Free, Unmap: when requested
    uint64_t done;    // Free, Unmap: when completed (else ticks)
    uint64_t addr;    // Oom: the free bytes the device reported
    uint64_t size, stream;
    uint32_t stack;
    uint16_t device;
    FactKind kind;
  };
  static size_t entries_of(FactKind k) { return k == FactKind::Oom ? 1 : k <= FactKind::Map ? 2 : 3; }
  // Entry `i` of fact `f`, as the snapshot has it (time still in ticks).
  static formats::TraceEntry entry_of(const Fact& f, size_t i, uint64_t& ticks);
  void push(const Fact& f);
  void add_live(uint64_t addr, const Live& l);
  void remove_live(uint64_t addr, const Live& l);
  void release(uint64_t addr, const Live& l, uint64_t t_req, uint64_t t_done, bool unmap, uint32_t stack);

  size_t max_entries_;
  // Deques, not vectors: both grow to millions of entries, and a vector's
  // doubling would copy tens of MB in one collector pass, long enough for
  // the threads' rings to overflow meanwhile.
  std::deque<Fact> ring_;  // oldest first
  size_t front_skip_ = 0;  // entries of the oldest fact already pushed out
  size_t entries_ = 0;     // entries the ring holds (at most max_entries_)
  std::unordered_map<uint64_t, Live> live_;
  std::unordered_map<uint64_t, int> vmm_handles_;  // cuMemCreate handle → device
  void grow_devices(int device);
  void note_point(uint64_t ticks, int device);
  std::vector<uint64_t> live_bytes_, peak_bytes_;  // per device
  std::vector<uint64_t> async_bytes_;   // per device: live stream-ordered (pool) allocations
  struct PoolReserved {
    int device;
    uint64_t bytes;  // latest the pool reported
  };
  std::unordered_map<uint64_t, PoolReserved> pools_;  // by pool handle
  uint64_t pools_reserved(int device) const;
  std::function<void(const MemoryPoint&)> on_point_;
  MemoryCounts counts_;
  // The state at the program's end, kept when its first teardown record
  // comes. The snapshot is that state with the history up to it: MemoryViz
  // replays the history backwards from the segments, so what teardown frees
  // after it is counted (and in the trace) but not in the history.
  bool ended_ = false;
  bool in_teardown_ = false;  // the record being applied is teardown
  std::unordered_map<uint64_t, Live> end_live_;
  std::vector<uint64_t> end_live_bytes_;
};

}  // namespace nb
