#include "collector/device_tracer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/clock.h"
#include "core/demangle.h"

namespace nb {

namespace {

constexpr size_t kBufferBytes = 1u << 20;
constexpr size_t kBufferAlign = 8;  // CUPTI's requirement

DeviceTracer* g_tracer = nullptr;

// CUPTI reads the host clock through this, so device times land on the
// monotonic clock that the host records are converted against.
uint64_t CUPTIAPI timestamp() { return monotonic_ns(); }

// CUPTI's callbacks are called from C: nothing may be thrown through them.
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  try {
    if (g_tracer) g_tracer->on_buffer_request(buffer, size, max_records);
  } catch (...) {
  }
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  if (g_tracer) g_tracer->on_buffer_complete(buffer, valid_size);  // catches inside
}

const char* memory_kind_name(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "Managed Static";
    default: return "Unknown";
  }
}

const char* copy_kind_name(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Unknown";
  }
}

}  // namespace

bool DeviceTracer::load(const std::string& cupti_lib, std::string& why) {
  return load_cupti(cupti_lib, api_, why);
}

namespace {
void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
}  // namespace

bool DeviceTracer::claim(std::string& why) {
  CUpti_SubscriberHandle probe = nullptr;
  const CUptiResult r = api_.cuptiSubscribe(&probe, ignore_callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    why = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
              ? "CUPTI is already used by another tool in this process (a profiler?)"
              : "cuptiSubscribe: " + api_.error(r);
    return false;
  }
  api_.cuptiUnsubscribe(probe);
  return true;
}

bool DeviceTracer::enable(const DeviceTracerConfig& config, std::string& why) {
  max_buffers_ = config.pool_bytes / kBufferBytes;
  if (max_buffers_ < 2) max_buffers_ = 2;
  free_buffers_.reserve(max_buffers_);  // returning a buffer never allocates
  // Reserved, not touched: the queue never doubles (two copies at once).
  queue_.reserve(kMaxQueued);
  g_tracer = this;

  // The timestamp callback must be in place before any kind is enabled.
  CUptiResult r = api_.cuptiActivityRegisterTimestampCallback(timestamp);
  if (r != CUPTI_SUCCESS) {
    why = "cuptiActivityRegisterTimestampCallback: " + api_.error(r);
    return false;
  }
  r = api_.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    why = "cuptiActivityRegisterCallbacks: " + api_.error(r);
    return false;
  }
  // CONCURRENT_KERNEL, not KERNEL: the latter serialises kernels.
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                               CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET}) {
    r = api_.cuptiActivityEnable(k);
    if (r != CUPTI_SUCCESS) {
      why = "cuptiActivityEnable(" + std::to_string(static_cast<int>(k)) + "): " + api_.error(r);
      stop();
      return false;
    }
  }
  running_ = true;
  return true;
}

void DeviceTracer::stop() {
  if (api_.cuptiActivityDisable == nullptr || handed_over()) return;
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                               CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET}) {
    api_.cuptiActivityDisable(k);
  }
  running_ = false;
}

namespace {
const CUpti_ActivityKind kWorkKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET};
}  // namespace

void DeviceTracer::pause() {
  std::lock_guard<std::mutex> lock(pause_mu_);
  if (!running_ || paused_ || handed_over() || api_.cuptiActivityDisable == nullptr) return;
  for (CUpti_ActivityKind k : kWorkKinds) api_.cuptiActivityDisable(k);
  paused_ = true;
}

void DeviceTracer::resume() {
  std::lock_guard<std::mutex> lock(pause_mu_);
  if (!running_ || !paused_ || handed_over()) return;
  for (CUpti_ActivityKind k : kWorkKinds) api_.cuptiActivityEnable(k);
  paused_ = false;
}

void DeviceTracer::flush(bool forced) {
  if (api_.cuptiActivityFlushAll == nullptr || handed_over()) return;
  api_.cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

void DeviceTracer::hand_over() {
  std::lock_guard<std::mutex> lock(pause_mu_);
  if (handed_over() || api_.cuptiActivityFlushAll == nullptr) return;
  if (running_) {
    api_.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (CUpti_ActivityKind k : kWorkKinds) api_.cuptiActivityDisable(k);
  }
  running_ = false;
  handed_over_.store(true, std::memory_order_release);
}

void DeviceTracer::take(std::vector<DeviceRecord>& records, size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  const size_t left = queue_.size() - queue_head_;
  const size_t n = std::min(max, left);
  const auto from = queue_.begin() + static_cast<std::ptrdiff_t>(queue_head_);
  if (max == SIZE_MAX && records.capacity() < n) {
    // All of it, and no room where it goes: handed over whole, with no
    // allocation (the end's path, where memory may have run out; the queue
    // keeps no room after it).
    queue_.erase(queue_.begin(), from);
    queue_head_ = 0;
    records.clear();
    records.swap(queue_);
    return;
  }
  try {
    records.assign(from, from + static_cast<std::ptrdiff_t>(n));  // in the room it has, mostly
  } catch (...) {
    records.clear();  // no memory for a piece: taken on a later pass
    return;
  }
  queue_head_ += n;
  if (queue_head_ == queue_.size()) {
    queue_.clear();
    queue_head_ = 0;
  } else if (queue_head_ > queue_.size() / 2) {
    // What was taken goes once it is most of the vector: bounded, and cheap.
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(queue_head_));
    queue_head_ = 0;
  }
}

bool DeviceTracer::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_head_ < queue_.size();
}

DeviceTracerCounts DeviceTracer::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

