// One piece of device work as CUPTI reported it, reduced to what the outputs
// need. Times are CLOCK_MONOTONIC nanoseconds: CUPTI reads the host clock
// through our timestamp callback, so device and host times share a clock.
#pragma once
#include <cstdint>

namespace nb {

enum class DeviceKind : uint8_t { Kernel, Memcpy, Memset };

struct DeviceRecord {
  DeviceKind kind = DeviceKind::Kernel;
  uint8_t copy_kind = 0;    // CUpti_ActivityMemcpyKind
  uint8_t src_kind = 0;     // CUpti_ActivityMemoryKind
  uint8_t dst_kind = 0;
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  uint32_t correlation = 0;
  uint32_t name = 0;        // NameTable id: demangled kernel name, or "Memcpy HtoD (...)" etc.
  uint32_t raw_name = 0;    // kernels: NameTable id of CUPTI's name as given (mangled, as the hooks intern it)
  uint64_t start = 0;       // monotonic ns
  uint64_t end = 0;
  uint64_t bytes = 0;       // copies and sets
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers = 0;
  int32_t shared_memory = 0;  // static + dynamic
  uint32_t graph_id = 0;
  uint64_t graph_node_id = 0;
};

// Host record `host_id` made the call whose device work carries
// `correlation` (join mode "order": found by collector/order_join.h).
struct CorrelationLink {
  uint64_t host_id = 0;
  uint32_t correlation = 0;
  uint32_t host_tid = 0;       // the call's thread and start (monotonic ns): the arrow's tail
  uint64_t host_start_ns = 0;
  uint32_t host_range = 0;     // the call's NVTX range, step and stack (Record::range, step, stack)
  uint32_t host_step = 0;
  uint32_t host_stack = 0;
};

// Where the call that made a piece of device work was (TraceBuilder::device).
struct CallOrigin {
  bool joined = false;
  uint32_t range = 0;  // Record::range
  uint32_t step = 0;   // Record::step
  uint32_t stack = 0;  // Record::stack (a StackTable id), 0 = none
};

}  // namespace nb
