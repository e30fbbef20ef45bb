// Smoke test of the fake CUDA stack, run without any preload: every path by
// which a program reaches the driver (plain symbol, dlopen + dlsym,
// cuGetProcAddress at several versions and flags, through the runtime), and
// enough behaviour (bytes really copied, out of memory, names, stream ids) for
// other tests to rely on the fakes.
//
// Expects FAKE_CUDA_DEVICES=2 and a small FAKE_CUDA_MEM_BYTES (see
// meson.build), and LD_LIBRARY_PATH pointing at the fakes for dlopen. Prints
// every failed check and exits 0 only if there is none.
#include "fake_cuda.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

int g_checks = 0;
int g_failures = 0;

void check(bool ok, const char* what, int line) {
    ++g_checks;
    if (!ok) {
        ++g_failures;
        std::fprintf(stderr, "smoke.cpp:%d: FAILED: %s\n", line, what);
    }
}
#define CHECK(cond) check((cond), #cond, __LINE__)
#define CHECK_CU(call, expected) check((call) == (expected), #call " == " #expected, __LINE__)
#define CHECK_OK(call) CHECK_CU(call, CUDA_SUCCESS)
#define CHECK_RT(call, expected) check((call) == (expected), #call " == " #expected, __LINE__)
// For what the rest of a test function depends on (a pointer it will
// dereference, a function it will call): on failure, skip the rest.
#define REQUIRE(cond)                             \
    do {                                          \
        if (!(cond)) {                            \
            check(false, #cond, __LINE__);        \
            return;                               \
        }                                         \
    } while (0)

void* lib_handle() {
    static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    return h;
}
void* sym(const char* name) { return dlsym(lib_handle(), name); }

// ---------------------------------------------------------------------------
// The driver calls that count as "interesting" (memory, launch, copy, set,
// synchronisation), by exported name, for checking that a runtime call lands
// in exactly one of them.
// ---------------------------------------------------------------------------
std::vector<std::string> interesting_names() {
    std::vector<std::string> names = {
        "cuMemAlloc", "cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged", "cuMemFree", "cuMemFree_v2",
        "cuMemAllocHost_v2", "cuMemHostAlloc", "cuMemFreeHost", "cuMemCreate", "cuMemRelease", "cuMemMap",
        "cuMemUnmap", "cuMemAddressReserve", "cuMemAddressFree", "cuCtxSynchronize", "cuCtxSynchronize_v2",
        "cuEventSynchronize",
    };
    const char* synchronous[] = {"cuMemcpy",           "cuMemcpyPeer",     "cuMemcpyHtoD_v2",
                                 "cuMemcpyDtoH_v2",    "cuMemcpyDtoD_v2",  "cuMemcpy2D_v2",
                                 "cuMemcpy2DUnaligned_v2", "cuMemcpy3D_v2", "cuMemsetD8_v2",
                                 "cuMemsetD16_v2",     "cuMemsetD32_v2",   "cuMemsetD2D8_v2",
                                 "cuMemsetD2D16_v2",   "cuMemsetD2D32_v2"};
    const char* stream_ordered[] = {
        "cuMemcpyAsync",      "cuMemcpyPeerAsync",  "cuMemcpyHtoDAsync_v2",   "cuMemcpyDtoHAsync_v2",
        "cuMemcpyDtoDAsync_v2", "cuMemcpy2DAsync_v2", "cuMemcpy3DAsync_v2",   "cuMemsetD8Async",
        "cuMemsetD16Async",   "cuMemsetD32Async",   "cuMemsetD2D8Async",      "cuMemsetD2D16Async",
        "cuMemsetD2D32Async", "cuMemAllocAsync",    "cuMemAllocFromPoolAsync", "cuMemFreeAsync",
        "cuLaunchKernel",     "cuLaunchKernelEx",   "cuLaunchCooperativeKernel", "cuLaunchHostFunc",
        "cuGraphLaunch",      "cuStreamSynchronize"};
    for (const char* n : synchronous) {
        names.push_back(n);
        names.push_back(std::string(n) + "_ptds");
    }
    for (const char* n : stream_ordered) {
        names.push_back(n);
        names.push_back(std::string(n) + "_ptsz");
    }
    return names;
}

std::map<std::string, unsigned long long> snapshot() {
    std::map<std::string, unsigned long long> counts;
    for (const std::string& n : interesting_names()) counts[n] = fakeCudaCallCount(n.c_str());
    return counts;
}

// Runs fn and checks that it made exactly one interesting driver call, to expected.
void expect_one(const char* expected, const std::function<void()>& fn, int line) {
    const auto before = snapshot();
    fn();
    const auto after = snapshot();
    unsigned long long total = 0;
    for (const auto& entry : after) total += entry.second - before.at(entry.first);
    const unsigned long long mine = after.at(expected) - before.at(expected);
    ++g_checks;
    if (total != 1 || mine != 1) {
        ++g_failures;
        std::fprintf(stderr, "smoke.cpp:%d: FAILED: expected exactly one interesting driver call, to %s; got %llu to it, "
                             "%llu in all\n",
                     line, expected, mine, total);
        for (const auto& entry : after)
            if (entry.second != before.at(entry.first))
                std::fprintf(stderr, "    %s +%llu\n", entry.first.c_str(), entry.second - before.at(entry.first));
    }
}
#define EXPECT_ONE(expected, body) expect_one(expected, [&] { body; }, __LINE__)

// ---------------------------------------------------------------------------
// 1. The driver by plain symbol.
// ---------------------------------------------------------------------------

size_t g_capacity = 0;

void test_driver_basics() {
    CUdeviceptr d = 0;
    int version = 0;
    CHECK_CU(cuMemAlloc_v2(&d, 16), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_OK(cuDriverGetVersion(&version));
    CHECK(version == 13000);
    CHECK_CU(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuInit(0));

    int count = 0;
    CHECK_OK(cuDeviceGetCount(&count));
    REQUIRE(count == 2);  // the test's environment sets FAKE_CUDA_DEVICES=2
    CUdevice dev = -1;
    CHECK_OK(cuDeviceGet(&dev, 1));
    CHECK(dev == 1);
    CHECK_CU(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
    char name[64] = {};
    CHECK_OK(cuDeviceGetName(name, sizeof name, 0));
    CHECK(std::strcmp(name, "Fake CUDA Device") == 0);
    CHECK_OK(cuDeviceTotalMem_v2(&g_capacity, 0));
    const char* env = std::getenv("FAKE_CUDA_MEM_BYTES");
    CHECK(env != nullptr && g_capacity == std::strtoull(env, nullptr, 0));
    int v = -1;
    CHECK_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    CHECK(v == 9);
    CHECK_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
    CHECK(v == 0);
    CHECK_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CHECK(v == 132);
    CHECK_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1));
    CHECK(v == 32);
    CHECK_OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 0));
    CHECK(v == 0);  // unknown to the fake
    CUuuid u0{}, u1{};
    CHECK_OK(cuDeviceGetUuid_v2(&u0, 0));
    CHECK_OK(cuDeviceGetUuid_v2(&u1, 1));
    CHECK(std::memcmp(u0.bytes, u1.bytes, sizeof u0.bytes) != 0);

    // Contexts: none current yet.
    CUcontext cur = reinterpret_cast<CUcontext>(1);
    CHECK_OK(cuCtxGetCurrent(&cur));
    CHECK(cur == nullptr);
    CHECK_CU(cuMemAlloc_v2(&d, 16), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext c0 = nullptr, c1 = nullptr;
    CHECK_OK(cuDevicePrimaryCtxRetain(&c0, 0));
    CHECK_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CHECK(c0 != nullptr && c1 != nullptr && c0 != c1);
    CHECK_OK(cuCtxSetCurrent(c0));
    CHECK_OK(cuCtxGetCurrent(&cur));
    CHECK(cur == c0);
    CHECK_OK(cuCtxPushCurrent_v2(c1));
    CHECK_OK(cuCtxGetDevice(&dev));
    CHECK(dev == 1);
    CHECK_OK(cuCtxGetDevice_v2(&dev, c0));
    CHECK(dev == 0);
    CHECK_OK(cuCtxPopCurrent_v2(&cur));
    CHECK(cur == c1);
    CHECK_OK(cuCtxGetDevice(&dev));
    CHECK(dev == 0);
    CHECK_OK(cuCtxSynchronize());
    CHECK_OK(cuCtxSynchronize_v2(nullptr));
    CHECK_OK(cuCtxSynchronize_v2(c1));
    CHECK_CU(cuCtxSetCurrent(reinterpret_cast<CUcontext>(&v)), CUDA_ERROR_INVALID_CONTEXT);

    const char* text = nullptr;
    CHECK_OK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text));
    CHECK(text && std::strcmp(text, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
    CHECK_OK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text));
    CHECK(text && std::strcmp(text, "out of memory") == 0);
    CHECK_CU(cuGetErrorName(static_cast<CUresult>(12345), &text), CUDA_ERROR_INVALID_VALUE);
    CHECK(text == nullptr);
}

