// Fake CUDA driver, part 2: the memcpy and memset families.
//
// Device memory is host memory here, so a copy is a memmove and a set is a
// fill. "Async" variants complete before they return. Device-side pointers
// must lie inside an allocation the fake handed out (else
// CUDA_ERROR_INVALID_VALUE), which keeps a buggy test from scribbling over
// random memory; cuMemcpy / cuMemcpyAsync take any pointers (unified
// addressing), like the real ones.
//
// Every entry point exists in a legacy and a per-thread-default-stream
// flavour (_ptds for synchronous, _ptsz for stream-taking ones); both share
// one helper, the flavour deciding what a NULL stream means.
//
// A copy or set that moved at least one byte is reported to the tool (if one
// watches the call) as one piece of device work on its stream, whatever its
// shape (a 2D copy is one copy, not one per row).
#include "fake_driver_internal.h"

#include <cstring>

namespace fake {
namespace {

// A copy or set needs an initialised driver and a current context.
CUresult ready() {
    Context* ctx = nullptr;
    return current_context(&ctx);
}

CUresult ready_on(CUstream stream, bool per_thread) {
    if (CUresult rc = ready()) return rc;
    return check_stream(stream, per_thread);
}

// Tells the tool about a copy that succeeded.
void report_copy(const void* dst, const void* src, unsigned long long bytes, CUstream stream, bool per_thread) {
    if (stream_capturing(stream, per_thread)) return;  // captured: the fake keeps no copy or set nodes
    if (bytes == 0 || !tool_watching()) return;
    FakeCudaWork w{};
    w.kind = FAKE_CUDA_WORK_MEMCPY;
    if (stream_info(stream, per_thread, &w.stream_id, &w.device) != CUDA_SUCCESS) return;
    w.context = primary_context(w.device);
    w.bytes = bytes;
    w.src = describe_memory(reinterpret_cast<CUdeviceptr>(src));
    w.dst = describe_memory(reinterpret_cast<CUdeviceptr>(dst));
    report_work(w);
}

// Tells the tool about a set that succeeded.
void report_set(CUdeviceptr dst, unsigned long long bytes, uint32_t value, CUstream stream, bool per_thread) {
    if (stream_capturing(stream, per_thread)) return;  // captured: the fake keeps no copy or set nodes
    if (bytes == 0 || !tool_watching()) return;
    FakeCudaWork w{};
    w.kind = FAKE_CUDA_WORK_MEMSET;
    if (stream_info(stream, per_thread, &w.stream_id, &w.device) != CUDA_SUCCESS) return;
    w.context = primary_context(w.device);
    w.bytes = bytes;
    w.dst = describe_memory(dst);
    w.value = value;
    report_work(w);
}

// Reports a copy when it succeeded; returns its result.
CUresult reported_copy(CUresult rc, const void* dst, const void* src, unsigned long long bytes, CUstream stream,
                       bool per_thread) {
    if (rc == CUDA_SUCCESS) report_copy(dst, src, bytes, stream, per_thread);
    return rc;
}

CUresult copy_raw(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return CUDA_SUCCESS;
    if (dst == nullptr || src == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memmove(dst, src, bytes);
    return CUDA_SUCCESS;
}

void* as_ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }

// Checks and performs a copy whose device side(s) must be allocations.
CUresult copy_checked(void* dst, bool dst_device, const void* src, bool src_device, size_t bytes) {
    if (bytes == 0) return CUDA_SUCCESS;
    if (dst_device && !range_is_allocated(reinterpret_cast<CUdeviceptr>(dst), bytes)) return CUDA_ERROR_INVALID_VALUE;
    if (src_device && !range_is_allocated(reinterpret_cast<CUdeviceptr>(src), bytes)) return CUDA_ERROR_INVALID_VALUE;
    return copy_raw(dst, src, bytes);
}

CUresult memcpy_unified(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream, bool per_thread) {
    if (CUresult rc = ready_on(stream, per_thread)) return rc;
    return reported_copy(copy_raw(as_ptr(dst), as_ptr(src), bytes), as_ptr(dst), as_ptr(src), bytes, stream,
                         per_thread);
}

CUresult htod(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream, bool per_thread) {
    if (CUresult rc = ready_on(stream, per_thread)) return rc;
    return reported_copy(copy_checked(as_ptr(dst), true, src, false, bytes), as_ptr(dst), src, bytes, stream,
                         per_thread);
}

CUresult dtoh(void* dst, CUdeviceptr src, size_t bytes, CUstream stream, bool per_thread) {
    if (CUresult rc = ready_on(stream, per_thread)) return rc;
    return reported_copy(copy_checked(dst, false, as_ptr(src), true, bytes), dst, as_ptr(src), bytes, stream,
                         per_thread);
}

CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream, bool per_thread) {
    if (CUresult rc = ready_on(stream, per_thread)) return rc;
    return reported_copy(copy_checked(as_ptr(dst), true, as_ptr(src), true, bytes), as_ptr(dst), as_ptr(src), bytes,
                         stream, per_thread);
}

CUresult peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes,
              CUstream stream, bool per_thread) {
    if (CUresult rc = ready_on(stream, per_thread)) return rc;
    if (find_context(dst_ctx) == nullptr || find_context(src_ctx) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    return reported_copy(copy_checked(as_ptr(dst), true, as_ptr(src), true, bytes), as_ptr(dst), as_ptr(src), bytes,
                         stream, per_thread);
}

// One side of a pitched copy: the base address of row 0 / slice 0 and the
// pitches, taken from the CUDA_MEMCPY2D / 3D fields of that side.
struct Side {
    char* base = nullptr;
    size_t pitch = 0;
    size_t height = 0;  // rows per slice (3D only)
    bool device = false;
};

CUresult make_side(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array, size_t x, size_t y,
                   size_t z, size_t pitch, size_t height, Side* out) {
    switch (type) {
        case CU_MEMORYTYPE_HOST: out->base = static_cast<char*>(const_cast<void*>(host)); break;
        case CU_MEMORYTYPE_DEVICE:
            out->base = static_cast<char*>(as_ptr(device));
            out->device = true;
            break;
        case CU_MEMORYTYPE_UNIFIED: out->base = static_cast<char*>(as_ptr(device)); break;
        case CU_MEMORYTYPE_ARRAY:
            (void)array;
            return CUDA_ERROR_NOT_SUPPORTED;  // the fake has no CUDA arrays
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    if (out->base == nullptr) return CUDA_ERROR_INVALID_VALUE;
    out->pitch = pitch;
    out->height = height;
    out->base += x + y * pitch + z * pitch * height;
    return CUDA_SUCCESS;
}

// Copies width bytes x height rows x depth slices between two sides.
CUresult copy_pitched(const Side& dst, const Side& src, size_t width, size_t height, size_t depth) {
    if (width == 0 || height == 0 || depth == 0) return CUDA_SUCCESS;
    if ((height > 1 || depth > 1) && (dst.pitch < width || src.pitch < width)) return CUDA_ERROR_INVALID_VALUE;
    if (depth > 1 && (dst.height < height || src.height < height)) return CUDA_ERROR_INVALID_VALUE;
    for (size_t z = 0; z < depth; ++z) {
        for (size_t y = 0; y < height; ++y) {
            char* d = dst.base + z * dst.pitch * dst.height + y * dst.pitch;
            const char* s = src.base + z * src.pitch * src.height + y * src.pitch;
            if (CUresult rc = copy_checked(d, dst.device, s, src.device, width)) return rc;
        }
    }
    return CUDA_SUCCESS;
}

CUresult copy_2d(const CUDA_MEMCPY2D* p, CUstream stream, bool per_thread) {
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = ready_on(stream, per_thread)) return rc;
    Side dst, src;
    if (CUresult rc = make_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes, p->dstY, 0,
                                p->dstPitch, 0, &dst))
        return rc;
    if (CUresult rc = make_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes, p->srcY, 0,
                                p->srcPitch, 0, &src))
        return rc;
    return reported_copy(copy_pitched(dst, src, p->WidthInBytes, p->Height, 1), dst.base, src.base,
                         static_cast<unsigned long long>(p->WidthInBytes) * p->Height, stream, per_thread);
}