void DeviceTracer::on_buffer_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  std::lock_guard<std::mutex> lock(mu_);
  uint8_t* b = nullptr;
  if (!free_buffers_.empty()) {
    b = free_buffers_.back();
    free_buffers_.pop_back();
  } else if (allocated_buffers_ < max_buffers_) {
    b = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    if (b != nullptr) ++allocated_buffers_;
  }
  if (b == nullptr) {
    // No buffer: CUPTI drops what it cannot store and counts it.
    ++counts_.refused_buffers;
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = b;
  *size = kBufferBytes;
}

uint32_t DeviceTracer::kernel_name(const char* mangled, uint32_t& raw) {
  raw = 0;
  if (mangled == nullptr) return names_.intern("unknown kernel");
  auto it = kernel_names_.find(mangled);
  if (it != kernel_names_.end()) {
    raw = it->second.raw;
    return it->second.demangled;
  }
  const KernelNames n{names_.intern(demangle(mangled).c_str()), names_.intern(mangled)};
  kernel_names_.emplace(mangled, n);
  raw = n.raw;
  return n.demangled;
}

uint32_t DeviceTracer::copy_name(uint8_t copy_kind, uint8_t src, uint8_t dst) {
  const uint32_t key = (1u << 24) | (uint32_t(copy_kind) << 16) | (uint32_t(src) << 8) | dst;
  auto it = fixed_names_.find(key);
  if (it != fixed_names_.end()) return it->second;
  const std::string name = std::string("Memcpy ") + copy_kind_name(copy_kind) + " (" + memory_kind_name(src) +
                           " -> " + memory_kind_name(dst) + ")";
  return fixed_names_[key] = names_.intern(name);
}

uint32_t DeviceTracer::set_name(uint8_t dst) {
  const uint32_t key = (2u << 24) | dst;
  auto it = fixed_names_.find(key);
  if (it != fixed_names_.end()) return it->second;
  return fixed_names_[key] = names_.intern(std::string("Memset (") + memory_kind_name(dst) + ")");
}

namespace {

// The fields every kind of activity record nb reads has under one name.
template <typename Activity>
DeviceRecord common_fields(DeviceKind kind, const Activity& a) {
  DeviceRecord d;
  d.kind = kind;
  d.device = a.deviceId;
  d.context = a.contextId;
  d.stream = a.streamId;
  d.correlation = a.correlationId;
  d.start = a.start;
  d.end = a.end;
  d.graph_id = a.graphId;
  d.graph_node_id = a.graphNodeId;
  return d;
}

}  // namespace

template <typename CopyActivity>
DeviceRecord DeviceTracer::copy_record(const CopyActivity& m) {
  DeviceRecord d = common_fields(DeviceKind::Memcpy, m);
  d.copy_kind = m.copyKind;
  d.src_kind = m.srcKind;
  d.dst_kind = m.dstKind;
  d.bytes = m.bytes;
  d.name = copy_name(m.copyKind, m.srcKind, m.dstKind);
  return d;
}

void DeviceTracer::on_buffer_complete(uint8_t* buffer, size_t valid_size) {
  uint64_t other = 0;
  bool failed = false;
  CUpti_Activity* rec = nullptr;
  // Parsing holds only parse_mu_ (the name caches and the parsed records;
  // two flushes may deliver buffers on two threads), not mu_: buffer
  // requests come from application threads inside CUDA calls and must not
  // wait for a whole buffer's parse. The parsed records go into a vector
  // kept from buffer to buffer: a new one each time would leave megabytes
  // freed but resident in the allocator.
  std::lock_guard<std::mutex> parse_lock(parse_mu_);
  std::vector<DeviceRecord>& local = parsed_;
  local.clear();
  try {
  while (buffer != nullptr && api_.cuptiActivityGetNextRecord(buffer, valid_size, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        DeviceRecord d = common_fields(DeviceKind::Kernel, *k);
        d.name = kernel_name(k->name, d.raw_name);
        d.grid[0] = k->gridX; d.grid[1] = k->gridY; d.grid[2] = k->gridZ;
        d.block[0] = k->blockX; d.block[1] = k->blockY; d.block[2] = k->blockZ;
        d.registers = k->registersPerThread;
        d.shared_memory = k->staticSharedMemory + k->dynamicSharedMemory;
        local.push_back(d);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        local.push_back(copy_record(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec)));
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2:  // peer copies: the same fields
        local.push_back(copy_record(*reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(rec)));
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        DeviceRecord d = common_fields(DeviceKind::Memset, *m);
        d.dst_kind = static_cast<uint8_t>(m->memoryKind);
        d.bytes = m->bytes;
        d.name = set_name(d.dst_kind);
        local.push_back(d);
        break;
      }
      default:
        ++other;
    }
  }
  } catch (...) {
    failed = true;  // out of memory: what was parsed is kept, the rest is lost
  }
  size_t dropped = 0;
  api_.cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::lock_guard<std::mutex> lock(mu_);
  counts_.cupti_dropped += dropped;
  // A forced flush hands over work the device had not finished: no times.
  const size_t before = local.size();
  local.erase(std::remove_if(local.begin(), local.end(),
                             [](const DeviceRecord& d) { return d.start == 0 || d.end < d.start; }),
              local.end());
  counts_.incomplete += before - local.size();
  counts_.records += local.size();
  counts_.other_records += other;
  if (failed) ++counts_.failed_buffers;
  const size_t waiting = queue_.size() - queue_head_;
  const size_t room = waiting < kMaxQueued ? kMaxQueued - waiting : 0;
  if (local.size() > room) {
    counts_.overflow += local.size() - room;
    local.resize(room);
  }
  try {
    queue_.insert(queue_.end(), local.begin(), local.end());
  } catch (...) {
    ++counts_.failed_buffers;
  }
  if (buffer != nullptr) free_buffers_.push_back(buffer);  // reserved: cannot throw
}

}  // namespace nb
