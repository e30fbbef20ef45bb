// Plain data for the memory snapshot writer: the dict that
// torch.cuda.memory._dump_snapshot() writes (torch/cuda/memory.py), in a
// form the collector can fill without Python. Stacks are shared: entries refer
// to them by index, and the writer stores each distinct stack once.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace nb::formats {

struct Frame {
  std::string filename;
  int64_t line = 0;
  std::string name;
};
using Stack = std::vector<Frame>;  // innermost first

enum class BlockState : uint8_t { ActiveAllocated, ActivePendingFree, Inactive };
const char* block_state_name(BlockState s);

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;
  uint64_t requested_size = 0;
  BlockState state = BlockState::ActiveAllocated;
  uint32_t stack = 0;  // index into SnapshotData::stacks
};

struct Segment {
  int device = 0;
  uint64_t address = 0;
  uint64_t total_size = 0;
  uint64_t allocated_size = 0;
  uint64_t active_size = 0;
  uint64_t requested_size = 0;
  uint64_t stream = 0;
  bool large = true;  // segment_type "large" | "small"
  std::pair<int64_t, int64_t> pool_id{0, 0};
  bool is_expandable = false;
  uint32_t stack = 0;
  std::vector<Block> blocks;  // contiguous, address order, sizes sum to total_size
};

enum class Action : uint8_t {
  Alloc,
  FreeRequested,
  FreeCompleted,
  SegmentAlloc,
  SegmentFree,
  SegmentMap,
  SegmentUnmap,
  Snapshot,
  Oom,
};
const char* action_name(Action a);

struct TraceEntry {
  Action action = Action::Alloc;
  uint64_t addr = 0;        // for Oom: unused (device_free is written instead)
  uint64_t size = 0;
  uint64_t stream = 0;
  int64_t time_us = 0;      // microseconds since the Unix epoch
  uint64_t device_free = 0; // Oom only: free bytes the device reported
  uint32_t stack = 0;
};

using TraceSink = std::function<void(const TraceEntry&)>;
using SegmentSink = std::function<void(const Segment&)>;

struct SnapshotData {
  std::vector<Stack> stacks{Stack{}};  // stacks[0] is the empty stack
  std::vector<Segment> segments;
  // Or, when set, the segments are made as they are written, in order.
  std::function<void(const SegmentSink& put)> segment_source;
  std::vector<std::vector<TraceEntry>> device_traces;  // index = device number
  // Or, when set, the history is read as it is written: devices
  // 0..trace_devices-1, each's entries oldest first, handed to the sink (a
  // history of a million entries is not copied first).
  std::function<void(size_t device, const TraceSink& put)> trace_source;
  size_t trace_devices = 0;
  // allocator_settings: free-form, shown by the viewer as JSON.
  std::vector<std::pair<std::string, std::string>> allocator_settings;
};

// The history as vectors, and the segments, whichever way `s` holds them.
std::vector<std::vector<TraceEntry>> traces_of(const SnapshotData& s);
std::vector<Segment> segments_of(const SnapshotData& s);

}  // namespace nb::formats
