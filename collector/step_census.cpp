#include "collector/step_census.h"

#include "core/kernel_regex.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "formats/ranking_table.h"
#include "formats/text_encoding.h"

namespace nb {

namespace {

// Twice could be chance; three times is a rhythm.
constexpr size_t kMinCount = 3;
// Intervals spread wider than this (coefficient of variation) are not an
// iteration's: a layer's kernel comes 12 times close together, then waits.
constexpr double kMaxCv = 0.25;
// Scaled spreads (assign_tiers) within this factor of the steadiest's count
// as equally steady: timing noise (a spread measured over 32 intervals is
// itself good to about 12%).
constexpr double kSteadyBand = 1.25;
// How much wider a finer cycle's spread may be than the steadiest's.
constexpr double kFinerCv = 0.05;
// A loop called in bursts (the seed's decode(32), called 9 times) pauses
// between them: such pauses, at most one per this many intervals, are left
// out of the spread. A layer's kernel also pauses, once per step; the
// nesting rule (inside_of) tells the two apart.
constexpr size_t kBurst = 8;
// The spread leaves out this share of the intervals at each end.
constexpr size_t kTrim = 20;
// A layer's kernel: at most this many per step, and a pause between its
// bursts that launches at most this many times as much as one interval.
constexpr size_t kMaxPerStep = 256;
constexpr size_t kMaxPauseIntervals = 4;
// A layer's kernel waits longer than this many of its median intervals where
// the step's marker falls (the rest of the step: the LM head, sampling).
// Less than a pause's twice: on a slow H200 run the layer kernel's gap
// around the step's end was under twice its median in one step in nine.
constexpr double kNestGap = 1.5;
// A warm-up longer than three steps is looked for only with this many
// intervals or more (the later part then keeps at least 8).
constexpr size_t kMinLongWarmup = 16;
constexpr double kWarmupSlower = 1.5;
// The step's count is taken from markers that cover at least this share
// of the longest time a marker covers (an evaluation's kernel, steady in
// its own phases only, is not the iteration).
constexpr double kStepCover = 0.75;
// Evidence enough to set the step's count (see assign_tiers).
constexpr size_t kStepEvidence = 8;
// Counts within steps / kSameCount (at least 1) of the step's are once per
// step: 130 launches in a `generate` of 128 tokens (once more per request).
constexpr size_t kSameCount = 50;
// Column widths: a name is cut, a marker only overflows (see below).
constexpr size_t kNameChars = 60;
constexpr size_t kMarkerChars = 40;
// A short regex is found among a name's first words; templated names have
// hundreds, and pairs of them are tried.
constexpr size_t kMaxWords = 40;
constexpr size_t kLongWord = 32;
constexpr size_t kMinPrefix = 12;

struct Candidate {
  std::string name;
  bool nvtx = false;
  std::vector<uint64_t> times;  // sorted
  size_t threads = 0;
  bool has_median = false;      // two or more occurrences
  uint64_t median_ns = 0;
  bool has_cv = false;          // kMinCount or more, not all at one instant
  double cv = 0;
  size_t pauses = 0;            // intervals left out of cv: slow first ones and pauses between bursts
  std::vector<std::pair<uint64_t, uint64_t>> bursts_apart;  // the pauses between bursts, [from, to)
  uint64_t steady_ns = 0;       // the time its intervals cover, pauses between bursts left out
  uint64_t steady_from_ns = 0;  // where the intervals measured begin (after its warm-up)
  uint64_t covered_ns = 0;      // steady_ns and its quiet pauses (cover)
  uint64_t absent_ns = 0;       // its other pauses: phases it is absent from (cover)
  size_t wide_gaps = 0;         // intervals after steady_from_ns over kNestGap times the median (inside_of)
  bool inside = false;          // several times in each interval of a regular candidate
  int tier = 2;  // 0: regular, once per step; 1: regular, another period; 2: not a marker
  bool exact = false;  // tier 0 with the step's count itself
};

std::vector<Candidate> gather(const std::vector<CensusEvent>& events) {
  std::map<std::pair<bool, std::string>, size_t> index;
  std::vector<Candidate> out;
  std::vector<std::set<uint32_t>> tids;
  for (const CensusEvent& e : events) {
    auto [it, added] = index.emplace(std::make_pair(e.nvtx, e.name), out.size());
    if (added) {
      out.push_back({});
      out.back().name = e.name;
      out.back().nvtx = e.nvtx;
      tids.emplace_back();
    }
    out[it->second].times.push_back(e.ns);
    tids[it->second].insert(e.tid);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].threads = tids[i].size();
  return out;
}

// The spread of gaps[from..] (time order), with pauses between bursts (over
// twice these intervals' median, at most one in kBurst) left out.
struct Spread {
  bool ok = false;
  double cv = 0;
  uint64_t median_ns = 0;
  size_t pauses = 0;
  uint64_t steady_ns = 0;
  std::vector<bool> pause;
};

uint64_t median_of(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size();
  return m % 2 ? v[m / 2] : v[m / 2 - 1] + (v[m / 2] - v[m / 2 - 1]) / 2;
}

Spread spread_from(const std::vector<uint64_t>& gaps, size_t from, uint64_t median_ns) {
  Spread s;
  s.median_ns = median_ns;
  s.pause.assign(gaps.size(), false);
  // Two long intervals in a row count as one pause: after a JAX loop reads
  // its loss, the next step is slow too (the queue refills). A longer run
  // (a warm-up) counts each of its intervals but one.
  const auto long_gap = [&](size_t i) { return gaps[i] > 2 * median_ns; };
  size_t counted = 0;
  for (size_t i = from; i < gaps.size(); ++i) {
    s.pauses += long_gap(i);
    const bool second = i > from && long_gap(i - 1) && (i == from + 1 || !long_gap(i - 2));
    counted += long_gap(i) && !second;
  }
  if (counted * kBurst <= gaps.size() - from) {
    for (size_t i = from; i < gaps.size(); ++i) s.pause[i] = long_gap(i);
  } else {
    s.pauses = 0;
  }
  std::vector<uint64_t> kept;
  for (size_t i = from; i < gaps.size(); ++i) {
    if (!s.pause[i]) {
      kept.push_back(gaps[i]);
      s.steady_ns += gaps[i];
    }
  }
  // The spread leaves out the shortest and the longest twentieth of the
  // intervals (with 20 or more): a loop of 90-µs steps on the host has tens
  // of µs of jitter (the scheduler, the interpreter), and a few late or
  // early steps should not decide whether it is a loop.
  std::sort(kept.begin(), kept.end());
  const size_t trim = kept.size() / kTrim;
  double sum = 0;
  for (size_t i = trim; i + trim < kept.size(); ++i) sum += static_cast<double>(kept[i]);
  const double n = static_cast<double>(kept.size() - 2 * trim);
  if (n <= 0 || sum <= 0) return s;
  const double mean = sum / n;
  double squares = 0;
  for (size_t i = trim; i + trim < kept.size(); ++i) {
    squares += (static_cast<double>(kept[i]) - mean) * (static_cast<double>(kept[i]) - mean);
  }
  s.cv = std::sqrt(squares / n) / mean;
  s.ok = true;
  return s;
}

void measure(Candidate& c) {
  std::sort(c.times.begin(), c.times.end());
  if (c.times.size() < 2) return;
  std::vector<uint64_t> gaps;  // in time order
  for (size_t i = 1; i < c.times.size(); ++i) gaps.push_back(c.times[i] - c.times[i - 1]);
  c.median_ns = median_of(gaps);
  c.has_median = true;
  if (c.times.size() < kMinCount) return;
  // The first steps of a real program are slow (lazy module loading, library
  // handles, autotuning: on the H200 the seed's loop took seconds for its
  // first step, then 76 ms a step): up to three leading gaps longer than
  // twice the median are warm-up, not irregularity. Only leading ones: a
  // per-layer kernel's long gaps recur all through the run and stay.
  size_t skip = 0;
  while (skip < 3 && skip + 2 < gaps.size() && gaps[skip] > 2 * c.median_ns) ++skip;
  Spread s = spread_from(gaps, skip, c.median_ns);
  // A warm-up can also last many steps: the first request of a `generate`
  // (each new length autotuned: 46-78 ms a token on the H200, then 6 ms in
  // the second), a JAX loop's first steps. If the run is not steady as a
  // whole, its later part is measured alone (from an eighth, a quarter, then
  // half of the way on), with its own median: a program's steady state is
  // what comes after its warm-up, when that was slower. The rules below
  // (nesting, coverage) judge what this lets through.
  if (!(s.ok && s.cv <= kMaxCv) && gaps.size() >= kMinLongWarmup) {
    // A warm-up is slower: its intervals' mean at least kWarmupSlower times
    // the rest's (a gemm variant that cuBLAS uses in some steps only is as
    // irregular early as late, and is not measured on its later half).
    const auto mean = [&](size_t from, size_t to) {
      double sum = 0;
      for (size_t i = from; i < to; ++i) sum += static_cast<double>(gaps[i]);
      return sum / static_cast<double>(to - from);
    };
    for (size_t part : {8, 4, 2}) {
      const size_t from = gaps.size() / part;
      if (mean(0, from) < kWarmupSlower * mean(from, gaps.size())) continue;
      const Spread later = spread_from(gaps, from, median_of({gaps.begin() + static_cast<long>(from), gaps.end()}));
      if (later.ok && later.cv <= kMaxCv) {
        s = later;
        skip = from;
        c.median_ns = later.median_ns;
        break;
      }
    }
  }
  if (!s.ok) return;
  c.pauses = skip + s.pauses;
  c.steady_ns = s.steady_ns;
  c.steady_from_ns = c.times[skip];
  for (size_t i = skip; i < gaps.size(); ++i) {
    if (s.pause[i]) c.bursts_apart.emplace_back(c.times[i], c.times[i + 1]);
  }
  c.cv = s.cv;
  c.has_cv = true;
  for (size_t i = skip; i < gaps.size(); ++i) {
    c.wide_gaps += static_cast<double>(gaps[i]) > kNestGap * static_cast<double>(c.median_ns);
  }
}

// Steady: intervals within kMaxCv. A marker must also be steady over most
// of the run from where its steady part starts (at least half of that
// time): a loop that runs in one phase only (an evaluation's batches,
// between training steps) is not the run's step. Counted from where it
// starts, not from the run's start: a JAX program compiles for seconds
// before a loop of a few ms, a `generate` warms up for its whole first
// request. Its quiet pauses count as its time (cover): a JAX loop that
// reads its loss every 10 steps waits there for half its time.
struct Run {
  std::vector<uint64_t> times;  // every event's, sorted
};

bool steady(const Candidate& c) { return c.has_cv && c.cv <= kMaxCv; }

bool regular(const Candidate& c, const Run& run) {
  return steady(c) && c.covered_ns * 2 >= run.times.back() - c.steady_from_ns;
}

// How many events of the run fall inside a pause (from, to).
size_t held_in(const Run& run, uint64_t from, uint64_t to) {
  return static_cast<size_t>(std::lower_bound(run.times.begin(), run.times.end(), to) -
                             std::upper_bound(run.times.begin(), run.times.end(), from));
}

// Whether a pause of `a` launches about as much as one of its intervals
// does (at most kMaxPauseIntervals times as much, and 8 more): the rest of
// a step around a layer's kernel (LM head, sampling), a synchronize between
// calls of a loop; not an evaluation between training steps. Counted in
// launches, not time: a host that runs ahead of the GPU launches a step's
// layers in a burst and then waits.
bool quiet_pause(const Candidate& a, const Run& run, size_t held) {
  const size_t per_interval = run.times.size() / a.times.size();
  return held <= kMaxPauseIntervals * per_interval + 8;
}

// The time a candidate covers: its steady intervals, and its pauses that
// launch no more than about one of its intervals does (a quarter more, and
// 8: a synchronize, a loss read back, a slow step, the copy between two
// calls of a loop); not the rest of the step around a layer's kernel, nor
// another loop (an evaluation). On the H200 a gemm variant that cuBLAS
// picks for some sequence lengths only is steady within its steps and
// pauses for several steps' launches.
void cover(Candidate& c, const Run& run) {
  c.covered_ns = c.steady_ns;
  c.absent_ns = 0;
  const size_t per_interval = run.times.size() / c.times.size();
  for (const auto& [from, to] : c.bursts_apart) {
    if (held_in(run, from, to) <= per_interval + per_interval / 4 + 8) c.covered_ns += to - from;
    else c.absent_ns += to - from;
  }
}

// Whether `a`'s pauses are quiet as a rule (their median): a layer's kernel
// pauses for the rest of the step, a step kernel for an evaluation, a loop
// of its own.
bool short_pauses(const Candidate& a, const Run& run) {
  if (a.bursts_apart.size() < 2) return false;
  std::vector<size_t> held;
  for (const auto& [from, to] : a.bursts_apart) held.push_back(held_in(run, from, to));
  std::nth_element(held.begin(), held.begin() + held.size() / 2, held.end());
  return quiet_pause(a, run, held[held.size() / 2]);
}

// Whether `a`, with short pauses, runs several times in each step of `b`:
// nine of ten of a regular, rarer `b`'s occurrences where `a` runs (after
// its warm-up, and not in a pause of `a` that holds another phase's
// launches) each fall in a quiet interval of `a` of their own that is over
// kNestGap times its median (a pause, or a step's end that came sooner),
// and `a` runs at most a few hundred times per step (126 layers, two of it
// in each). `a`
// may pause more often than that: in a `generate`'s first request the
// layers wait for tuning inside a token too; and it may be absent for
// whole steps: cuBLAS picks some gemm variants for some sequence lengths
// only. A layer's kernel is inside the argmax's step; a step kernel whose
// loop is called in bursts is not, unless the program also launches a
// steady kernel of its own between its calls (that one then reads as the
// step).
bool inside_of(const Candidate& a, const Candidate& b, const Run& run) {
  const size_t n = b.times.size();
  // (Nine in ten of b's occurrences need a wide interval of a's each.)
  if (n >= a.times.size() || 10 * (a.wide_gaps + 3) < 9 * n || a.times.size() > kMaxPerStep * n) return false;
  size_t considered = 0, hit = 0;
  size_t last_gap = SIZE_MAX;
  for (const uint64_t t : b.times) {
    if (t < a.steady_from_ns || t >= a.times.back()) continue;
    // a's interval that t falls in: [*prev, *next).
    const auto next = std::upper_bound(a.times.begin(), a.times.end(), t);
    const auto prev = std::prev(next);
    const uint64_t gap = *next - *prev;
    const bool wide = static_cast<double>(gap) > kNestGap * static_cast<double>(a.median_ns);
    if (wide && !quiet_pause(a, run, held_in(run, *prev, *next))) continue;
    ++considered;
    const auto k = static_cast<size_t>(prev - a.times.begin());
    if (wide && k != last_gap) {
      ++hit;
      last_gap = k;
    }
  }
  return considered >= kMinCount && hit * 10 >= considered * 9;
}

// The step's count, from the markers with the most evidence (seen
// kStepEvidence times or more, when any is: a compiler's phases can be
// three evenly spaced ranges by chance), present all through their span
// (when any is), and covering most of the longest time covered among them
// (kStepCover: an evaluation's own loop covers its phases only): the
// steadiest of them, or a finer cycle about as steady (a coarser steady
// one, every 8th step for logging, is a multiple of the iteration; below).
// Markers seen about as often (within kSameCount: a warm-up or prefill
// pass) recur once per step; rarer or more frequent ones are listed after
// them.
void assign_tiers(std::vector<Candidate>& cs, const Run& run) {
  for (Candidate& c : cs) cover(c, run);
  for (Candidate& a : cs) {
    if (!steady(a) || !short_pauses(a, run)) continue;
    for (const Candidate& b : cs) {
      if (&a != &b && steady(b) && inside_of(a, b, run)) {
        a.inside = true;
        break;
      }
    }
  }
  const auto marker = [&run](const Candidate& c) { return regular(c, run) && !c.inside; };
  bool evidence = false;
  for (const Candidate& c : cs) evidence = evidence || (marker(c) && c.times.size() >= kStepEvidence);
  // Present all through its span (absent for at most a tenth of it), when
  // any is: a step's marker never misses a step; an evaluation's kernel
  // misses the training between, a gemm variant the steps of other lengths.
  const auto present = [](const Candidate& c) {
    return c.absent_ns * 10 <= c.times.back() - c.steady_from_ns;
  };
  bool any_present = false;
  for (const Candidate& c : cs) {
    any_present = any_present || (marker(c) && (!evidence || c.times.size() >= kStepEvidence) && present(c));
  }
  const auto judged = [&](const Candidate& c) {
    return marker(c) && (!evidence || c.times.size() >= kStepEvidence) && (!any_present || present(c));
  };
  uint64_t widest = 0;
  for (const Candidate& c : cs) {
    if (judged(c)) widest = std::max(widest, c.covered_ns);
  }
  const auto wide = [&](const Candidate& c) {
    return judged(c) && static_cast<double>(c.covered_ns) >= kStepCover * static_cast<double>(widest);
  };
  // The steadiest sets the count (the larger on a tie). A finer cycle about
  // as steady is the step instead: a coarser cycle is the sum of several
  // steps, so its intervals spread less relative to their length, by the
  // square root of how many steps it spans (on the H200 a `generate` kernel
  // launched every fourth token spread 8%, the per-token argmax 11%). So a
  // candidate with half as many again or more is the step when its spread
  // scaled by cv / sqrt(count) (the same for a step and its multiples) is
  // within kSteadyBand of the steadiest's, and its own spread at most
  // kFinerCv above it: a layer's kernel that nesting missed has a small
  // scaled spread by its count alone, and a wider one (22% against the
  // step's 15% on a slow run of the seed's loop).
  const auto scaled = [](const Candidate& c) { return c.cv / std::sqrt(static_cast<double>(c.times.size())); };
  const Candidate* best = nullptr;
  for (const Candidate& c : cs) {
    if (!wide(c)) continue;
    if (best == nullptr || c.cv < best->cv - 1e-12 || (c.cv <= best->cv + 1e-12 && c.times.size() > best->times.size())) {
      best = &c;
    }
  }
  if (best == nullptr) return;
  size_t steps = best->times.size();
  for (const Candidate& c : cs) {
    if (wide(c) && 2 * c.times.size() >= 3 * best->times.size() && scaled(c) <= scaled(*best) * kSteadyBand + 1e-9 &&
        c.cv <= best->cv + kFinerCv) {
      steps = std::max(steps, c.times.size());
    }
  }
  const size_t same = std::max<size_t>(1, steps / kSameCount);
  const auto near = [&](size_t n, size_t within) { return n + within >= steps && n <= steps + within; };
  // Near that, the count most of them share is the step's (the larger on a
  // tie): on the H200 a `generate` of 128 tokens launched many kernels once
  // a token, 128 times, and some once or twice more per request (130, 132),
  // as steady; which of those is steadiest by a tenth of a percent, or the
  // finest, is chance.
  std::map<size_t, size_t> counts;
  for (const Candidate& c : cs) {
    if (wide(c) && near(c.times.size(), 2 * same)) ++counts[c.times.size()];
  }
  size_t most = 0;
  for (const auto& [n, k] : counts) {
    if (k >= most) {
      most = k;
      steps = n;
    }
  }
  for (Candidate& c : cs) {
    if (!marker(c)) continue;
    const size_t n = c.times.size();
    c.tier = near(n, same) ? 0 : 1;
    c.exact = n == steps;
  }
}

// Among markers: an NVTX range first (someone named it), then one with the
// step's count itself, then the steadier
// (to the whole percent: finer differences are noise), then the one seen
// last, which is later in the step and so really ends it.
bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.tier != b.tier) return a.tier < b.tier;
  if (a.tier < 2) {
    if (a.nvtx != b.nvtx) return a.nvtx;
    if (a.exact != b.exact) return a.exact;
    const long pa = std::lround(a.cv * 100), pb = std::lround(b.cv * 100);
    if (pa != pb) return pa < pb;
    if (a.times.back() != b.times.back()) return a.times.back() > b.times.back();
  } else {
    if (a.has_cv != b.has_cv) return a.has_cv;
    if (a.has_cv && a.cv != b.cv) return a.cv < b.cv;
    if (a.times.size() != b.times.size()) return a.times.size() > b.times.size();
  }
  if (a.nvtx != b.nvtx) return a.nvtx;
  return a.name < b.name;
}

