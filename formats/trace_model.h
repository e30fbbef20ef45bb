// Plain data for the Chrome trace writer: what the collector hands over when a
// recording ends. No CUDA types, no globals; times are absolute nanoseconds
// since the Unix epoch, so the writer alone decides how they are printed.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "formats/ranking_table.h"
#include "formats/snapshot_model.h"

namespace nb::formats {

// Kineto's event categories (the "cat" of its Chrome traces); HTA and Perfetto key
// on these exact strings.
enum class Category : uint8_t {
  CudaRuntime,
  CudaDriver,
  Kernel,
  GpuMemcpy,
  GpuMemset,
  UserAnnotation,
  GpuUserAnnotation,
  Overhead,
};
const char* category_name(Category c);

// One argument of an event. Keys are string literals (static storage).
// `View` text is not copied: it must outlive the writing of its event (the
// builder's name caches, string literals); `Hex` prints `u` as "0x...".
struct Arg {
  // Name: `u` indexes the names events are named from (EventText's), so a
  // kernel's name on every launch is escaped once.
  // Trivially copyable (no owned text), so that building an event's args
  // is a few stores: a view must outlive the event's writing.
  enum class Type : uint8_t { Int, UInt, Double, View, Hex, Dim3, Name };
  std::string_view key = "";  // a literal: its length is known where it is written
  Type type = Type::Int;
  union {  // the one `type` names (Name and Hex: u)
    int64_t i = 0;
    uint64_t u;
    double d;
    uint32_t dim[3];
  };
  std::string_view v;

  static Arg integer(std::string_view k, int64_t v) { Arg a; a.key = k; a.type = Type::Int; a.i = v; return a; }
  static Arg uinteger(std::string_view k, uint64_t v) { Arg a; a.key = k; a.type = Type::UInt; a.u = v; return a; }
  static Arg real(std::string_view k, double v) { Arg a; a.key = k; a.type = Type::Double; a.d = v; return a; }
  static Arg view(std::string_view k, std::string_view v) { Arg a; a.key = k; a.type = Type::View; a.v = v; return a; }
  static Arg name(std::string_view k, uint32_t index) { Arg a; a.key = k; a.type = Type::Name; a.u = index; return a; }
  static Arg hex(std::string_view k, uint64_t v) { Arg a; a.key = k; a.type = Type::Hex; a.u = v; return a; }
  static Arg dim3(std::string_view k, uint32_t x, uint32_t y, uint32_t z) {
    Arg a; a.key = k; a.type = Type::Dim3; a.dim[0] = x; a.dim[1] = y; a.dim[2] = z; return a;
  }
};

static_assert(std::is_trivially_copyable_v<Arg>);

// An event's arguments: a vector whose append is a store and a bump, inlined
// where the collector builds an event's ten or so arguments a million times
// (std::vector's out-of-line emplace_back was a tenth of the collector's time).
// Room grows (out of line, rarely) and is kept across clear().
class ArgList {
 public:
  ArgList() = default;
  ArgList(std::initializer_list<Arg> args) { *this = args; }
  ArgList(const ArgList& o) { *this = o; }
  // Events are swapped (emit_device): moved, not copied.
  ArgList(ArgList&& o) noexcept : room_(std::move(o.room_)), size_(o.size_) { o.size_ = 0; }
  ArgList& operator=(ArgList&& o) noexcept {
    room_.swap(o.room_);  // o keeps our room, none of our arguments
    size_ = o.size_;
    o.size_ = 0;
    return *this;
  }
  ArgList& operator=(const ArgList& o) {
    if (this != &o) assign(o.begin(), o.size());
    return *this;
  }
  ArgList& operator=(std::initializer_list<Arg> args) {
    assign(args.begin(), args.size());
    return *this;
  }
  void push_back(const Arg& a) {
    const Arg copy = a;  // `a` may be one of ours, moved by grow()
    if (size_ == room_.size()) grow();
    room_[size_++] = copy;
  }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > room_.size()) room_.resize(n);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Arg& operator[](size_t i) const { return room_[i]; }
  const Arg* begin() const { return room_.data(); }
  const Arg* end() const { return room_.data() + size_; }

