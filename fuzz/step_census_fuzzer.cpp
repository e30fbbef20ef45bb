// collector/step_census.h with events from the input. Fields (split at the
// first byte): the first is the row limit (a number, mod 26; an odd quotient
// runs the census in the C.UTF-8 locale, as in a program that set its own);
// then each is
//   kDELTA NAME    a kernel launch DELTA ns after the previous event
//   nDELTA NAME    an NVTX range end   (K, N: the same on a second thread)
//   *COUNT         everything so far again COUNT times, one period later each
//   anything else  a kernel launch of that name, 1 us later
// Names stop at a NUL, as the C strings they come from do.
// - step_census never crashes or throws, and counts the kernels, ranges and
//   events it was given;
// - it ends with "suggested: NB_STEP='...'", and that value is one NB_STEP
//   accepts (parse_step_marker), naming an NVTX range that was seen, or a
//   kernel regex that matches exactly one of the kernel names seen, as the
//   shim would match it (core/kernel_regex.h), or a fallback;
// - above that line, names are shown for a terminal: valid UTF-8 and no
//   control characters.
#include <memory>
#include <set>

#include "core/kernel_regex.h"
#include "collector/step_census.h"
#include "core/step_marker.h"
#include "fuzz/fuzz_support.h"

using nb::CensusEvent;
using nbfuzz::shown;

namespace {

constexpr size_t kMaxEvents = 3000;
constexpr size_t kMaxNames = 200;

// The single-quoted shell word `quoted` stands for ('\'' is a quote).
bool shell_unquote(const std::string& quoted, std::string& out) {
  out.clear();
  size_t i = 0;
  while (i < quoted.size()) {
    if (quoted[i] != '\'') return false;
    const size_t end = quoted.find('\'', i + 1);
    if (end == std::string::npos) return false;
    out.append(quoted, i + 1, end - i - 1);
    i = end + 1;
    if (i == quoted.size()) return true;
    if (quoted.compare(i, 2, "\\'") != 0) return false;
    out += '\'';
    i += 2;
  }
  return false;
}

// Why `marker` is not a fair suggestion, or "" if it is.
std::string judge(const std::string& marker, const std::set<std::string>& kernels, const std::set<std::string>& ranges) {
  nb::StepMarker m;
  std::string error;
  if (!nb::parse_step_marker(marker, m, error)) return "NB_STEP refuses it: " + error;
  switch (m.kind) {
    case nb::StepMarker::Kind::Time:
    case nb::StepMarker::Kind::Sync: return "";
    case nb::StepMarker::Kind::Nvtx: return ranges.count(m.text) ? "" : "no such NVTX range";
    case nb::StepMarker::Kind::Kernel: {
      nb::KernelRegex re;
      if (!re.compile(m.text, error)) return "does not compile: " + error;
      size_t matched = 0;
      for (const std::string& k : kernels) matched += re.search(k) ? 1 : 0;
      return matched == 1 ? "" : "matches " + std::to_string(matched) + " kernel names";
    }
    default: return "not a marker the census offers";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> f = nbfuzz::split_fields(data, size);
  const uint64_t first = f.empty() ? 20 : nbfuzz::number_u64(f[0]);
  const size_t rows = first % 26;
  std::unique_ptr<nbfuzz::Utf8Locale> locale((first / 26) % 2 ? new nbfuzz::Utf8Locale : nullptr);
  std::vector<CensusEvent> events;
  std::set<std::string> kernels, ranges;
  uint64_t now = 0;
  for (size_t i = 1; i < f.size() && events.size() < kMaxEvents; ++i) {
    const std::string& s = f[i];
    if (!s.empty() && s[0] == '*') {
      const size_t n = events.size();
      const uint64_t period = n ? events.back().ns - events.front().ns + 1000 : 0;
      for (uint64_t r = 1; r <= nbfuzz::number_u64(s.substr(1)) % 1000 && events.size() + n <= kMaxEvents; ++r) {
        for (size_t k = 0; k < n; ++k) {
          CensusEvent e = events[k];
          e.ns += r * period;
          events.push_back(e);
        }
      }
      now = events.empty() ? now : events.back().ns;
      continue;
    }
    CensusEvent e;
    const char kind = s.empty() ? ' ' : s[0];
    size_t at = 0;
    uint64_t delta = 1000;
    if (kind == 'k' || kind == 'K' || kind == 'n' || kind == 'N') {
      e.nvtx = kind == 'n' || kind == 'N';
      e.tid = kind == 'K' || kind == 'N' ? 1 : 0;
      at = 1;
      delta = 0;
      while (at < s.size() && s[at] >= '0' && s[at] <= '9') delta = delta * 10 + static_cast<uint64_t>(s[at++] - '0');
      if (at < s.size() && s[at] == ' ') ++at;
    }
    e.name = s.substr(at);
    e.name = e.name.substr(0, e.name.find('\0'));
    std::set<std::string>& names = e.nvtx ? ranges : kernels;
    if (!names.count(e.name) && kernels.size() + ranges.size() >= kMaxNames) continue;
    names.insert(e.name);
    now += delta;
    e.ns = now;
    events.push_back(e);
  }

  std::string out;
  try {
    out = nb::step_census(events, rows);
  } catch (const std::exception& e) {
    NB_FUZZ_CHECK(false, std::string("step_census threw: ") + e.what());
  }

  if (!events.empty()) {
    const std::string counts = "candidates: " + std::to_string(kernels.size()) + " kernels, " +
                               std::to_string(ranges.size()) + " NVTX ranges (" + std::to_string(events.size()) +
                               " events)\n";
    NB_FUZZ_CHECK(out.compare(0, counts.size(), counts) == 0, "first line: " + shown(out, 120) + ", want " + counts);
  }
  const std::string key = "suggested: NB_STEP=";
  NB_FUZZ_CHECK(out.size() > 2 && out.compare(out.size() - 2, 2, "'\n") == 0, "does not end with the suggestion");
  // A name may itself hold the key: any occurrence whose rest is one quoted
  // word that makes a fair suggestion will do.
  std::string why = "no suggestion line";
  for (size_t p = out.find(key); p != std::string::npos; p = out.find(key, p + 1)) {
    std::string marker;
    if (!shell_unquote(out.substr(p + key.size(), out.size() - 1 - p - key.size()), marker)) continue;
    why = judge(marker, kernels, ranges);
    if (!why.empty()) {
      why = shown(marker) + ": " + why;
      continue;
    }
    // Above the suggestion, names are shown for a terminal: valid UTF-8, no
    // control characters but the line ends.
    const std::string table = out.substr(0, p);
    NB_FUZZ_CHECK(nbfuzz::ref_valid_utf8(table), "the table is not valid UTF-8: " + shown(table, 2000));
    for (char c : table) {
      NB_FUZZ_CHECK(c == '\n' || (static_cast<uint8_t>(c) >= 0x20 && c != 0x7F),
                    "control byte in the table: " + shown(table, 2000));
    }
    return 0;
  }
  NB_FUZZ_CHECK(false, "bad suggestion, " + why + "\n" + shown(out.substr(out.size() > 600 ? out.size() - 600 : 0), 600));
  return 0;
}
