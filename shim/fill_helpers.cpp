#include "shim/fill_helpers.h"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/api.h"
#include "shim/real_functions.h"
#include "shim/runtime.h"

namespace nb::shim {

namespace {

// A driver function the shim calls itself, looked up once per copy of the
// driver (driver_generation: the program may unload libcuda and load it
// again elsewhere).
struct DriverSlot {
  std::atomic<void*> fn{nullptr};
  std::atomic<uint32_t> generation{0};
};

template <typename Fn>
Fn driver_fn(DriverSlot& slot, const char* name) {
  const uint32_t gen = driver_generation();
  void* p = slot.fn.load(std::memory_order_acquire);
  if (p == nullptr || slot.generation.load(std::memory_order_relaxed) != gen) {
    p = driver_symbol(name);
    slot.fn.store(p, std::memory_order_release);
    slot.generation.store(gen, std::memory_order_relaxed);
  }
  return reinterpret_cast<Fn>(p);
}

DriverSlot g_cuCtxGetDevice;
DriverSlot g_cuMemGetInfo;
DriverSlot g_cuDeviceGetMemPool;
DriverSlot g_cuMemPoolGetAttribute;
DriverSlot g_cuFuncGetName;
DriverSlot g_cuKernelGetName;
DriverSlot g_cuStreamIsCapturing;

// ---- kernel names ----
// A per-thread direct-mapped cache in front of a process-wide map. The
// generation changes when a module or library is unloaded (handles can be
// reused), which invalidates every cache at once.
std::atomic<uint32_t> g_name_generation{1};
std::mutex g_name_mu;  // guards g_handle_names; taken on cache misses only
std::unordered_map<uint64_t, uint32_t>& handle_names() {  // made on first use (hooks can run before constructors)
  static auto* m = new std::unordered_map<uint64_t, uint32_t>;
  return *m;
}

struct NameCacheEntry {
  uint64_t key;
  uint32_t generation;
  uint32_t id;
};
constexpr size_t kNameCacheSize = 64;
__thread NameCacheEntry t_name_cache[kNameCacheSize] __attribute__((tls_model("initial-exec")));

// Keys of the three kinds of handle are kept apart by a tag in the top byte
// (user-space addresses use the low 48 bits).
enum : uint64_t { kTagFunction = 1ull << 56, kTagKernel = 2ull << 56, kTagStub = 3ull << 56 };

template <typename Resolve>
uint32_t cached_name(uint64_t key, Resolve&& resolve) {
  const uint32_t gen = g_name_generation.load(std::memory_order_relaxed);
  // Fibonacci hashing: handles are heap addresses with regular strides.
  NameCacheEntry& e = t_name_cache[(key * 0x9E3779B97F4A7C15ull) >> 58];
  static_assert(kNameCacheSize == 64, "the hash above yields 6 bits");
  if (e.key == key && e.generation == gen) return e.id;
  uint32_t id = 0;
  try {
    {
      std::lock_guard<std::mutex> lock(g_name_mu);
      auto it = handle_names().find(key);
      if (it != handle_names().end()) id = it->second;
    }
    if (id == 0) {
      // Resolved without the lock held: dladdr takes the loader lock and
      // cuFuncGetName goes into the driver; neither may wait behind us.
      id = intern_name(resolve());
      std::lock_guard<std::mutex> lock(g_name_mu);
      handle_names().emplace(key, id);
    }
  } catch (...) {
    return 0;  // out of memory: the launch is recorded without its name
  }
  e = NameCacheEntry{key, gen, id};
  return id;
}

const char* function_name(CUfunction f) {
  using FuncGetName = CUresult (*)(const char**, CUfunction);
  using KernelGetName = CUresult (*)(const char**, CUkernel);
  const char* name = nullptr;
  if (auto fn = driver_fn<FuncGetName>(g_cuFuncGetName, "cuFuncGetName"); fn && fn(&name, f) == CUDA_SUCCESS) return name;
  // CUDA 12+ runtimes may launch a CUkernel passed as a CUfunction.
  if (auto fn = driver_fn<KernelGetName>(g_cuKernelGetName, "cuKernelGetName");
      fn && fn(&name, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS) return name;
  return nullptr;
}

const char* kernel_handle_name(CUkernel k) {
  using KernelGetName = CUresult (*)(const char**, CUkernel);
  const char* name = nullptr;
  if (auto fn = driver_fn<KernelGetName>(g_cuKernelGetName, "cuKernelGetName"); fn && fn(&name, k) == CUDA_SUCCESS) return name;
  return function_name(reinterpret_cast<CUfunction>(k));
}

}  // namespace

int current_device() {
  using CtxGetDevice = CUresult (*)(CUdevice*);
  CUdevice d = -1;
  auto fn = driver_fn<CtxGetDevice>(g_cuCtxGetDevice, "cuCtxGetDevice");
  if (fn == nullptr || fn(&d) != CUDA_SUCCESS) return -1;
  return d;
}

int prop_device(const CUmemAllocationProp* prop) {
  if (prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) return prop->location.id;
  return current_device();
}

void note_pool_reserved(Record& r, uint64_t pool, int device) {
  using DeviceGetMemPool = CUresult (*)(CUmemoryPool*, CUdevice);
  using PoolGetAttribute = CUresult (*)(CUmemoryPool, CUmemPool_attribute, void*);
  // A runtime call and the driver call inside it fill the same record: ask once.
  if (r.flags & record_flag::kPoolReserved) return;
  CUmemoryPool p = reinterpret_cast<CUmemoryPool>(pool);
  if (p == nullptr) {
    // cudaMallocAsync / cuMemAllocAsync draw from the device's current pool.
    auto get_pool = driver_fn<DeviceGetMemPool>(g_cuDeviceGetMemPool, "cuDeviceGetMemPool");
    if (device < 0 || get_pool == nullptr || get_pool(&p, device) != CUDA_SUCCESS || p == nullptr) return;
  }
  auto get_attr = driver_fn<PoolGetAttribute>(g_cuMemPoolGetAttribute, "cuMemPoolGetAttribute");
  cuuint64_t reserved = 0;
  if (get_attr == nullptr || get_attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS) return;
  r.aux = reserved;
  r.ptr2 = reinterpret_cast<uint64_t>(p);  // whose reserved bytes these are
  r.flags |= record_flag::kPoolReserved;
}

uint64_t device_free_bytes() {
  using MemGetInfo = CUresult (*)(size_t*, size_t*);
  size_t free_b = 0, total = 0;
  auto fn = driver_fn<MemGetInfo>(g_cuMemGetInfo, "cuMemGetInfo_v2");
  if (fn == nullptr || fn(&free_b, &total) != CUDA_SUCCESS) return 0;
  return free_b;
}

std::atomic<int> g_captures{0};

namespace {
// The streams capturing. Begin and end are rare: a lock is fine; constant-
// initialized, as hooks may run before constructors.
std::mutex g_capture_mu;
constexpr size_t kMaxCaptures = 64;
uint64_t g_capture_keys[kMaxCaptures];
size_t g_capture_count = 0;
bool g_capture_overflow = false;  // more at once than kept: assume some always are

// The NULL and per-thread handles name a different stream on each thread.
uint64_t capture_key(uint64_t stream) {
  if (stream > 2) return stream;  // CU_STREAM_LEGACY = 1, CU_STREAM_PER_THREAD = 2
  return (static_cast<uint64_t>(syscall(SYS_gettid)) << 2) | 2;  // never an (aligned) stream pointer
}

void publish_capture_count() {
  g_captures.store(g_capture_overflow ? kMaxCaptures + 1 : static_cast<int>(g_capture_count),
                   std::memory_order_relaxed);
}
}  // namespace

void note_capture_begin(Record& r, int32_t rc) {
  if (rc != 0) return;
  const uint64_t key = capture_key(r.stream);
  std::lock_guard<std::mutex> lock(g_capture_mu);
  for (size_t i = 0; i < g_capture_count; ++i) {
    if (g_capture_keys[i] == key) return;
  }
  if (g_capture_count < kMaxCaptures) {
    g_capture_keys[g_capture_count++] = key;
  } else {
    g_capture_overflow = true;
  }
  publish_capture_count();
}

void note_capture_end(Record& r, int32_t rc) {
  // The capture also ends when it was invalidated (901) or left a fork
  // unjoined (904), and there is none when it was not begun here (903);
  // the driver's and the runtime's codes agree. Other errors (a bad
  // argument, the wrong thread) leave it going.
  if (rc != 0 && rc != 901 && rc != 903 && rc != 904) return;
  const uint64_t key = capture_key(r.stream);
  std::lock_guard<std::mutex> lock(g_capture_mu);
  for (size_t i = 0; i < g_capture_count; ++i) {
    if (g_capture_keys[i] == key) {
      g_capture_keys[i] = g_capture_keys[--g_capture_count];
      break;
    }
  }
  publish_capture_count();
}

void note_captured(Record& r) {
  using IsCapturing = CUresult (*)(CUstream, CUstreamCaptureStatus*);
  auto fn = driver_fn<IsCapturing>(g_cuStreamIsCapturing, "cuStreamIsCapturing");
  if (fn == nullptr) return;
  CUstream s = reinterpret_cast<CUstream>(r.stream);
  if (s == nullptr) {
    // The NULL stream of a _ptsz / _ptds entry is the thread's own stream,
    // which can be captured; of the others, the legacy stream, which cannot.
    const char* sym = api_info(r.api).symbol;
    const size_t n = std::strlen(sym);
    if (n < 5 || (std::strcmp(sym + n - 5, "_ptsz") != 0 && std::strcmp(sym + n - 5, "_ptds") != 0)) return;
    s = CU_STREAM_PER_THREAD;
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (fn(s, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE) r.flags |= record_flag::kCaptured;
}

uint32_t kernel_name(CUfunction f) {
  if (f == nullptr) return 0;
  return cached_name(handle(f) ^ kTagFunction, [f] { return function_name(f); });
}

uint32_t kernel_name(CUkernel k) {
  if (k == nullptr) return 0;
  return cached_name(handle(k) ^ kTagKernel, [k] { return kernel_handle_name(k); });
}

uint32_t stub_name(const void* stub) {
  if (stub == nullptr) return 0;
  return cached_name(handle(stub) ^ kTagStub, [stub]() -> const char* {
    // nvcc gives the host stub the kernel's mangled name.
    Dl_info info;
    if (dladdr(stub, &info) != 0 && info.dli_saddr == stub) return info.dli_sname;
    return nullptr;
  });
}

void forget_kernel_names() {
  std::lock_guard<std::mutex> lock(g_name_mu);
  handle_names().clear();
  g_name_generation.fetch_add(1, std::memory_order_relaxed);
}

CopyKind copy_kind(CUmemorytype src, CUmemorytype dst) {
  const bool src_host = src == CU_MEMORYTYPE_HOST;
  const bool dst_host = dst == CU_MEMORYTYPE_HOST;
  if (src == CU_MEMORYTYPE_UNIFIED || dst == CU_MEMORYTYPE_UNIFIED) return CopyKind::Default;
  if (src_host && dst_host) return CopyKind::HtoH;
  if (src_host) return CopyKind::HtoD;
  if (dst_host) return CopyKind::DtoH;
  return CopyKind::DtoD;
}

CopyKind rt_copy_kind(cudaMemcpyKind k) {
  switch (k) {
    case cudaMemcpyHostToHost: return CopyKind::HtoH;
    case cudaMemcpyHostToDevice: return CopyKind::HtoD;
    case cudaMemcpyDeviceToHost: return CopyKind::DtoH;
    case cudaMemcpyDeviceToDevice: return CopyKind::DtoD;
    case cudaMemcpyDefault: return CopyKind::Default;
  }
  return CopyKind::Unknown;
}

}  // namespace nb::shim