// ---- kernel:REGEX ------------------------------------------------------------

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Runs of [A-Za-z0-9_], distinct, in order of first appearance: literal in a
// regex, so they need no escaping.
std::vector<std::string> words_of(const std::string& name) {
  std::vector<std::string> out;
  for (size_t i = 0; i < name.size() && out.size() < kMaxWords;) {
    if (!is_word_char(name[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < name.size() && is_word_char(name[j])) ++j;
    std::string w = name.substr(i, j - i);
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
    i = j;
  }
  return out;
}

// A word a user would recognise the kernel by: an identifier, not a number
// (3ul), nor a type or a namespace that most kernels share and that is
// unique today only by accident.
bool distinctive(const std::string& w) {
  static const std::set<std::string> kCommon = {
      "void", "unsigned", "signed", "int", "long", "short", "char", "float", "double", "bool", "const",
      "true", "false", "anonymous", "namespace", "std", "at", "native", "c10", "detail", "cuda", "Half",
      "BFloat16", "half", "kernel"};
  return w.size() >= 3 && !std::isdigit(static_cast<unsigned char>(w[0])) && kCommon.count(w) == 0;
}

// Whether `a` and then `b` (if any) occur in `s`, as `a.*b` would find them.
bool contains_in_order(const std::string& s, const std::string& a, const std::string& b) {
  const size_t p = s.find(a);
  return p != std::string::npos && (b.empty() || s.find(b, p + a.size()) != std::string::npos);
}

bool unique_among(const std::string& name, const std::vector<std::string>& kernels, const std::string& a,
                  const std::string& b) {
  for (const std::string& k : kernels) {
    if (k != name && contains_in_order(k, a, b)) return false;
  }
  return true;
}

std::string regex_escape(const std::string& s) {
  static const std::string kSpecial = "\\^$.|?*+()[]{}";
  std::string out;
  for (char c : s) {
    if (kSpecial.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

// The proof: what the shim will do with the pattern, against every kernel seen.
bool matches_only(const std::string& pattern, const std::string& name, const std::vector<std::string>& kernels) {
  KernelRegex re;
  std::string error;
  if (!re.compile(pattern, error)) return false;
  for (const std::string& k : kernels) {
    if (re.search(k) != (k == name)) return false;
  }
  return true;
}

// cuBLAS and CUTLASS names are one word of a hundred characters
// (sm80_xmma_gemm_..._tilesize128x256x64_...): a word longer than kLongWord
// is cut to its first '_'-separated pieces, as few as keep it unique but no
// shorter than kMinPrefix, so that it still reads as the kernel's name.
std::string short_prefix(const std::string& word, const std::string& name, const std::vector<std::string>& kernels) {
  if (word.size() <= kLongWord) return word;
  for (size_t cut = word.find('_', kMinPrefix); cut != std::string::npos; cut = word.find('_', cut + 1)) {
    const std::string prefix = word.substr(0, cut);
    if (unique_among(name, kernels, prefix, "")) return prefix;
  }
  return word;
}

// Shortest to type first: one distinctive word of the name, else a word and
// a later one (`reduce_kernel.*ArgMaxOps`), else the whole name anchored.
// The substring tests only propose; std::regex decides. "" if nothing passes.
std::string kernel_regex(const std::string& name, const std::vector<std::string>& kernels) {
  const std::vector<std::string> words = words_of(name);
  std::vector<std::string> proposals;
  for (const std::string& w : words) {
    if (distinctive(w) && unique_among(name, kernels, w, "")) {
      proposals.push_back(short_prefix(w, name, kernels));
      break;
    }
  }
  if (proposals.empty()) {
    std::string best;
    for (size_t i = 0; i < words.size(); ++i) {
      if (!distinctive(words[i])) continue;
      for (size_t j = i + 1; j < words.size(); ++j) {
        std::string p = words[i] + ".*" + words[j];
        if ((best.empty() || p.size() < best.size()) && unique_among(name, kernels, words[i], words[j])) {
          best = std::move(p);
        }
      }
    }
    if (!best.empty()) proposals.push_back(best);
  }
  proposals.push_back("^" + regex_escape(name) + "$");
  for (const std::string& p : proposals) {
    if (matches_only(p, name, kernels)) return p;
  }
  return "";
}

// ---- text --------------------------------------------------------------------

// For a terminal: valid UTF-8, control characters made visible, cut at
// `max_chars` (0 = never) with "...". `chars` is the width it takes.
std::string shown(const std::string& raw, size_t max_chars, size_t& chars) {
  std::string valid;
  formats::append_valid_utf8(valid, raw);
  std::string out;
  chars = 0;
  for (size_t i = 0; i < valid.size();) {
    const unsigned char c = static_cast<unsigned char>(valid[i]);
    size_t n = formats::utf8_sequence_length(valid, i);
    if (n == 0) n = 1;
    if (max_chars && chars == max_chars - 3 && i + n < valid.size()) {
      out += "...";
      chars += 3;
      break;
    }
    if (c < 0x20 || c == 0x7F) out += '?';
    else out.append(valid, i, n);
    i += n;
    ++chars;
  }
  return out;
}

void pad(std::string& out, const std::string& cell, size_t width, bool right) {
  size_t chars = 0;
  const std::string text = shown(cell, 0, chars);
  const std::string fill(width > chars ? width - chars : 0, ' ');
  out += right ? fill + text : text + fill;
}

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string fallback(const std::string& why) {
  return why + ": cut steps by wall time, or use NB_STEP='sync' if each step waits for the GPU\n"
               "suggested: NB_STEP='time:1s'\n";
}

}  // namespace

std::string step_census(const std::vector<CensusEvent>& events, size_t max_rows) {
  if (events.empty()) return fallback("no kernel launches or NVTX range ends were seen");
  std::vector<Candidate> cs = gather(events);
  for (Candidate& c : cs) measure(c);
  Run run;
  run.times.reserve(events.size());
  for (const CensusEvent& e : events) run.times.push_back(e.ns);
  std::sort(run.times.begin(), run.times.end());
  assign_tiers(cs, run);
  std::sort(cs.begin(), cs.end(), ranks_before);

  std::vector<std::string> kernels;
  size_t ranges = 0;
  for (const Candidate& c : cs) {
    if (c.nvtx) ++ranges;
    else kernels.push_back(c.name);
  }
  // Regexes cost a std::regex pass over every kernel name: only for the rows
  // shown and for the suggestion.
  std::vector<std::string> markers(cs.size());
  std::vector<bool> done(cs.size(), false);
  auto marker = [&](size_t i) -> const std::string& {
    if (!done[i]) {
      if (cs[i].nvtx) {
        if (!cs[i].name.empty()) markers[i] = "nvtx:" + cs[i].name;  // NB_STEP=nvtx: needs a name
      } else if (const std::string re = kernel_regex(cs[i].name, kernels); !re.empty()) {
        markers[i] = "kernel:" + re;
      }
      done[i] = true;
    }
    return markers[i];
  };

  const size_t rows = max_rows ? std::min(max_rows, cs.size()) : cs.size();
  // A marker is never cut (it is copied); one longer than the column pushes
  // the rest of its own row right instead of widening every row.
  size_t marker_width = 7;  // "NB_STEP"
  for (size_t i = 0; i < rows; ++i) {
    size_t chars = 0;
    shown(marker(i), 0, chars);
    marker_width = std::max(marker_width, std::min(chars, kMarkerChars));
  }

  std::string out = "candidates: " + std::to_string(kernels.size()) + " kernels, " + std::to_string(ranges) +
                    " NVTX ranges (" + std::to_string(events.size()) + " events)\n";
  out += "rank  ";
  pad(out, "NB_STEP", marker_width, false);
  out += "    count  median interval  regularity  pauses  threads  name\n";
  size_t rank = 0;
  for (size_t i = 0; i < rows; ++i) {
    const Candidate& c = cs[i];
    char cv[32] = "-";
    if (c.has_cv) std::snprintf(cv, sizeof cv, "%.1f%%", c.cv * 100);
    size_t chars = 0;
    pad(out, c.tier < 2 ? std::to_string(++rank) : "-", 4, true);
    out += "  ";
    pad(out, marker(i).empty() ? "-" : marker(i), marker_width, false);
    out += "  ";
    pad(out, std::to_string(c.times.size()), 7, true);
    out += "  ";
    pad(out, c.has_median ? formats::format_duration_ns(c.median_ns) : "-", 15, true);
    out += "  ";
    pad(out, cv, 10, true);
    out += "  ";
    pad(out, c.has_cv ? std::to_string(c.pauses) : "-", 6, true);
    out += "  ";
    pad(out, std::to_string(c.threads), 7, true);
    out += "  " + shown(c.name, kNameChars, chars) + "\n";
  }
  if (rows < cs.size()) out += "(" + std::to_string(cs.size() - rows) + " more not shown)\n";
  out += "regularity: spread of the intervals (coefficient of variation, the shortest and longest\n"
         "        " + std::to_string(100 / kTrim) + "% left out); lower is steadier\n"
         "pauses: intervals left out of the spread: a warm-up (up to 3 slow first ones, or the first\n"
         "        eighth, quarter or half when only the rest is steady), and those over twice the\n"
         "        median when at most one in " + std::to_string(kBurst) +
         " is, two in a row counted once (a loop called in\n"
         "        bursts, or one that waits every few steps)\n"
         "rank -: not a step marker (seen fewer than " + std::to_string(kMinCount) +
         " times, intervals spread over " + std::to_string(std::lround(kMaxCv * 100)) +
         "%, steady over less\n        than half the run after its warm-up, or several times in each step of a steadier\n"
         "        one, as a layer's kernels are)\n";

  for (size_t i = 0; i < cs.size() && cs[i].tier < 2; ++i) {
    if (!marker(i).empty()) return out + "suggested: NB_STEP=" + shell_quoted(marker(i)) + "\n";
  }
  return out + fallback("no kernel or NVTX range recurs steadily");
}

}  // namespace nb
