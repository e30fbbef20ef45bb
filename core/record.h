// The fixed-size record a hook pushes into its thread's ring: one per
// intercepted call. Plain data, written by the intercepting thread and read by
// the collector thread; 128 bytes so a record is two cache lines, never shared
// between two slots.
#pragma once
#include <cstdint>

namespace nb {

enum class Kind : uint8_t {
  Other = 0,
  Launch,      // kernel launches (ptr = CUfunction or host stub, name = interned name)
  Graph,       // graph launches (ptr = graph exec)
  Memcpy,      // ptr = dst, ptr2 = src, bytes, aux = CopyKind
  Memset,      // ptr = dst, bytes
  Alloc,       // device allocation: ptr = result, bytes = size, ptr2 = pool
  Free,        // ptr
  VmmCreate,   // cuMemCreate: ptr = handle, bytes
  VmmRelease,  // ptr = handle
  VmmMap,      // ptr = address, bytes, ptr2 = handle
  VmmUnmap,    // ptr = address, bytes
  HostAlloc,   // pinned host memory: ptr, bytes
  HostFree,    // ptr
  Sync,        // synchronize calls
  Module,      // module / library unloads
  Profiler,    // cudaProfilerStart / Stop (NB_STEP=profiler-api)
  Nvtx,        // an NVTX range (start..end, name = interned range name), not a CUDA call
  Capture,     // a stream capture's begin or end (stream)
};

// Direction of a copy, as far as the host call tells it.
enum class CopyKind : uint8_t { Unknown = 0, HtoD, DtoH, DtoD, HtoH, Peer, Default };

namespace record_flag {
constexpr uint8_t kManaged = 1 << 0;  // cuMemAllocManaged / cudaMallocManaged
constexpr uint8_t kAsync = 1 << 1;    // stream-ordered allocation or free
constexpr uint8_t kPoolReserved = 1 << 2;  // aux = bytes the memory pool holds after the call
constexpr uint8_t kStepEnd = 1 << 3;       // this call ended step `step` (NB_STEP), at `end`
// Work on a stream being captured into a graph: recorded as a node, nothing
// ran (its kernels run, and are joined, when the graph is launched).
constexpr uint8_t kCaptured = 1 << 4;
// Made after the program's end (its main returned or it called exit; a
// Python interpreter began finalizing): teardown, not the program's work.
constexpr uint8_t kTeardown = 1 << 5;
}  // namespace record_flag

struct alignas(64) Record {
  uint64_t id;        // process-unique: thread index << 32 | per-thread sequence
  uint64_t start;     // ticks of now_ticks() (core/clock.h)
  uint64_t end;
  uint32_t tid;       // OS thread id
  uint16_t api;       // ApiId (core/api.h)
  Kind kind;
  uint8_t flags;
  int16_t result;     // CUresult / cudaError_t (all below 1000)
  int16_t device;     // -1 = unknown
  // Native + Python stack (NB_STACKS). In the ring: 1 + the low 32 bits of
  // the stack's position in the thread's FrameRing, 0 = none. The collector
  // replaces it with the interned stack id (StackTable) before the record
  // goes on to the session.
  uint32_t stack;
  uint64_t ptr;
  uint64_t ptr2;
  uint64_t bytes;
  uint64_t stream;
  uint64_t aux;       // Memcpy: CopyKind; failed Alloc: free bytes the device reported;
                      // with kPoolReserved: reserved bytes after the call of the pool in ptr2
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem;
  uint32_t name;      // interned kernel name (NameTable), 0 = unknown
  // CUPTI correlation ids seen during the call (callback join): the first
  // (the outermost API CUPTI traced) and the last (the innermost).
  uint32_t corr_first;
  uint32_t corr_last;
  // The step (NB_STEP) the program was in when the call began: steps ended
  // so far, process-wide. The collector maps it to a window (schedule.h).
  uint32_t step;
  // The innermost NVTX thread range open on the calling thread when the call
  // began: the name id of its path ("outer\x1finner", kRangePathSep), 0 =
  // none. For Kind::Nvtx, the range's own path (a process range: its name).
  uint32_t range;
};
// Between the names of a range path (NameTable text): nested NVTX ranges
// are interned as their path, so a range's parents travel with its id.
constexpr char kRangePathSep = '\x1f';
static_assert(sizeof(Record) == 128, "a record is two cache lines");

// Calls about device memory: what the memory snapshot is made of.
inline bool is_memory_kind(Kind k) {
  return k == Kind::Alloc || k == Kind::Free || k == Kind::VmmCreate || k == Kind::VmmRelease ||
         k == Kind::VmmMap || k == Kind::VmmUnmap;
}

// The kinds of call that can give the device work CUPTI reports (launches,
// graph launches, copies, sets): the calls a join traces.
inline bool is_device_work_kind(Kind k) {
  return k == Kind::Launch || k == Kind::Graph || k == Kind::Memcpy || k == Kind::Memset;
}

// A successful call that gives the device work CUPTI reports (a copy only
// if not host to host, nothing captured into a graph): the calls a device
// record should come back for.
inline bool makes_device_work(const Record& r) {
  if (r.result != 0 || !is_device_work_kind(r.kind) || (r.flags & record_flag::kCaptured)) return false;
  return r.kind != Kind::Memcpy || static_cast<CopyKind>(r.aux) != CopyKind::HtoH;
}

}  // namespace nb