void test_driver_memory() {
    size_t free0 = 0, total = 0;
    CHECK_OK(cuMemGetInfo_v2(&free0, &total));
    CHECK(total == g_capacity && free0 == g_capacity);

    CUdeviceptr a = 0, b = 0;
    CHECK_OK(cuMemAlloc_v2(&a, 1000));
    REQUIRE(a != 0);
    CHECK(a % 256 == 0);
    size_t free1 = 0;
    CHECK_OK(cuMemGetInfo_v2(&free1, &total));
    CHECK(free1 == g_capacity - 1024);  // rounded to the 256-byte alignment
    CHECK_CU(cuMemAlloc_v2(&b, 0), CUDA_ERROR_INVALID_VALUE);

    // Bytes really move.
    std::vector<unsigned char> host(1000), back(1000);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 7);
    CHECK_OK(cuMemcpyHtoD_v2(a, host.data(), host.size()));
    CHECK_OK(cuMemAlloc_v2(&b, 1000));
    REQUIRE(b != 0);
    CHECK_OK(cuMemcpyDtoD_v2(b, a, 1000));
    CHECK_OK(cuMemcpyDtoH_v2(back.data(), b, back.size()));
    CHECK(host == back);
    CHECK_CU(cuMemcpyDtoH_v2(back.data(), b, 1001), CUDA_ERROR_INVALID_VALUE);  // past the allocation
    CHECK_CU(cuMemcpyHtoD_v2(reinterpret_cast<CUdeviceptr>(back.data()), host.data(), 8), CUDA_ERROR_INVALID_VALUE);

    CHECK_OK(cuMemsetD8_v2(a, 0xab, 1000));
    CHECK_OK(cuMemcpy(reinterpret_cast<CUdeviceptr>(back.data()), a, 1000));  // unified: any pointers
    CHECK(back[0] == 0xab && back[999] == 0xab);
    CHECK_OK(cuMemsetD16_v2(a, 0x1234, 10));
    CHECK_OK(cuMemsetD32_v2(a + 64, 0xdeadbeef, 4));
    CHECK_CU(cuMemsetD32_v2(a + 2, 1, 1), CUDA_ERROR_INVALID_VALUE);  // misaligned
    const auto* p16 = reinterpret_cast<const uint16_t*>(a);
    const auto* p32 = reinterpret_cast<const uint32_t*>(a + 64);
    CHECK(p16[0] == 0x1234 && p16[9] == 0x1234 && p32[3] == 0xdeadbeef);

    // Per-thread flavours and stream-ordered ones on the NULL stream.
    CHECK_OK(cuMemsetD8_v2_ptds(a, 1, 1000));
    CHECK_OK(cuMemsetD8Async(a, 2, 500, nullptr));
    CHECK_OK(cuMemsetD8Async_ptsz(a + 500, 3, 500, nullptr));
    CHECK_OK(cuMemcpyDtoHAsync_v2_ptsz(back.data(), a, 1000, CU_STREAM_PER_THREAD));
    CHECK(back[0] == 2 && back[999] == 3);
    CHECK_OK(cuMemcpyHtoD_v2_ptds(a, host.data(), 1000));
    CHECK_OK(cuMemcpyDtoH_v2_ptds(back.data(), a, 1000));
    CHECK(host == back);

    // Pitched allocation and 2D copy / set.
    CUdeviceptr pitched = 0;
    size_t pitch = 0;
    CHECK_OK(cuMemAllocPitch_v2(&pitched, &pitch, 100, 8, 4));
    CHECK(pitch >= 100 && pitch % 256 == 0);
    CHECK_OK(cuMemsetD2D8_v2(pitched, pitch, 0, 100, 8));
    CHECK_OK(cuMemsetD2D32_v2(pitched, pitch, 0x01010101u, 10, 8));
    std::vector<unsigned char> grid(100 * 8, 0xee);
    CUDA_MEMCPY2D c2{};
    c2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.srcDevice = pitched;
    c2.srcPitch = pitch;
    c2.dstMemoryType = CU_MEMORYTYPE_HOST;
    c2.dstHost = grid.data();
    c2.dstPitch = 100;
    c2.WidthInBytes = 100;
    c2.Height = 8;
    CHECK_OK(cuMemcpy2D_v2(&c2));
    CHECK(grid[0] == 1 && grid[39] == 1 && grid[40] == 0 && grid[7 * 100 + 39] == 1 && grid[7 * 100 + 99] == 0);
    CHECK_OK(cuMemcpy2DAsync_v2_ptsz(&c2, nullptr));
    CHECK_OK(cuMemcpy2DUnaligned_v2(&c2));

    // 3D: two slices of 2 rows of 4 bytes, host -> device -> host.
    unsigned char cube[2][2][4], cube_back[2][2][4] = {};
    for (int i = 0; i < 16; ++i) (&cube[0][0][0])[i] = static_cast<unsigned char>(i + 1);
    CUDA_MEMCPY3D c3{};
    c3.srcMemoryType = CU_MEMORYTYPE_HOST;
    c3.srcHost = cube;
    c3.srcPitch = 4;
    c3.srcHeight = 2;
    c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.dstDevice = b;
    c3.dstPitch = 8;  // spread out on the "device"
    c3.dstHeight = 2;
    c3.WidthInBytes = 4;
    c3.Height = 2;
    c3.Depth = 2;
    CHECK_OK(cuMemcpy3D_v2(&c3));
    std::swap(c3.srcMemoryType, c3.dstMemoryType);
    c3.srcDevice = b;
    c3.srcPitch = 8;
    c3.dstHost = cube_back;
    c3.dstPitch = 4;
    c3.srcHost = nullptr;
    c3.dstDevice = 0;
    CHECK_OK(cuMemcpy3DAsync_v2(&c3, nullptr));
    CHECK(std::memcmp(cube, cube_back, sizeof cube) == 0);

    // Peer copy to device 1.
    CUcontext c0 = nullptr, c1 = nullptr;
    CUdeviceptr on1 = 0;
    CHECK_OK(cuDevicePrimaryCtxRetain(&c0, 0));
    CHECK_OK(cuDevicePrimaryCtxRetain(&c1, 1));
    CHECK_OK(cuCtxPushCurrent_v2(c1));
    CHECK_OK(cuMemAlloc_v2(&on1, 1000));
    CHECK_OK(cuCtxPopCurrent_v2(nullptr));
    CHECK_OK(cuMemcpyPeer(on1, c1, a, c0, 1000));
    CHECK_OK(cuMemcpyPeerAsync_ptsz(b, c0, on1, c1, 1000, nullptr));
    CHECK_OK(cuMemcpyDtoH_v2(back.data(), b, 1000));
    CHECK(host == back);

    // Queries.
    CUdeviceptr base = 0;
    size_t size = 0;
    CHECK_OK(cuMemGetAddressRange_v2(&base, &size, a + 10));
    CHECK(base == a && size == 1000);
    int ordinal = -1;
    CHECK_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, on1 + 5));
    CHECK(ordinal == 1);
    CUcontext owner = nullptr;
    CHECK_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, a));
    CHECK(owner == c0);
    unsigned mem_type = 0;
    CHECK_OK(cuPointerGetAttribute(&mem_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
    CHECK(mem_type == CU_MEMORYTYPE_DEVICE);
    CHECK_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   reinterpret_cast<CUdeviceptr>(host.data())),
             CUDA_ERROR_INVALID_VALUE);

    // Frees.
    CHECK_OK(cuMemFree_v2(0));
    CHECK_CU(cuMemFree_v2(a + 8), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuMemFree_v2(a));
    CHECK_CU(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);  // twice
    CHECK_OK(cuMemFree_v2(b));
    CHECK_OK(cuMemFree_v2(pitched));
    CHECK_OK(cuMemFree_v2(on1));
    CHECK_OK(cuMemGetInfo_v2(&free1, &total));
    CHECK(free1 == g_capacity);

    // Out of memory, and nothing charged for the failure.
    CHECK_CU(cuMemAlloc_v2(&a, g_capacity + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(a == 0);
    CHECK_OK(cuMemAlloc_v2(&a, g_capacity));
    CHECK_CU(cuMemAlloc_v2(&b, 1), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_OK(cuMemFree_v2(a));

    // Managed, stream-ordered and pool allocations.
    CHECK_OK(cuMemAllocManaged(&a, 4096, CU_MEM_ATTACH_GLOBAL));
    unsigned managed = 0;
    CHECK_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, a));
    CHECK(managed == 1);
    CHECK_OK(cuMemFree_v2(a));
    CUmemoryPool pool = nullptr;
    CHECK_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    CHECK_OK(cuMemAllocAsync(&a, 3000, nullptr));
    CHECK_OK(cuMemAllocFromPoolAsync_ptsz(&b, 5000, pool, nullptr));
    cuuint64_t used = 0, high = 0, reserved = 0;
    CHECK_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    CHECK(used == 3072 + 5120 && reserved >= used);
    CHECK_OK(cuMemFreeAsync(a, nullptr));
    CHECK_OK(cuMemFreeAsync_ptsz(b, CU_STREAM_PER_THREAD));
    CHECK_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
    CHECK_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high));
    CHECK(used == 0 && high == 3072 + 5120);
    CHECK_CU(cuMemAllocAsync(&a, 16, reinterpret_cast<CUstream>(&used)), CUDA_ERROR_INVALID_HANDLE);

    // Pinned host memory.
    void* pinned = nullptr;
    void* pinned2 = nullptr;
    CHECK_OK(cuMemAllocHost_v2(&pinned, 100));
    CHECK_OK(cuMemHostAlloc(&pinned2, 100, CU_MEMHOSTALLOC_PORTABLE));
    std::memset(pinned, 0x5a, 100);
    CHECK_OK(cuMemFreeHost(pinned));
    CHECK_OK(cuMemFreeHost(pinned2));
    CHECK_CU(cuMemFreeHost(host.data()), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuMemGetInfo_v2(&free1, &total));
    CHECK(free1 == g_capacity);  // pinned memory is not device memory
}