 private:
  void assign(const Arg* a, size_t n) {
    reserve(n);
    std::copy(a, a + n, room_.begin());
    size_ = n;
  }
  [[gnu::noinline]] void grow() { room_.resize(room_.empty() ? 16 : room_.size() * 2); }
  std::vector<Arg> room_;
  size_t size_ = 0;
};

// A complete ("X") event. `name` indexes TraceData::names so that a name used
// by a million launches is stored and escaped once; `label`, when not empty,
// is the name instead (names used once, such as ProfilerStep#N).
struct Event {
  uint32_t name = 0;
  std::string label;
  uint32_t stack = 0;  // a call stack in TraceData::stacks ("sf"), 0 = none
  Category cat = Category::CudaRuntime;
  int64_t pid = 0;
  int64_t tid = 0;
  uint64_t ts_ns = 0;
  uint64_t dur_ns = 0;
  ArgList args;
};

// One end of a launch → device-work arrow ("ac2g" flow pair).
struct Flow {
  uint64_t id = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  uint64_t ts_ns = 0;
  bool start = true;  // "s" at the host call, "f" (bp "e") at the device event
};

// A counter sample ("C"): one track per key, e.g. allocated / reserved bytes.
struct Counter {
  uint32_t name = 0;  // index into TraceData::names
  int64_t pid = 0;
  uint64_t ts_ns = 0;
  std::vector<std::pair<const char*, double>> values;
};

struct ProcessInfo {
  int64_t pid = 0;
  std::string name;
  int64_t sort_index = 0;
};

struct ThreadInfo {
  int64_t pid = 0;
  int64_t tid = 0;
  std::string name;
  int64_t sort_index = 0;
};

// deviceProperties, with Kineto's keys.
struct DeviceProperties {
  int id = 0;
  std::string name;
  uint64_t total_global_mem = 0;
  int compute_major = 0, compute_minor = 0;
  int max_threads_per_block = 0, max_threads_per_multiprocessor = 0;
  int regs_per_block = 0, warp_size = 0, shared_mem_per_block = 0, num_sms = 0;
  int regs_per_multiprocessor = 0, shared_mem_per_block_optin = 0;
  int shared_mem_per_multiprocessor = 0;
};

// What the run's memory did and when it ended, as data for `nbprof report`
// (written as "nbRun", see chrome_trace.h). Times are epoch ns, like events'.
struct RunSummary {
  bool present = false;        // write "nbRun" at all
  int64_t program_end_ns = 0;  // 0: the program did not end inside this file
  struct Step {
    uint64_t number;
    int64_t start_ns;
    uint64_t dur_ns;
    int64_t tid;
  };
  std::vector<Step> steps;
  bool steps_complete = true;   // false: more steps than kept; "steps" is null (read the events)
  struct Point {
    int64_t ts_ns;
    uint64_t allocated, reserved;
  };
  std::vector<std::pair<int, std::vector<Point>>> memory;  // by device
  bool memory_complete = true;  // false: more points than kept; "memory" is null (read the counters)
  uint64_t teardown_frees = 0, teardown_bytes = 0;
};

// Which rank of a job the trace is, as Kineto writes it ("distributedInfo"):
// HTA takes each trace's rank from the first `"rank": N` in the file.
struct DistributedInfo {
  bool present = false;
  int64_t rank = 0;
  int64_t world_size = -1;    // -1: unknown, left out
  int64_t local_rank = -1;
  std::string backend;        // "nccl" when NCCL is loaded in the process; "" = left out
  std::string nccl_version;   // "2.21.5"
};

struct TraceData {
  std::vector<std::string> names;  // event names, indexed by Event::name
  uint64_t base_time_ns = 0;       // ts are printed relative to this
  std::vector<DeviceProperties> devices;
  DistributedInfo distributed;
  std::vector<std::pair<std::string, int64_t>> top_level_ints;  // e.g. cuda_driver_version
  std::vector<ProcessInfo> processes;
  std::vector<ThreadInfo> threads;
  std::vector<Event> events;
  std::vector<Flow> flows;
  std::vector<Counter> counters;
  std::string trace_name;
  // The call stacks events refer to (Event::stack), each written once.
  std::vector<std::pair<uint32_t, Stack>> stacks;
  uint64_t stacks_ts_ns = 0;  // where their slices sit on the timeline
  RankingTable table;  // written as "nbTable" (see chrome_trace.h)
  RunSummary run;      // written as "nbRun"
};

}  // namespace nb::formats
