// Helpers for the `fill` blocks of hook_table.h: turn a call's arguments into
// record fields. Everything here runs after the real call returned, on the
// calling thread; the only slow paths are first sightings of a kernel handle.
#pragma once
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "core/record.h"

namespace nb::shim {

template <typename T>
inline uint64_t handle(T* p) { return reinterpret_cast<uint64_t>(p); }
inline uint64_t handle(unsigned long long v) { return v; }

// Device of the calling thread's current context (-1 if none).
int current_device();
int prop_device(const CUmemAllocationProp* prop);
// Stream-ordered allocations and frees: the bytes a memory pool holds after
// the call (`pool` 0 = the device's current pool; for a free that is the
// pool asked, which may not be the freed block's), into r.aux, the pool into
// r.ptr2, with record_flag::kPoolReserved; nothing if the driver cannot say.
void note_pool_reserved(Record& r, uint64_t pool, int device);
// Free bytes the device reports (for OOM records).
uint64_t device_free_bytes();

// Stream capture. Work enqueued on a stream being captured into a graph
// does not run then: its record must not wait for device records (the
// order join would give them to it, the footer would count it missing).
// The hooks of cu/cudaStreamBeginCapture and EndCapture (Kind::Capture,
// whose fill runs even when nb is not recording) keep the set of streams
// capturing; while it is not empty, a call that makes device work asks the
// driver whether its own stream is capturing (cuStreamIsCapturing: a
// stream can also join a capture through an event), so calls outside
// captures pay one relaxed load. Begin and end are idempotent per stream,
// so a runtime call and the driver call inside it may both report them.
extern std::atomic<int> g_captures;  // streams capturing (begun, not ended)
void note_capture_begin(Record& r, int32_t rc);
void note_capture_end(Record& r, int32_t rc);
// After a device-work call: flags it record_flag::kCaptured if its stream
// is being captured.
void note_captured(Record& r);
inline void note_captured_if_capturing(Record* own, int32_t rc) {
  if (own != nullptr && rc == 0 && is_device_work_kind(own->kind) &&
      __builtin_expect(g_captures.load(std::memory_order_relaxed) > 0, 0)) {
    note_captured(*own);
  }
}

// Interned kernel names (0 = unknown), cached per thread by handle.
uint32_t kernel_name(CUfunction f);
uint32_t kernel_name(CUkernel k);
uint32_t stub_name(const void* host_stub);  // runtime launches: the host stub's symbol
void forget_kernel_names();                 // after a module/library unload

inline void copy(Record& r, uint64_t dst, uint64_t src, size_t n, CopyKind kind, const void* stream) {
  r.ptr = dst;
  r.ptr2 = src;
  r.bytes = n;
  r.aux = static_cast<uint64_t>(kind);
  r.stream = reinterpret_cast<uint64_t>(stream);
}

inline void set(Record& r, uint64_t dst, size_t n, const void* stream) {
  r.ptr = dst;
  r.bytes = n;
  r.stream = reinterpret_cast<uint64_t>(stream);
}

CopyKind copy_kind(CUmemorytype src, CUmemorytype dst);
inline void copy2d(Record& r, const CUDA_MEMCPY2D* p, const void* stream) {
  if (p == nullptr) return;
  copy(r, p->dstDevice ? p->dstDevice : handle(p->dstHost), p->srcDevice ? p->srcDevice : handle(p->srcHost),
       p->WidthInBytes * p->Height, copy_kind(p->srcMemoryType, p->dstMemoryType), stream);
}
inline void copy3d(Record& r, const CUDA_MEMCPY3D* p, const void* stream) {
  if (p == nullptr) return;
  copy(r, p->dstDevice ? p->dstDevice : handle(p->dstHost), p->srcDevice ? p->srcDevice : handle(p->srcHost),
       p->WidthInBytes * p->Height * p->Depth, copy_kind(p->srcMemoryType, p->dstMemoryType), stream);
}

CopyKind rt_copy_kind(cudaMemcpyKind k);

}  // namespace nb::shim
