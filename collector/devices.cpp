#include "collector/devices.h"

#include <cuda.h>

#include <future>
#include <memory>
#include <thread>

namespace nb {

namespace {

template <typename Fn>
Fn driver_fn(Host& host, const char* name) {
  return reinterpret_cast<Fn>(host.driver_function(name));
}

}  // namespace

DeviceSync::DeviceSync(Host& host) {
  using GetCurrent = CUresult (*)(CUcontext*);
  using SetCurrent = CUresult (*)(CUcontext);
  using Sync = CUresult (*)();
  using Count = CUresult (*)(int*);
  using Get = CUresult (*)(CUdevice*, int);
  using State = CUresult (*)(CUdevice, unsigned int*, int*);
  using Retain = CUresult (*)(CUcontext*, CUdevice);
  using Release = CUresult (*)(CUdevice);
  auto get_current = driver_fn<GetCurrent>(host, "cuCtxGetCurrent");
  auto set_current = driver_fn<SetCurrent>(host, "cuCtxSetCurrent");
  auto sync = driver_fn<Sync>(host, "cuCtxSynchronize");
  auto count = driver_fn<Count>(host, "cuDeviceGetCount");
  auto get = driver_fn<Get>(host, "cuDeviceGet");
  auto state = driver_fn<State>(host, "cuDevicePrimaryCtxGetState");
  auto retain = driver_fn<Retain>(host, "cuDevicePrimaryCtxRetain");
  auto release = driver_fn<Release>(host, "cuDevicePrimaryCtxRelease_v2");
  if (!get_current || !set_current || !sync) {
    finished_ = true;
    return;
  }
  CUcontext mine = nullptr;
  get_current(&mine);
  // Work may run in any thread's context on any device: wait for the
  // calling thread's context and for every active primary context. On a
  // helper thread, with a limit, because a device that never finishes (a
  // collective waiting for a dead peer) must not keep the process from
  // exiting.
  // No thread to be had (out of memory): nothing to wait on.
  try {
    auto done = std::make_shared<std::promise<void>>();
    future_ = done->get_future();
    helper_ = std::thread([=, &host] {
      // Nothing may escape a thread's function (std::terminate): a driver
      // that throws, or memory that runs out, ends the wait, not the program.
      try {
        host.own_thread();
        if (mine) {
          set_current(mine);
          sync();
        }
        int n = 0;
        if (count && get && state && retain && release && count(&n) == CUDA_SUCCESS) {
          for (int i = 0; i < n; ++i) {
            CUdevice dev;
            unsigned int flags = 0;
            int active = 0;
            CUcontext ctx = nullptr;
            if (get(&dev, i) != CUDA_SUCCESS || state(dev, &flags, &active) != CUDA_SUCCESS || !active) continue;
            if (retain(&ctx, dev) != CUDA_SUCCESS) continue;
            set_current(ctx);
            sync();
            release(dev);
          }
        }
      } catch (...) {
      }
      done->set_value();
    });
  } catch (...) {
    finished_ = true;
  }
}

bool DeviceSync::done(std::chrono::milliseconds wait) {
  if (!finished_ && future_.valid() && future_.wait_for(wait) == std::future_status::ready) finished_ = true;
  return finished_;
}

DeviceSync::~DeviceSync() {
  if (!helper_.joinable()) return;
  if (finished_) helper_.join();
  else helper_.detach();  // still waiting for the device; the process exits anyway
}

std::vector<formats::DeviceProperties> query_devices(Host& host) {
  using Count = CUresult (*)(int*);
  using Get = CUresult (*)(CUdevice*, int);
  using Name = CUresult (*)(char*, int, CUdevice);
  using Mem = CUresult (*)(size_t*, CUdevice);
  using Attr = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  auto count = driver_fn<Count>(host, "cuDeviceGetCount");
  auto get = driver_fn<Get>(host, "cuDeviceGet");
  auto name = driver_fn<Name>(host, "cuDeviceGetName");
  auto mem = driver_fn<Mem>(host, "cuDeviceTotalMem_v2");
  auto attr = driver_fn<Attr>(host, "cuDeviceGetAttribute");
  std::vector<formats::DeviceProperties> out;
  int n = 0;
  if (!count || !get || !name || !mem || !attr || count(&n) != CUDA_SUCCESS) return out;
  for (int i = 0; i < n; ++i) {
    CUdevice dev;
    if (get(&dev, i) != CUDA_SUCCESS) continue;
    formats::DeviceProperties p;
    p.id = i;
    char buf[256] = {};
    if (name(buf, sizeof buf - 1, dev) == CUDA_SUCCESS) p.name = buf;
    size_t total = 0;
    if (mem(&total, dev) == CUDA_SUCCESS) p.total_global_mem = total;
    const auto a = [&](CUdevice_attribute which) {
      int v = 0;
      return attr(&v, which, dev) == CUDA_SUCCESS ? v : 0;
    };
    p.compute_major = a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    p.compute_minor = a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    p.max_threads_per_block = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p.max_threads_per_multiprocessor = a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    p.regs_per_block = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    p.warp_size = a(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    p.shared_mem_per_block = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    p.num_sms = a(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p.regs_per_multiprocessor = a(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    p.shared_mem_per_block_optin = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    p.shared_mem_per_multiprocessor = a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    out.push_back(p);
  }
  return out;
}

}  // namespace nb
