// What one recording accumulates from the drained records: the host calls
// kept for the timeline, per-API statistics for the table, the memory
// history, and the names of the threads seen. No threads, no I/O: the
// collector feeds it, output.cpp reads it, tests drive it directly.
#pragma once
#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "collector/device_record.h"
#include "collector/memory_tracker.h"
#include "core/record.h"
#include "core/api.h"

namespace nb {

struct ApiStats {  // durations in ticks
  uint64_t calls = 0;
  uint64_t total = 0;
  uint64_t min = UINT64_MAX;
  uint64_t max = 0;
  uint64_t errors = 0;
};

// Records kept for the timeline, in fixed chunks: growing never copies what
// is stored (a reallocating vector stalls the collector for as long as it
// takes to copy everything, and the rings overflow meanwhile).
template <typename T>
class ChunkedLog {
 public:
  static constexpr size_t kChunk = 8192;
  void push_back(const T& r) {
    if (size_ % kChunk == 0) chunks_.emplace_back(new T[kChunk]);
    chunks_.back()[size_ % kChunk] = r;
    ++size_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  template <typename F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < size_; ++i) f((*this)[i]);
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};
using RecordLog = ChunkedLog<Record>;

struct DeviceStats {  // durations in ns
  DeviceKind kind = DeviceKind::Kernel;
  uint64_t calls = 0;
  uint64_t total = 0;
  uint64_t min = UINT64_MAX;
  uint64_t max = 0;
};

// Memory records reach the tracker in time order, not in the order the
// rings were drained (a free on one thread and the allocation that reuses
// its address on another can sit in two rings): they wait here and are
// applied, sorted, once older than a horizon (ticks), or all at the end.
// One feed spans the whole run, across recording windows: a window's
// snapshot needs the allocations made before it began.
class MemoryFeed {
 public:
  explicit MemoryFeed(size_t max_entries) : memory_(max_entries) {}
  void consume(const Record& r);  // memory kinds only; others are ignored
  void apply(uint64_t horizon);
  void apply_all() { apply(UINT64_MAX); }
  bool pending() const { return !pending_memory_.empty(); }
  const MemoryTracker& tracker() const { return memory_; }

 private:
  MemoryTracker memory_;
  // A min-heap on (effect time, arrival): a pass costs O(log n) per record,
  // not a sort of everything still waiting (100 ms of a burst of frees can
  // be 100,000 records).
  // The heap holds small keys; the records stay put in `pending_slots_`
  // (slots are reused through a free list), so nothing 128 bytes long is
  // moved while the heap is kept.
  struct PendingKey {
    uint64_t time;
    uint64_t arrival;
    uint32_t slot;
    bool operator>(const PendingKey& o) const { return time != o.time ? time > o.time : arrival > o.arrival; }
  };
  std::vector<PendingKey> pending_memory_;
  std::vector<Record> pending_slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t memory_arrivals_ = 0;
};


struct SessionLimits {
  size_t trace_max_events = 1000000;
  size_t mem_max_entries = 1000000;
};

class Session {
 public:
  // With its own memory feed (the whole run is one window), or sharing the
  // collector's, which then feeds it memory records itself.
  explicit Session(const SessionLimits& limits)
      : limits_(limits), feed_(std::make_shared<MemoryFeed>(limits.mem_max_entries)), own_feed_(true) {}
  Session(const SessionLimits& limits, std::shared_ptr<MemoryFeed> shared)
      : limits_(limits), feed_(std::move(shared)), own_feed_(false) {}

  void consume(const Record& r);
  void consume(const DeviceRecord& d);
  void consume(const CorrelationLink& l) { links_.push_back(l); }
  void apply_memory(uint64_t horizon) { feed_->apply(horizon); }
  void apply_all_memory() { feed_->apply_all(); }
  bool memory_pending() const { return feed_->pending(); }
  void note_thread(uint32_t tid, const char* name);

  const RecordLog& records() const { return records_; }
  // Indexed by ApiId; calls == 0 for APIs never called.
  const std::array<ApiStats, kApiCount>& api_stats() const { return api_stats_; }
  const MemoryTracker& memory() const { return feed_->tracker(); }
  // NVTX ranges (Kind::Nvtx records), for user_annotation spans.
  const std::vector<Record>& nvtx_ranges() const { return nvtx_; }
  const ChunkedLog<DeviceRecord>& device_records() const { return device_; }
  // Join mode "order": which host record made the call of a correlation id.
  const std::vector<CorrelationLink>& correlation_links() const { return links_; }
  // Indexed by the record's name id.
  const std::unordered_map<uint32_t, DeviceStats>& device_stats() const { return device_stats_; }
  uint64_t device_consumed() const { return device_consumed_; }
  uint64_t device_overflow() const { return device_overflow_; }
  const std::map<uint32_t, std::string>& threads() const { return threads_; }
  uint64_t consumed() const { return consumed_; }
  uint64_t trace_overflow() const { return trace_overflow_; }  // not in the timeline, still in the table
  // Earliest start and latest end, in ticks.
  uint64_t first() const { return first_; }
  uint64_t last() const { return last_; }

 private:
  SessionLimits limits_;
  RecordLog records_;
  std::array<ApiStats, kApiCount> api_stats_{};
  std::shared_ptr<MemoryFeed> feed_;
  bool own_feed_;
  std::vector<Record> nvtx_;
  ChunkedLog<DeviceRecord> device_;
  std::vector<CorrelationLink> links_;
  std::unordered_map<uint32_t, DeviceStats> device_stats_;
  uint64_t device_consumed_ = 0;
  uint64_t device_overflow_ = 0;
  std::map<uint32_t, std::string> threads_;
  uint64_t consumed_ = 0;
  uint64_t trace_overflow_ = 0;
  uint64_t first_ = UINT64_MAX;
  uint64_t last_ = 0;
};

}  // namespace nb
