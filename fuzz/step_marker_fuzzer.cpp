// core/step_marker.h: the whole input is an NB_STEP value (up to its
// first NUL, as an environment variable would be).
// - parse_step_marker never throws; it says why when it refuses, and only then;
// - kernel:REGEX is accepted only if it compiles the way the shim compiles it
//   at start-up (core/kernel_regex.h), and it then searches a few kernel
//   names without trouble, in the C locale and in C.UTF-8;
// - launches:N keeps N exactly (no sign, no wrap-around, no clamping);
// - time:DURATION agrees with the number times the unit, within rounding;
// - step_marker_for falls back to none (or sync with a schedule).
#include <cmath>
#include <memory>

#include "core/kernel_regex.h"
#include "core/step_marker.h"
#include "fuzz/fuzz_support.h"

using nb::StepMarker;
using nbfuzz::shown;

namespace {

const char* const kKernelNames[] = {
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, "
     "3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"),
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize1x1x1_execute_segment_k_off_kernel",
    "", "a", "\xff\xfe(){}[]*+?|^$.",
};

bool starts_with(const std::string& s, const char* p, std::string& rest) {
  const size_t n = std::strlen(p);
  if (s.compare(0, n, p) != 0) return false;
  rest = s.substr(n);
  return true;
}

// The decimal value of `s`, or false if it is not digits or exceeds 64 bits.
bool exact_decimal(const std::string& s, uint64_t& v) {
  if (s.empty()) return false;
  unsigned __int128 acc = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    acc = acc * 10 + static_cast<unsigned>(c - '0');
    if (acc > UINT64_MAX) return false;
  }
  v = static_cast<uint64_t>(acc);
  return true;
}

void check_duration(const std::string& text) {
  uint64_t ns = 0;
  if (!nb::parse_duration_ns(text, ns)) return;
  NB_FUZZ_CHECK(ns >= 1 && ns <= 1000000000000000000ull, "duration out of range: " + std::to_string(ns));
  size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  const std::string unit = text.substr(digits);
  const long double scale = unit == "ns"   ? 1
                            : unit == "us" ? 1e3L
                            : unit == "ms" ? 1e6L
                            : unit == "s"  ? 1e9L
                            : unit == "m"  ? 60e9L
                            : unit == "h"  ? 3600e9L
                                           : -1;
  NB_FUZZ_CHECK(scale > 0, "accepted the unit '" + shown(unit) + "'");
  const long double want = std::strtold(text.substr(0, digits).c_str(), nullptr) * scale;
  NB_FUZZ_CHECK(std::fabs(static_cast<long double>(ns) - want) <= 1 + want * 1e-15L,
                shown(text) + " gave " + std::to_string(ns) + " ns");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string spec(reinterpret_cast<const char*>(data), strnlen(reinterpret_cast<const char*>(data), size));
  check_duration(spec);

  StepMarker m;
  std::string error;
  bool ok = false;
  try {
    ok = nb::parse_step_marker(spec, m, error);
  } catch (const std::exception& e) {
    NB_FUZZ_CHECK(false, std::string("parse_step_marker threw: ") + e.what());
  }
  NB_FUZZ_CHECK(ok == error.empty(), "ok=" + std::to_string(ok) + " with error '" + shown(error) + "'");
  if (!ok) NB_FUZZ_CHECK(error.compare(0, 8, "NB_STEP=") == 0, "error does not name NB_STEP: " + shown(error));

  std::string rest;
  if (ok) {
    switch (m.kind) {
      case StepMarker::Kind::None: NB_FUZZ_CHECK(spec.empty(), "kind none for " + shown(spec)); break;
      case StepMarker::Kind::Sync: NB_FUZZ_CHECK(spec == "sync", shown(spec)); break;
      case StepMarker::Kind::ProfilerApi: NB_FUZZ_CHECK(spec == "profiler-api", shown(spec)); break;
      case StepMarker::Kind::Nvtx:
        NB_FUZZ_CHECK(starts_with(spec, "nvtx:", rest) && !rest.empty() && m.text == rest, shown(spec));
        break;
      case StepMarker::Kind::Kernel: {
        NB_FUZZ_CHECK(starts_with(spec, "kernel:", rest) && !rest.empty() && m.text == rest, shown(spec));
        for (bool utf8 : {false, true}) {
          std::unique_ptr<nbfuzz::Utf8Locale> locale(utf8 ? new nbfuzz::Utf8Locale : nullptr);
          nb::KernelRegex re;  // as shim/steps.cpp init_steps does
          std::string why;
          if (!re.compile(m.text, why)) {
            NB_FUZZ_CHECK(utf8, "accepted, but the shim cannot compile it: " + shown(m.text) + ": " + why);
            continue;  // parse_step_marker ran in the C locale; in UTF-8 regcomp may refuse more
          }
          for (const char* name : kKernelNames) (void)re.search(name);
          (void)re.search(m.text);
        }
        break;
      }
      case StepMarker::Kind::Launches: {
        NB_FUZZ_CHECK(starts_with(spec, "launches:", rest) && m.count >= 1, shown(spec));
        // strtoull's leniency (leading blanks, '+') is tolerated; its
        // wrap-around of "-N" and its clamping of overflow are not.
        std::string digits = rest;
        digits.erase(0, digits.find_first_not_of(" \t\n\v\f\r"));
        if (!digits.empty() && digits[0] == '+') digits.erase(0, 1);
        uint64_t want = 0;
        NB_FUZZ_CHECK(exact_decimal(digits, want) && want == m.count,
                      "launches:" + shown(rest) + " accepted as count " + std::to_string(m.count));
        break;
      }
      case StepMarker::Kind::Time: {
        NB_FUZZ_CHECK(starts_with(spec, "time:", rest) && m.ns >= 1, shown(spec));
        uint64_t ns = 0;
        NB_FUZZ_CHECK(nb::parse_duration_ns(rest, ns) && ns == m.ns, shown(spec));
        break;
      }
    }
  }

  for (bool scheduled : {false, true}) {
    // A refused value is the default (no marker), as the option parser uses it.
    const StepMarker used = nb::step_marker_for(ok ? m : StepMarker{}, scheduled);
    const StepMarker::Kind want = ok && m.kind != StepMarker::Kind::None ? m.kind
                                  : scheduled                            ? StepMarker::Kind::Sync
                                                                         : StepMarker::Kind::None;
    NB_FUZZ_CHECK(used.kind == want, "step_marker_for(" + shown(spec) + ")");
  }
  return 0;
}