void test_driver_vmm() {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CHECK_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    CHECK(gran == (2u << 20));

    CUdeviceptr va = 0;
    CHECK_OK(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
    REQUIRE(va != 0);
    CHECK(va % gran == 0);
    CUmemGenericAllocationHandle h = 0;
    CHECK_CU(cuMemCreate(&h, gran + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_OK(cuMemCreate(&h, gran, &prop, 0));
    size_t free1 = 0, total = 0;
    CHECK_OK(cuMemGetInfo_v2(&free1, &total));
    CHECK(free1 == g_capacity - gran);

    // The same physical memory mapped twice aliases, as on a GPU.
    CHECK_OK(cuMemMap(va, gran, 0, h, 0));
    REQUIRE(cuMemMap(va + 2 * gran, gran, 0, h, 0) == CUDA_SUCCESS);
    CHECK_CU(cuMemMap(va, gran, 0, h, 0), CUDA_ERROR_ALREADY_MAPPED);
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_OK(cuMemSetAccess(va, gran, &access, 1));
    CHECK_CU(cuMemSetAccess(va, 2 * gran, &access, 1), CUDA_ERROR_INVALID_VALUE);  // second granule unmapped
    CHECK_OK(cuMemsetD32_v2(va + 4096, 0xcafef00d, 1));
    CHECK(*reinterpret_cast<const uint32_t*>(va + 2 * gran + 4096) == 0xcafef00d);
    int ordinal = -1;
    CHECK_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + 100));
    CHECK(ordinal == 0);

    CHECK_OK(cuMemRelease(h));  // still mapped, so still charged
    CHECK_OK(cuMemGetInfo_v2(&free1, &total));
    CHECK(free1 == g_capacity - gran);
    CHECK_CU(cuMemAddressFree(va, 4 * gran), CUDA_ERROR_INVALID_VALUE);  // mappings remain
    CHECK_OK(cuMemUnmap(va, gran));
    CHECK_OK(cuMemUnmap(va + 2 * gran, gran));
    CHECK_OK(cuMemGetInfo_v2(&free1, &total));
    CHECK(free1 == g_capacity);
    CHECK_OK(cuMemAddressFree(va, 4 * gran));

    // Physical memory counts against capacity.
    const size_t too_much = (g_capacity / gran + 1) * gran;
    CHECK_CU(cuMemCreate(&h, too_much, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
}

// ---------------------------------------------------------------------------
// Streams, events, modules, names, launches, graphs.
// ---------------------------------------------------------------------------

unsigned long long stream_id(CUstream s, bool per_thread) {
    unsigned long long id = 0;
    CHECK_OK(per_thread ? cuStreamGetId_ptsz(s, &id) : cuStreamGetId(s, &id));
    return id;
}

void test_driver_streams() {
    CHECK(stream_id(nullptr, false) == 7);
    CHECK(stream_id(CU_STREAM_LEGACY, true) == 7);
    const unsigned long long pt = stream_id(nullptr, true);
    CHECK(pt >= (1ull << 32));
    CHECK(stream_id(CU_STREAM_PER_THREAD, false) == pt);
    CUstream s1 = nullptr, s2 = nullptr;
    CHECK_OK(cuStreamCreate(&s1, CU_STREAM_DEFAULT));
    CHECK_OK(cuStreamCreateWithPriority(&s2, CU_STREAM_NON_BLOCKING, -1));
    const unsigned long long id1 = stream_id(s1, false), id2 = stream_id(s2, true);
    CHECK(id1 >= 13 && id2 == id1 + 1);

    // Another thread has its own per-thread stream, and needs a context.
    unsigned long long other = 0;
    CUresult no_ctx = CUDA_SUCCESS;
    std::thread t([&] {
        no_ctx = cuStreamGetId_ptsz(nullptr, &other);
        CUcontext c = nullptr;
        cuDevicePrimaryCtxRetain(&c, 0);
        cuCtxSetCurrent(c);
        cuStreamGetId_ptsz(nullptr, &other);
    });
    t.join();
    CHECK(no_ctx == CUDA_ERROR_INVALID_CONTEXT);
    CHECK(other >= (1ull << 32) && other != pt);

    CUcontext ctx = nullptr, c0 = nullptr;
    CHECK_OK(cuCtxGetCurrent(&c0));
    CHECK_OK(cuStreamGetCtx(s1, &ctx));
    CHECK(ctx == c0);
    CHECK_OK(cuStreamGetCtx_ptsz(nullptr, &ctx));
    CHECK(ctx == c0);
    CHECK_OK(cuStreamSynchronize(s1));
    CHECK_OK(cuStreamSynchronize_ptsz(nullptr));
    CHECK_OK(cuStreamQuery(s2));

    CUevent e1 = nullptr, e2 = nullptr;
    CHECK_OK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    CHECK_OK(cuEventCreate(&e2, CU_EVENT_DEFAULT));
    float ms = -1;
    CHECK_CU(cuEventElapsedTime_v2(&ms, e1, e2), CUDA_ERROR_INVALID_HANDLE);  // not recorded yet
    CHECK_OK(cuEventRecord(e1, s1));
    CHECK_OK(cuEventRecord_ptsz(e2, nullptr));
    CHECK_OK(cuStreamWaitEvent(s2, e1, 0));
    CHECK_OK(cuEventSynchronize(e2));
    CHECK_OK(cuEventElapsedTime_v2(&ms, e1, e2));
    CHECK(ms >= 0);
    CHECK_OK(cuEventDestroy_v2(e1));
    CHECK_OK(cuEventDestroy_v2(e2));
    CHECK_CU(cuEventSynchronize(e1), CUDA_ERROR_INVALID_HANDLE);

    CHECK_OK(cuStreamDestroy_v2(s1));
    CHECK_OK(cuStreamDestroy_v2(s2));
    CHECK_CU(cuStreamSynchronize(s1), CUDA_ERROR_INVALID_HANDLE);
}

// Names with quotes, backslashes, spaces and bytes that are not UTF-8.
const std::string kOdd1 = "say \"hi\"";
const std::string kOdd2 = "back\\slash and\ttab";
const std::string kOdd3 = "bytes \xff\xfe\x80 end";
const std::string kMangled = "_Z6kernelPfi";

void host_fn(void* flag) { *static_cast<int*>(flag) += 1; }

void test_driver_code() {
    const std::string image = fake_cuda::module_image({kMangled, kOdd1, kOdd2, kOdd3});
    CUmodule mod = nullptr;
    CHECK_OK(cuModuleLoadData(&mod, image.c_str()));
    CUfunction f = nullptr, f3 = nullptr;
    CHECK_OK(cuModuleGetFunction(&f, mod, kMangled.c_str()));
    CHECK_OK(cuModuleGetFunction(&f3, mod, kOdd3.c_str()));
    CHECK_CU(cuModuleGetFunction(&f, mod, "missing"), CUDA_ERROR_NOT_FOUND);
    const char* name = nullptr;
    CHECK_OK(cuFuncGetName(&name, f3));
    CHECK(name && kOdd3 == name);
    CHECK_CU(cuKernelGetName(&name, reinterpret_cast<CUkernel>(f3)), CUDA_ERROR_INVALID_HANDLE);

    // From a file, without the header line.
    char path[] = "/tmp/fake_cuda_smoke_XXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0);
    const std::string file_image = kOdd1 + "\n" + kOdd2 + "\n";
    CHECK(write(fd, file_image.data(), file_image.size()) == static_cast<ssize_t>(file_image.size()));
    close(fd);
    CUmodule from_file = nullptr;
    CUfunction f2 = nullptr;
    CHECK_OK(cuModuleLoad(&from_file, path));
    unlink(path);
    CHECK_OK(cuModuleGetFunction(&f2, from_file, kOdd2.c_str()));
    CHECK_OK(cuFuncGetName(&name, f2));
    CHECK(name && kOdd2 == name);
    CHECK_CU(cuModuleLoad(&from_file, "/nonexistent/fake.module"), CUDA_ERROR_FILE_NOT_FOUND);
    CUmodule tiny = nullptr;
    CHECK_OK(cuModuleLoadData(&tiny, "k"));  // shorter than any binary magic
    CHECK_OK(cuModuleUnload(tiny));
    CHECK_CU(cuModuleLoadData(&tiny, "\x7f" "ELF\x02\x01"), CUDA_ERROR_INVALID_IMAGE);  // real device code

    // Libraries: a CUkernel may stand in for a CUfunction.
    CUlibrary lib = nullptr;
    CUkernel k = nullptr;
    CHECK_OK(cuLibraryLoadData(&lib, image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    CHECK_OK(cuLibraryGetKernel(&k, lib, kOdd1.c_str()));
    CHECK_OK(cuKernelGetName(&name, k));
    CHECK(name && kOdd1 == name);
    CHECK_OK(cuFuncGetName(&name, reinterpret_cast<CUfunction>(k)));
    CHECK(name && kOdd1 == name);
    CUfunction kf = nullptr;
    CHECK_OK(cuKernelGetFunction(&kf, k));
    CHECK_OK(cuFuncGetName(&name, kf));
    CHECK(name && kOdd1 == name);
    CUmodule lib_mod = nullptr, kf_mod = nullptr;
    CHECK_OK(cuLibraryGetModule(&lib_mod, lib));
    CHECK_OK(cuFuncGetModule(&kf_mod, kf));
    CHECK(lib_mod == kf_mod);

    // Launches validate their handle and return.
    CHECK_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
    CHECK_OK(cuLaunchKernel_ptsz(reinterpret_cast<CUfunction>(k), 2, 2, 1, 64, 2, 1, 128, nullptr, nullptr, nullptr));
    CHECK_CU(cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_HANDLE);
    int not_a_function = 0;
    CHECK_CU(cuLaunchKernel(reinterpret_cast<CUfunction>(&not_a_function), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr,
                            nullptr),
             CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
    CUlaunchConfig cfg{};
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 128;
    cfg.blockDimY = cfg.blockDimZ = 1;
    CHECK_OK(cuLaunchKernelEx(&cfg, f, nullptr, nullptr));
    CHECK_OK(cuLaunchKernelEx_ptsz(&cfg, reinterpret_cast<CUfunction>(k), nullptr, nullptr));
    CHECK_OK(cuLaunchCooperativeKernel(kf, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr));
    CHECK_OK(cuLaunchCooperativeKernel_ptsz(kf, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr));
    int ran = 0;
    CHECK_OK(cuLaunchHostFunc(nullptr, host_fn, &ran));
    CHECK_OK(cuLaunchHostFunc_ptsz(nullptr, host_fn, &ran));
    CHECK(ran == 2);

    // Graphs of kernel nodes.
    CUgraph g = nullptr;
    CUgraphNode node = nullptr;
    CUgraphExec exec = nullptr;
    CHECK_OK(cuGraphCreate(&g, 0));
    CUDA_KERNEL_NODE_PARAMS np{};
    np.func = f;
    np.gridDimX = np.gridDimY = np.gridDimZ = 1;
    np.blockDimX = np.blockDimY = np.blockDimZ = 1;
    CHECK_OK(cuGraphAddKernelNode_v2(&node, g, nullptr, 0, &np));
    np.func = nullptr;
    np.kern = k;
    CHECK_OK(cuGraphAddKernelNode_v2(&node, g, &node, 1, &np));
    CHECK_OK(cuGraphInstantiateWithFlags(&exec, g, 0));
    CHECK_OK(cuGraphLaunch(exec, nullptr));
    CHECK_OK(cuGraphLaunch_ptsz(exec, nullptr));
    CHECK_OK(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_HANDLE);
    CHECK_OK(cuGraphDestroy(g));

    // Unloading kills the handles.
    CHECK_OK(cuModuleUnload(mod));
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_HANDLE);
    CHECK_CU(cuFuncGetName(&name, f), CUDA_ERROR_INVALID_HANDLE);
    CHECK_OK(cuLibraryUnload(lib));
    CHECK_CU(cuKernelGetName(&name, k), CUDA_ERROR_INVALID_HANDLE);
    CHECK_OK(cuModuleUnload(from_file));
}

// ---------------------------------------------------------------------------
// 2. dlopen + dlsym, and 3. cuGetProcAddress.
// ---------------------------------------------------------------------------

void test_dlsym() {
    CHECK(lib_handle() != nullptr);
    CHECK(sym("cuMemAlloc_v2") == reinterpret_cast<void*>(&cuMemAlloc_v2));
    CHECK(sym("cuLaunchKernel_ptsz") == reinterpret_cast<void*>(&cuLaunchKernel_ptsz));
    CHECK(sym("cuMemcpyHtoD_v2_ptds") == reinterpret_cast<void*>(&cuMemcpyHtoD_v2_ptds));
    CHECK(sym("cuGetProcAddress") != nullptr && sym("cuGetProcAddress_v2") != nullptr);
    CHECK(sym("cuMemAlloc") != nullptr && sym("cuMemAlloc") != sym("cuMemAlloc_v2"));  // v1 ABI exported too
    CHECK(sym("fakeCudaCallCount") != nullptr);
    // Internals stay hidden.
    CHECK(sym("_ZN4fake4lockEv") == nullptr);
    for (const std::string& n : interesting_names()) {
        if (sym(n.c_str()) == nullptr) {
            check(false, ("exported: " + n).c_str(), __LINE__);
        }
    }

    // Through dlsym, the driver works like through the symbol.
    auto alloc = reinterpret_cast<PFN_cuMemAlloc_v3020>(sym("cuMemAlloc_v2"));
    auto release = reinterpret_cast<PFN_cuMemFree_v3020>(sym("cuMemFree_v2"));
    REQUIRE(alloc != nullptr && release != nullptr);
    CUdeviceptr d = 0;
    CHECK_OK(alloc(&d, 64));
    CHECK_OK(release(d));
}

struct Lookup {
    CUresult rc;
    void* fn;
    CUdriverProcAddressQueryResult status;
};

Lookup lookup(const char* name, int version, cuuint64_t flags) {
    Lookup r{CUDA_ERROR_UNKNOWN, reinterpret_cast<void*>(1), static_cast<CUdriverProcAddressQueryResult>(99)};
    r.rc = cuGetProcAddress_v2(name, &r.fn, version, flags, &r.status);
    return r;
}

bool found(const Lookup& r, const char* exported) {
    return r.rc == CUDA_SUCCESS && r.status == CU_GET_PROC_ADDRESS_SUCCESS && r.fn != nullptr && r.fn == sym(exported);
}

void test_proc_address() {
    const cuuint64_t kDefault = CU_GET_PROC_ADDRESS_DEFAULT, kLegacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                     kPerThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

    // cuGetProcAddress hands out itself: _v2 from 12000, v1 at 11030.
    CHECK(found(lookup("cuGetProcAddress", 12000, kDefault), "cuGetProcAddress_v2"));
    CHECK(found(lookup("cuGetProcAddress", 13000, kDefault), "cuGetProcAddress_v2"));
    CHECK(found(lookup("cuGetProcAddress", 11030, kDefault), "cuGetProcAddress"));
    Lookup r = lookup("cuGetProcAddress", 11020, kDefault);
    CHECK(r.rc == CUDA_ERROR_NOT_FOUND && r.fn == nullptr && r.status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

    // Legacy versus per-thread, at each version the runtimes use.
    for (int version : {11030, 12000, 13000}) {
        CHECK(found(lookup("cuLaunchKernel", version, kDefault), "cuLaunchKernel"));
        CHECK(found(lookup("cuLaunchKernel", version, kLegacy), "cuLaunchKernel"));
        CHECK(found(lookup("cuLaunchKernel", version, kPerThread), "cuLaunchKernel_ptsz"));
        CHECK(found(lookup("cuMemcpyHtoD", version, kDefault), "cuMemcpyHtoD_v2"));
        CHECK(found(lookup("cuMemcpyHtoD", version, kPerThread), "cuMemcpyHtoD_v2_ptds"));
        CHECK(found(lookup("cuMemcpyAsync", version, kPerThread), "cuMemcpyAsync_ptsz"));
        CHECK(found(lookup("cuMemsetD8Async", version, kPerThread), "cuMemsetD8Async_ptsz"));
        CHECK(found(lookup("cuMemAllocAsync", version, kPerThread), "cuMemAllocAsync_ptsz"));
        CHECK(found(lookup("cuGraphLaunch", version, kPerThread), "cuGraphLaunch_ptsz"));
        // No per-thread variant: the only one, whatever the flags.
        CHECK(found(lookup("cuMemAlloc", version, kDefault), "cuMemAlloc_v2"));
        CHECK(found(lookup("cuMemAlloc", version, kPerThread), "cuMemAlloc_v2"));
        CHECK(found(lookup("cuCtxSynchronize", version, kPerThread),
                    version >= 13000 ? "cuCtxSynchronize_v2" : "cuCtxSynchronize"));
        CHECK(found(lookup("cuEventElapsedTime", version, kDefault),
                    version >= 12080 ? "cuEventElapsedTime_v2" : "cuEventElapsedTime"));
    }
    // The per-thread answer is the very function the _ptsz symbol names.
    void* pfn = nullptr;
    CUdriverProcAddressQueryResult st{};
    CHECK_OK(cuGetProcAddress_v2("cuLaunchKernel", &pfn, 12000, kPerThread, &st));
    CHECK(pfn == reinterpret_cast<void*>(&cuLaunchKernel_ptsz));

    // Older versions get older ABIs, or nothing.
    CHECK(found(lookup("cuMemAlloc", 2000, kDefault), "cuMemAlloc"));
    CHECK(found(lookup("cuMemAlloc", 3010, kDefault), "cuMemAlloc"));
    CHECK(found(lookup("cuMemAlloc", 3020, kDefault), "cuMemAlloc_v2"));
    CHECK(lookup("cuMemAlloc", 2000, kDefault).fn != lookup("cuMemAlloc", 3020, kDefault).fn);
    CHECK(found(lookup("cuLaunchKernel", 5000, kPerThread), "cuLaunchKernel"));  // per-thread came in 7000
    r = lookup("cuMemAlloc", 1000, kDefault);
    CHECK(r.rc == CUDA_ERROR_NOT_FOUND && r.fn == nullptr && r.status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    r = lookup("cuStreamGetId", 11030, kPerThread);
    CHECK(r.rc == CUDA_ERROR_NOT_FOUND && r.fn == nullptr && r.status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CHECK(found(lookup("cuStreamGetId", 12000, kPerThread), "cuStreamGetId_ptsz"));
    r = lookup("cuFuncGetName", 12000, kDefault);
    CHECK(r.rc == CUDA_ERROR_NOT_FOUND && r.status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    CHECK(found(lookup("cuFuncGetName", 12030, kDefault), "cuFuncGetName"));
    CHECK(found(lookup("cuKernelGetName", 13000, kDefault), "cuKernelGetName"));

    // Unknown names, suffixed names, bad arguments.
    r = lookup("cuNoSuchFunction", 13000, kDefault);
    CHECK(r.rc == CUDA_ERROR_NOT_FOUND && r.fn == nullptr && r.status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    r = lookup("cuMemAlloc_v2", 13000, kDefault);  // the API wants base names
    CHECK(r.rc == CUDA_ERROR_NOT_FOUND && r.status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    CHECK(lookup("cuMemAlloc", 13010, kDefault).rc == CUDA_ERROR_INVALID_VALUE);  // newer than the driver
    CHECK(lookup("cuMemAlloc", 13000, 4).rc == CUDA_ERROR_INVALID_VALUE);

    // The v1 ABI answers the same way, without a status.
    auto v1 = reinterpret_cast<PFN_cuGetProcAddress_v11030>(lookup("cuGetProcAddress", 11030, kDefault).fn);
    REQUIRE(v1 != nullptr);
    pfn = nullptr;
    CHECK_OK(v1("cuMemcpyDtoD", &pfn, 11030, kPerThread));
    CHECK(pfn == sym("cuMemcpyDtoD_v2_ptds"));
    CHECK_CU(v1("cuNoSuchFunction", &pfn, 11030, kDefault), CUDA_ERROR_NOT_FOUND);
    CHECK(pfn == nullptr);

    // The old 32-bit cuMemAlloc really works (low addresses).
    typedef CUresult (*OldAlloc)(unsigned int*, unsigned int);
    typedef CUresult (*OldFree)(unsigned int);
    auto old_alloc = reinterpret_cast<OldAlloc>(lookup("cuMemAlloc", 2000, kDefault).fn);
    auto old_free = reinterpret_cast<OldFree>(lookup("cuMemFree", 2000, kDefault).fn);
    REQUIRE(old_alloc != nullptr && old_free != nullptr);
    unsigned int small = 0;
    CHECK_OK(old_alloc(&small, 4096));
    REQUIRE(small != 0);
    CHECK_OK(cuMemsetD8_v2(small, 0x77, 4096));
    CHECK(reinterpret_cast<const unsigned char*>(static_cast<uintptr_t>(small))[4095] == 0x77);
    CHECK_OK(old_free(small));

    // A function reached through the table behaves like its symbol.
    auto get_id = reinterpret_cast<PFN_cuStreamGetId_v12000_ptsz>(lookup("cuStreamGetId", 12000, kPerThread).fn);
    REQUIRE(get_id != nullptr);
    unsigned long long id = 0, id_sym = 0;
    CHECK_OK(get_id(nullptr, &id));
    CHECK_OK(cuStreamGetId_ptsz(nullptr, &id_sym));
    CHECK(id == id_sym && id >= (1ull << 32));
}

// ---------------------------------------------------------------------------
// 4. The runtime.
// ---------------------------------------------------------------------------

// Host stubs: only their addresses matter.
void stub_a() {}
void stub_b() {}
void stub_unregistered() {}
const void* addr(void (*f)()) { return reinterpret_cast<const void*>(f); }

void test_runtime() {
    const unsigned long long getproc_before = fakeCudaCallCount("cuGetProcAddress_v2");
    const unsigned long long getproc_v1_before = fakeCudaCallCount("cuGetProcAddress");
    int n = 0;
    CHECK_RT(cudaGetDeviceCount(&n), cudaSuccess);
    CHECK(n == 2);
    // The runtime found the driver through cuGetProcAddress (v2 many times, v1 once).
    CHECK(fakeCudaCallCount("cuGetProcAddress_v2") > getproc_before + 20);
    CHECK(fakeCudaCallCount("cuGetProcAddress") == getproc_v1_before + 1);
    int version = 0;
    CHECK_RT(cudaRuntimeGetVersion(&version), cudaSuccess);
    CHECK(version == 13000);
    CHECK_RT(cudaDriverGetVersion(&version), cudaSuccess);
    CHECK(version == 13000);
    CHECK_RT(cudaSetDevice(2), cudaErrorInvalidDevice);
    CHECK_RT(cudaGetLastError(), cudaErrorInvalidDevice);
    CHECK_RT(cudaGetLastError(), cudaSuccess);
    CHECK_RT(cudaSetDevice(0), cudaSuccess);
    int dev = -1;
    CHECK_RT(cudaGetDevice(&dev), cudaSuccess);
    CHECK(dev == 0);
    CHECK_RT(cudaFree(nullptr), cudaSuccess);

    // Memory: one driver call each.
    void* d = nullptr;
    void* d2 = nullptr;
    EXPECT_ONE("cuMemAlloc_v2", CHECK_RT(cudaMalloc(&d, 4096), cudaSuccess));
    EXPECT_ONE("cuMemAlloc_v2", CHECK_RT(cudaMalloc(&d2, 4096), cudaSuccess));
    std::vector<unsigned char> host(4096), back(4096);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i ^ 0x5a);
    EXPECT_ONE("cuMemcpy", CHECK_RT(cudaMemcpy(d, host.data(), 4096, cudaMemcpyHostToDevice), cudaSuccess));
    EXPECT_ONE("cuMemcpy_ptds", CHECK_RT(cudaMemcpy_ptds(d2, d, 4096, cudaMemcpyDeviceToDevice), cudaSuccess));
    EXPECT_ONE("cuMemcpyAsync",
               CHECK_RT(cudaMemcpyAsync(back.data(), d2, 4096, cudaMemcpyDefault, nullptr), cudaSuccess));
    CHECK(host == back);
    EXPECT_ONE("cuMemcpyAsync_ptsz",
               CHECK_RT(cudaMemcpyAsync_ptsz(back.data(), d2, 16, cudaMemcpyDeviceToHost, nullptr), cudaSuccess));
    CHECK_RT(cudaMemcpy(back.data(), d, 16, static_cast<cudaMemcpyKind>(9)), cudaErrorInvalidMemcpyDirection);
    EXPECT_ONE("cuMemsetD8_v2", CHECK_RT(cudaMemset(d, 0x11, 4096), cudaSuccess));
    EXPECT_ONE("cuMemsetD8_v2_ptds", CHECK_RT(cudaMemset_ptds(d, 0x22, 2048), cudaSuccess));
    EXPECT_ONE("cuMemsetD8Async", CHECK_RT(cudaMemsetAsync(d, 0x33, 1024, nullptr), cudaSuccess));
    EXPECT_ONE("cuMemsetD8Async_ptsz", CHECK_RT(cudaMemsetAsync_ptsz(d, 0x44, 512, nullptr), cudaSuccess));
    CHECK_RT(cudaMemcpy(back.data(), d, 4096, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK(back[0] == 0x44 && back[600] == 0x33 && back[1500] == 0x22 && back[4000] == 0x11);
    EXPECT_ONE("cuMemFree_v2", CHECK_RT(cudaFree(d), cudaSuccess));
    EXPECT_ONE("cuMemFree_v2", CHECK_RT(cudaFree(d2), cudaSuccess));

    cudaStream_t s = nullptr;
    CHECK_RT(cudaStreamCreate(&s), cudaSuccess);
    EXPECT_ONE("cuMemAllocAsync", CHECK_RT(cudaMallocAsync(&d, 100, s), cudaSuccess));
    EXPECT_ONE("cuMemFreeAsync", CHECK_RT(cudaFreeAsync(d, s), cudaSuccess));
    EXPECT_ONE("cuMemAllocAsync_ptsz", CHECK_RT(cudaMallocAsync_ptsz(&d, 100, nullptr), cudaSuccess));
    EXPECT_ONE("cuMemFreeAsync_ptsz", CHECK_RT(cudaFreeAsync_ptsz(d, nullptr), cudaSuccess));
    cudaMemPool_t pool = nullptr;
    CHECK_RT(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
    EXPECT_ONE("cuMemAllocFromPoolAsync", CHECK_RT(cudaMallocFromPoolAsync(&d, 100, pool, s), cudaSuccess));
    EXPECT_ONE("cuMemFreeAsync", CHECK_RT(cudaFreeAsync(d, s), cudaSuccess));
    EXPECT_ONE("cuMemAllocFromPoolAsync_ptsz",
               CHECK_RT(cudaMallocFromPoolAsync_ptsz(&d, 100, pool, nullptr), cudaSuccess));
    EXPECT_ONE("cuMemFree_v2", CHECK_RT(cudaFree(d), cudaSuccess));
    EXPECT_ONE("cuMemAllocManaged", CHECK_RT(cudaMallocManaged(&d, 100, cudaMemAttachGlobal), cudaSuccess));
    EXPECT_ONE("cuMemFree_v2", CHECK_RT(cudaFree(d), cudaSuccess));
    size_t pitch = 0;
    EXPECT_ONE("cuMemAllocPitch_v2", CHECK_RT(cudaMallocPitch(&d, &pitch, 100, 10), cudaSuccess));
    CHECK(pitch >= 100);
    EXPECT_ONE("cuMemFree_v2", CHECK_RT(cudaFree(d), cudaSuccess));
    void* h = nullptr;
    EXPECT_ONE("cuMemAllocHost_v2", CHECK_RT(cudaMallocHost(&h, 100), cudaSuccess));
    EXPECT_ONE("cuMemFreeHost", CHECK_RT(cudaFreeHost(h), cudaSuccess));
    EXPECT_ONE("cuMemHostAlloc", CHECK_RT(cudaHostAlloc(&h, 100, cudaHostAllocMapped), cudaSuccess));
    EXPECT_ONE("cuMemFreeHost", CHECK_RT(cudaFreeHost(h), cudaSuccess));

    // Out of memory, reported and remembered.
    EXPECT_ONE("cuMemAlloc_v2", CHECK_RT(cudaMalloc(&d, g_capacity + 1), cudaErrorMemoryAllocation));
    CHECK(d == nullptr);
    CHECK_RT(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    CHECK_RT(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_RT(cudaGetLastError(), cudaSuccess);
    CHECK(std::strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") == 0);
    CHECK(std::strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);
    size_t free_b = 0, total_b = 0;
    CHECK_RT(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
    CHECK(free_b == g_capacity && total_b == g_capacity);

    // Kernels: registered stubs launch the registered CUkernel.
    CHECK(fakeRegisterKernel(addr(stub_a), kMangled.c_str()) == 0);
    CHECK(fakeRegisterKernel(addr(stub_b), kOdd3.c_str()) == 0);
    CHECK(fakeRegisterKernel(addr(stub_b), "two\nlines") == cudaErrorInvalidValue);
    float arg = 1.0f;
    void* args[] = {&arg};
    EXPECT_ONE("cuLaunchKernel",
               CHECK_RT(cudaLaunchKernel(addr(stub_a), dim3(4), dim3(128), args, 0, nullptr), cudaSuccess));
    EXPECT_ONE("cuLaunchKernel_ptsz",
               CHECK_RT(cudaLaunchKernel_ptsz(addr(stub_b), dim3(4, 2), dim3(32, 4), args, 64, s), cudaSuccess));
    {
        const auto before = snapshot();
        CHECK_RT(cudaLaunchKernel(addr(stub_unregistered), dim3(1), dim3(1), nullptr, 0, nullptr),
                 cudaErrorInvalidDeviceFunction);
        CHECK(snapshot() == before);  // never reached the driver
        CHECK_RT(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
    }
    // The nvcc stub way: __cudaGetKernel once, then __cudaLaunchKernel.
    cudaKernel_t k = nullptr;
    CHECK_RT(__cudaGetKernel(&k, addr(stub_b)), cudaSuccess);
    const char* name = nullptr;
    CHECK_OK(cuKernelGetName(&name, k));
    CHECK(name && kOdd3 == name);
    CHECK_OK(cuFuncGetName(&name, reinterpret_cast<CUfunction>(k)));
    CHECK(name && kOdd3 == name);
    CHECK_RT(__cudaGetKernel(&k, addr(stub_unregistered)), cudaErrorInvalidDeviceFunction);
    CHECK_RT(cudaGetKernel(&k, addr(stub_a)), cudaSuccess);
    EXPECT_ONE("cuLaunchKernel", CHECK_RT(__cudaLaunchKernel(k, dim3(1), dim3(1), args, 0, nullptr), cudaSuccess));
    EXPECT_ONE("cuLaunchKernel_ptsz",
               CHECK_RT(__cudaLaunchKernel_ptsz(k, dim3(1), dim3(1), args, 0, nullptr), cudaSuccess));
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(8);
    cfg.blockDim = dim3(256);
    cfg.stream = s;
    EXPECT_ONE("cuLaunchKernelEx", CHECK_RT(cudaLaunchKernelExC(&cfg, addr(stub_a), args), cudaSuccess));
    EXPECT_ONE("cuLaunchKernelEx_ptsz", CHECK_RT(cudaLaunchKernelExC_ptsz(&cfg, addr(stub_b), args), cudaSuccess));
    EXPECT_ONE("cuLaunchCooperativeKernel",
               CHECK_RT(cudaLaunchCooperativeKernel(addr(stub_a), dim3(1), dim3(1), args, 0, s), cudaSuccess));
    EXPECT_ONE("cuLaunchCooperativeKernel_ptsz",
               CHECK_RT(cudaLaunchCooperativeKernel_ptsz(addr(stub_a), dim3(1), dim3(1), args, 0, nullptr),
                        cudaSuccess));
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CHECK_RT(cudaGraphCreate(&graph, 0), cudaSuccess);
    CHECK_RT(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    EXPECT_ONE("cuGraphLaunch", CHECK_RT(cudaGraphLaunch(exec, s), cudaSuccess));
    EXPECT_ONE("cuGraphLaunch_ptsz", CHECK_RT(cudaGraphLaunch_ptsz(exec, nullptr), cudaSuccess));
    CHECK_RT(cudaGraphExecDestroy(exec), cudaSuccess);
    CHECK_RT(cudaGraphDestroy(graph), cudaSuccess);

    // Synchronisation.
    cudaEvent_t ev = nullptr;
    CHECK_RT(cudaEventCreate(&ev), cudaSuccess);
    CHECK_RT(cudaEventRecord(ev, s), cudaSuccess);
    CHECK_RT(cudaEventRecord_ptsz(ev, nullptr), cudaSuccess);
    EXPECT_ONE("cuCtxSynchronize", CHECK_RT(cudaDeviceSynchronize(), cudaSuccess));
    EXPECT_ONE("cuStreamSynchronize", CHECK_RT(cudaStreamSynchronize(s), cudaSuccess));
    EXPECT_ONE("cuStreamSynchronize_ptsz", CHECK_RT(cudaStreamSynchronize_ptsz(nullptr), cudaSuccess));
    EXPECT_ONE("cuEventSynchronize", CHECK_RT(cudaEventSynchronize(ev), cudaSuccess));
    CHECK_RT(cudaEventDestroy(ev), cudaSuccess);
    CHECK_RT(cudaStreamDestroy(s), cudaSuccess);

    // Driver entry points, through the runtime.
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CHECK_RT(cudaGetDriverEntryPoint("cuLaunchKernel", &fn, cudaEnableDefault, &q), cudaSuccess);
#pragma GCC diagnostic pop
    CHECK(q == cudaDriverEntryPointSuccess && fn == sym("cuLaunchKernel"));
    CHECK_RT(cudaGetDriverEntryPoint_ptsz("cuLaunchKernel", &fn, cudaEnableDefault, &q), cudaSuccess);
    CHECK(fn == sym("cuLaunchKernel_ptsz"));
    CHECK_RT(cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, cudaEnableDefault, &q), cudaSuccess);
    CHECK(fn == sym("cuMemCreate"));
    CHECK_RT(cudaGetDriverEntryPointByVersion("cuCtxSynchronize", &fn, 12000, cudaEnablePerThreadDefaultStream, &q),
             cudaSuccess);
    CHECK(fn == sym("cuCtxSynchronize"));
    CHECK_RT(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &fn, 13000, cudaEnableDefault, &q), cudaSuccess);
    CHECK(fn == nullptr && q == cudaDriverEntryPointSymbolNotFound);
    CHECK_RT(cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 10010, cudaEnableDefault, &q), cudaSuccess);
    CHECK(fn == nullptr && q == cudaDriverEntryPointVersionNotSufficent);

    // Several threads at once; each binds the primary context on first use.
    std::vector<std::thread> threads;
    int errors = 0;
    std::mutex m;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 200; ++i) {
                void* p = nullptr;
                cudaError_t e1 = cudaMalloc(&p, 1000);
                cudaError_t e2 = cudaMemset(p, i, 1000);
                cudaError_t e3 = cudaFree(p);
                if (e1 != cudaSuccess || e2 != cudaSuccess || e3 != cudaSuccess) {
                    std::lock_guard<std::mutex> g(m);
                    ++errors;
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(errors == 0);
    CHECK_RT(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
    CHECK(free_b == g_capacity);
}

}  // namespace

int main() {
    test_driver_basics();
    if (g_failures != 0) {  // everything else builds on these
        std::printf("fake_cuda_smoke: basic driver checks failed, stopping\n");
        return 1;
    }
    test_driver_memory();
    test_driver_vmm();
    test_driver_streams();
    test_driver_code();
    test_dlsym();
    test_proc_address();
    test_runtime();
    std::printf("fake_cuda_smoke: %d checks, %d failed\n", g_checks, g_failures);
    return g_failures == 0 ? 0 : 1;
}
