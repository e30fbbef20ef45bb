// Device activity through CUPTI: kernels, copies and sets, on the host
// clock, delivered in buffers from a bounded pool, converted on CUPTI's
// buffer thread into DeviceRecords and queued for the collector.
//
// One instance per process (CUPTI's callbacks are plain functions).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cupti_api.h"
#include "collector/device_record.h"
#include "core/name_table.h"

namespace nb {

struct DeviceTracerConfig {
  size_t pool_bytes;   // NB_CUPTI_BUFFERS_MB
};

struct DeviceTracerCounts {
  uint64_t records = 0;          // device records delivered
  uint64_t cupti_dropped = 0;    // cuptiActivityGetNumDroppedRecords
  uint64_t refused_buffers = 0;  // buffer requests the pool could not serve
  uint64_t other_records = 0;    // kinds nb does not use
  uint64_t failed_buffers = 0;   // buffers only partly kept (out of memory)
  uint64_t incomplete = 0;       // records without timestamps (work unfinished at a forced flush)
  uint64_t overflow = 0;         // parsed records dropped: the collector had not taken kMaxQueued
};

class DeviceTracer {
 public:
  explicit DeviceTracer(NameTable& names) : names_(names) {}

  // Parsed records waiting for the collector, at most (about 100 bytes
  // each): a collector that falls behind must not grow the program.
  static constexpr size_t kMaxQueued = size_t(1) << 15;

  // Loads CUPTI (NB_CUPTI_LIB or the usual places). Nothing is enabled yet.
  bool load(const std::string& cupti_lib, std::string& why);
  // CUPTI (before 13.2) allows one subscriber per process, and its activity
  // callbacks are process-wide: if a profiler (nsys, another tool) already
  // holds it, stay out of its way before touching anything. False (with
  // `why`) when CUPTI is taken.
  bool claim(std::string& why);
  // Registers the clock and buffers and enables activity. False (with `why`)
  // leaves CUPTI off.
  bool enable(const DeviceTracerConfig& config, std::string& why);
  bool running() const { return running_; }
  const CuptiApi& api() const { return api_; }

  // Collector thread: hand over complete buffers (forced: also the ones in
  // flight, after the caller synchronized the device), then take the queue
  // (the oldest `max` records of it at most).
  void flush(bool forced);
  void take(std::vector<DeviceRecord>& records, size_t max = SIZE_MAX);
  bool queued() const;
  // Stops activity (after a forced flush). Idempotent.
  void stop();
  // Between recording windows: activity off, buffers kept; resume() turns
  // it back on. No-ops unless running.
  void pause();
  void resume();
  // Another CUPTI client in the program takes CUPTI over: what CUPTI holds
  // of ours is delivered (forced flush: work still running comes without
  // timestamps, counted as incomplete), our kinds are turned off, and from
  // then on flush, pause, resume and stop leave CUPTI alone.
  void hand_over();
  bool handed_over() const { return handed_over_.load(std::memory_order_acquire); }

  DeviceTracerCounts counts() const;

  // CUPTI's callbacks (static functions forward here).
  void on_buffer_request(uint8_t** buffer, size_t* size, size_t* max_records);
  void on_buffer_complete(uint8_t* buffer, size_t valid_size);

 private:
  // Demangled (what users read) and as given (what the order join compares
  // with the hooks' names).
  uint32_t kernel_name(const char* mangled, uint32_t& raw);
  uint32_t copy_name(uint8_t copy_kind, uint8_t src, uint8_t dst);
  template <typename CopyActivity>
  DeviceRecord copy_record(const CopyActivity& m);
  uint32_t set_name(uint8_t dst);

  NameTable& names_;
  CuptiApi api_;
  bool running_ = false;
  bool paused_ = false;
  std::atomic<bool> handed_over_{false};
  std::mutex pause_mu_;  // pause() on the collector vs resume() on an arming thread
  size_t max_buffers_ = 0;

  mutable std::mutex mu_;  // pool, queue, counts: CUPTI's threads vs the collector
  std::mutex parse_mu_;    // name caches and parsed_, while a buffer is parsed (before mu_)
  std::vector<DeviceRecord> parsed_;  // one buffer's records
  std::vector<uint8_t*> free_buffers_;
  size_t allocated_buffers_ = 0;
  std::vector<DeviceRecord> queue_;  // parsed, for the collector (kMaxQueued at most from queue_head_)
  size_t queue_head_ = 0;            // taken before this
  struct KernelNames {
    uint32_t demangled, raw;
  };
  std::unordered_map<const char*, KernelNames> kernel_names_;  // CUPTI's name pointers are stable
  std::unordered_map<uint32_t, uint32_t> fixed_names_;      // copy/set name keys
  DeviceTracerCounts counts_;
};

}  // namespace nb