CUresult copy_3d(const CUDA_MEMCPY3D* p, CUstream stream, bool per_thread) {
    if (p == nullptr || p->reserved0 != nullptr || p->reserved1 != nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = ready_on(stream, per_thread)) return rc;
    Side dst, src;
    if (CUresult rc = make_side(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes, p->dstY,
                                p->dstZ, p->dstPitch, p->dstHeight, &dst))
        return rc;
    if (CUresult rc = make_side(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes, p->srcY,
                                p->srcZ, p->srcPitch, p->srcHeight, &src))
        return rc;
    return reported_copy(copy_pitched(dst, src, p->WidthInBytes, p->Height, p->Depth), dst.base, src.base,
                         static_cast<unsigned long long>(p->WidthInBytes) * p->Height * p->Depth, stream,
                         per_thread);
}

// Fills width elements of type T in each of height rows, pitch bytes apart.
template <typename T>
CUresult set_2d(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height, CUstream stream,
                bool per_thread) {
    if (CUresult rc = ready_on(stream, per_thread)) return rc;
    if (width == 0 || height == 0) return CUDA_SUCCESS;
    if (dst % sizeof(T) != 0 || (height > 1 && (pitch < width * sizeof(T) || pitch % sizeof(T) != 0)))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t y = 0; y < height; ++y) {
        const CUdeviceptr row = dst + y * pitch;
        if (!range_is_allocated(row, width * sizeof(T))) return CUDA_ERROR_INVALID_VALUE;
        T* p = static_cast<T*>(as_ptr(row));
        for (size_t i = 0; i < width; ++i) p[i] = value;
    }
    report_set(dst, static_cast<unsigned long long>(sizeof(T)) * width * height, value, stream, per_thread);
    return CUDA_SUCCESS;
}

template <typename T>
CUresult set_1d(CUdeviceptr dst, T value, size_t count, CUstream stream, bool per_thread) {
    return set_2d<T>(dst, count * sizeof(T), value, count, 1, stream, per_thread);
}

}  // namespace
}  // namespace fake

using namespace fake;

// ----------------------------------------------------------------------------
// Exported entry points (see the note in fake_driver.cpp about linkage): every
// one is a legacy / per-thread pair, generated from fake_twins.h. The
// "Unaligned" 2D copy exists because real hardware has alignment rules for the
// aligned one; here both are the same.
// ----------------------------------------------------------------------------

FAKE_DRIVER_COPY_TWINS(FAKE_DEFINE_DRIVER_TWIN)
