#include "shim/steps.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "core/demangle.h"
#include "core/kernel_regex.h"
#include "core/log.h"
#include "core/api.h"
#include "shim/runtime.h"

namespace nb::shim {

StepMarker::Kind g_step_kind = StepMarker::Kind::None;

namespace {

StepMarker* g_marker = nullptr;
KernelRegex* g_kernel_regex = nullptr;
uint32_t g_nvtx_name = 0;  // interned NB_STEP=nvtx:NAME
std::atomic<uint64_t> g_launches{0};

// Whether each kernel name id matches kernel:REGEX: 0 not yet known, 1 no,
// 2 yes. Names are few (thousands), launches many: the regex runs once per
// name, on the first launch that uses it.
constexpr uint32_t kMatchSlots = 1u << 20;
std::atomic<uint8_t>* g_match = nullptr;
std::mutex* g_match_mu = nullptr;

bool kernel_matches(uint32_t name_id) {
  if (name_id == 0 || g_kernel_regex == nullptr) return false;
  if (name_id < kMatchSlots) {
    const uint8_t known = g_match[name_id].load(std::memory_order_relaxed);
    if (known != 0) return known == 2;
  }
  bool yes = false;
  try {
    // The trace and the table show demangled names; users write their regex
    // against those, or against the mangled symbol.
    const std::string mangled = kernel_name_text(name_id);
    std::lock_guard<std::mutex> lock(*g_match_mu);
    yes = g_kernel_regex->search(mangled) || g_kernel_regex->search(demangle(mangled));
  } catch (...) {
    yes = false;
  }
  if (name_id < kMatchSlots) g_match[name_id].store(yes ? 2 : 1, std::memory_order_relaxed);
  return yes;
}

bool is_blocking_copy(const Record& r) {
  // A synchronous copy to the host waits for the device: the host-visible
  // end of a step in loops that read a result back (loss.item(), argmax).
  if (r.kind != Kind::Memcpy || static_cast<CopyKind>(r.aux) != CopyKind::DtoH) return false;
  return std::string_view(api_info(r.api).symbol).find("Async") == std::string_view::npos;
}

}  // namespace

void init_steps(const StepMarker& marker) {
  g_marker = new StepMarker(marker);
  if (marker.kind == StepMarker::Kind::Kernel) {
    auto* re = new KernelRegex;
    std::string error;
    if (!re->compile(marker.text, error)) {
      log::warn("NB_STEP: kernel regex '" + marker.text + "' does not compile (" + error + "); no steps");
      delete re;
      return;
    }
    g_kernel_regex = re;
    g_match = new std::atomic<uint8_t>[kMatchSlots]();
    g_match_mu = new std::mutex;
  }
  if (marker.kind == StepMarker::Kind::Nvtx) g_nvtx_name = intern_name(marker.text.c_str());
  g_step_kind = marker.kind;
}

void after_call_slow(Record& r) {
  // Captured into a graph: nothing ran, no step ended.
  if (r.flags & record_flag::kCaptured) return;
  switch (g_step_kind) {
    case StepMarker::Kind::Kernel:
      if (r.kind == Kind::Launch && r.result == 0 && kernel_matches(r.name)) end_step(r);
      break;
    case StepMarker::Kind::Sync:
      if ((r.kind == Kind::Sync && r.result == 0) || (is_blocking_copy(r) && r.result == 0)) end_step(r);
      break;
    case StepMarker::Kind::Launches:
      if (r.kind == Kind::Launch || r.kind == Kind::Graph) {
        const uint64_t n = g_launches.fetch_add(1, std::memory_order_relaxed) + 1;
        if (g_marker->count != 0 && n % g_marker->count == 0) end_step(r);
      }
      break;
    case StepMarker::Kind::ProfilerApi: {
      // Steps alternate: even = outside the capture range, odd = inside.
      if (r.kind != Kind::Profiler) break;
      const bool start = std::string_view(api_info(r.api).symbol).find("Start") != std::string_view::npos;
      const bool inside = (g_control.step.load(std::memory_order_relaxed) & 1u) != 0;
      if (start != inside) end_step(r);  // a Start inside or a Stop outside changes nothing
      break;
    }
    default:
      break;  // nvtx: at the end of a range; time: the collector cuts by the clock
  }
}

bool nvtx_ends_step(uint32_t name_id) {
  return g_step_kind == StepMarker::Kind::Nvtx && name_id != 0 && name_id == g_nvtx_name;
}

}  // namespace nb::shim
