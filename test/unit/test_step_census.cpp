// `nbprof steps`' analysis: which names recur like an iteration, in what
// order, and whether every NB_STEP value offered really selects its name.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>

#include "core/kernel_regex.h"
#include "collector/step_census.h"

using nb::CensusEvent;

namespace {

constexpr uint64_t kUs = 1000, kMs = 1000 * kUs;

// The lines under every census table.
const char* const kLegend = R"(regularity: spread of the intervals (coefficient of variation, the shortest and longest
        5% left out); lower is steadier
pauses: intervals left out of the spread: a warm-up (up to 3 slow first ones, or the first
        eighth, quarter or half when only the rest is steady), and those over twice the
        median when at most one in 8 is, two in a row counted once (a loop called in
        bursts, or one that waits every few steps)
rank -: not a step marker (seen fewer than 3 times, intervals spread over 25%, steady over less
        than half the run after its warm-up, or several times in each step of a steadier
        one, as a layer's kernels are)
)";

const char* const kEmbed =
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, "
    "true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 "
    "const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned "
    "int, long)";
const char* const kRmsNorm =
    "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, "
    "int, int)";
const char* const kGemmSmall = "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn";
const char* const kGemmBig = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn";
const char* const kRotary =
    "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, "
    "c10::BFloat16 const*, int, long, long, int, int, int)";
const char* const kKvCache =
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_"
    "bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, int, int, int, int, int, "
    "int, float const*, float const*)";
const char* const kFlash =
    "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, "
    "Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, true, false, false, "
    "false>(Flash_fwd_params)";
const char* const kCombine =
    "void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, 4, 2, "
    "false>(Flash_fwd_params)";
const char* const kAdd =
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)";
const char* const kSiluMul =
    "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 "
    "const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)";
const char* const kLmHead =
    "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_stage3_warpsize2x4x1_tensor16x8x16_kernel";
const char* const kArgmax =
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, "
    "at::native::ArgMaxOps<c10::BFloat16>, unsigned int, long, 4> >(at::native::ReduceOp<c10::BFloat16, "
    "at::native::ArgMaxOps<c10::BFloat16>, unsigned int, long, 4>)";
const char* const kCopyToken =
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{"
    "lambda()#3}::operator()() const::{lambda()#8}::operator()() const::{lambda(long)#1}, std::array<char*, 2ul>, "
    "4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
    "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, "
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
    "const::{lambda()#8}::operator()() const::{lambda(long)#1}, std::array<char*, 2ul>, "
    "TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
    "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)";

// A decode loop as the shim sees it: 32 steps 10ms apart (plus a few us of
// deterministic jitter). Each launches, 4us apart, an embedding lookup, 12
// layers of 16 kernels, a final norm, the lm_head GEMM, an argmax and a copy
// of the new token (197 launches), then waits for the GPU. The per-step
// kernels recur every 10ms; a layer's come in a burst, then wait ~9ms.
std::vector<CensusEvent> decode_loop() {
  const std::vector<const char*> layer = {kRmsNorm,  kGemmSmall, kGemmSmall, kGemmSmall, kRotary, kKvCache,
                                          kFlash,    kCombine,   kGemmSmall, kAdd,       kRmsNorm, kGemmBig,
                                          kGemmBig,  kSiluMul,   kGemmSmall, kAdd};
  std::vector<CensusEvent> events;
  for (uint64_t step = 0; step < 32; ++step) {
    uint64_t t = 1000 * kMs + step * 10 * kMs + (step * 37 % 11) * kUs;
    auto launch = [&](const char* name) {
      events.push_back({name, false, t, 7});
      t += 4 * kUs;
    };
    launch(kEmbed);
    for (int l = 0; l < 12; ++l) {
      for (const char* k : layer) launch(k);
    }
    launch(kRmsNorm);
    launch(kLmHead);
    launch(kArgmax);
    launch(kCopyToken);
  }
  return events;
}

// A training loop: 10 steps ~100ms apart (a few ms of deterministic jitter),
// each with NVTX ranges forward, backward and step, three GEMMs at uneven
// times and one optimizer kernel; a data-loader range (its own thread) ends
// only on some steps.
std::vector<CensusEvent> training_loop() {
  std::vector<CensusEvent> events;
  for (uint64_t step = 0; step < 10; ++step) {
    const uint64_t t = 5000 * kMs + step * 100 * kMs + (step * 7 % 5) * kMs;
    if (step % 4 == 0 || step == 5) events.push_back({"dataloader", true, t + kMs / 2, 2});
    for (uint64_t at : {1, 11, 21}) {
      events.push_back({"void gemm_kernel<float>(float const*, float*)", false, t + at * kMs, 1});
    }
    events.push_back({"forward", true, t + 30 * kMs, 1});
    events.push_back({"backward", true, t + 70 * kMs, 1});
    events.push_back({"void adam_step_kernel(float*, float const*, int)", false, t + 90 * kMs, 1});
    events.push_back({"step", true, t + 99 * kMs, 1});
  }
  return events;
}

// The NB_STEP cell of every table row, found under the header's column (a
// marker longer than the column pushes its row right).
std::vector<std::string> markers(const std::string& table) {
  std::istringstream in(table);
  std::string line;
  size_t width = 0;
  std::vector<std::string> out;
  while (std::getline(in, line)) {
    if (line.rfind("rank  NB_STEP", 0) == 0) {
      width = line.find("    count") - 6;
      continue;
    }
    const bool row = width && line.size() > 6 + width && line.compare(4, 2, "  ") == 0 &&
                     (std::isdigit(static_cast<unsigned char>(line[3])) || line[3] == '-');
    if (!row) continue;
    const size_t end = line[6 + width] == ' ' ? 6 + width : line.find("  ", 6 + width);
    std::string cell = line.substr(6, end - 6);
    cell.erase(cell.find_last_not_of(' ') + 1);
    out.push_back(cell);
  }
  return out;
}

std::string suggested(const std::string& table) {
  const std::string key = "suggested: NB_STEP=";
  const size_t at = table.find(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size();
  return table.substr(from, table.find('\n', from) - from);
}

// Regular launches of each name: 5 each, one every 1ms, in turn.
std::vector<CensusEvent> regular(const std::vector<std::string>& names) {
  std::vector<CensusEvent> events;
  for (uint64_t i = 0; i < 5; ++i) {
    for (size_t n = 0; n < names.size(); ++n) events.push_back({names[n], false, i * kMs + n * kUs, 1});
  }
  return events;
}

}  // namespace

TEST_CASE("census: a decode loop's per-step kernels come first", "[unit][census][golden]") {
  const std::string got = nb::step_census(decode_loop(), 8);
  const std::string want = R"golden(candidates: 13 kernels, 0 NVTX ranges (6304 events)
rank  NB_STEP                                    count  median interval  regularity  pauses  threads  name
   1  kernel:unrolled_elementwise_kernel            32         10.004ms        0.1%       0        1  void at::native::unrolled_elementwise_kernel<at::native::...
   2  kernel:reduce_kernel                          32         10.004ms        0.1%       0        1  void at::native::reduce_kernel<512, 1, at::native::Reduce...
   3  kernel:sm80_xmma_gemm                         32         10.004ms        0.1%       0        1  sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x...
   4  kernel:indexSelectLargeIndex                  32         10.004ms        0.1%       0        1  void at::native::(anonymous namespace)::indexSelectLargeI...
   -  kernel:flash_fwd_splitkv_combine_kernel      384         64.000us        0.0%      31        1  void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_tr...
   -  kernel:flash_fwd_splitkv_kernel              384         64.000us        0.0%      31        1  void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128...
   -  kernel:act_and_mul_kernel                    384         64.000us        0.0%      31        1  void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloa...
   -  kernel:reshape_and_cache_flash_kernel        384         64.000us        0.0%      31        1  void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, ...
(5 more not shown)
)golden" + std::string(kLegend) + "suggested: NB_STEP='kernel:unrolled_elementwise_kernel'\n";
  INFO(got);
  CHECK(got == want);
}

TEST_CASE("census: an NVTX step range beats the kernels it holds", "[unit][census][golden]") {
  const std::string got = nb::step_census(training_loop(), 0);
  const std::string want = R"golden(candidates: 2 kernels, 4 NVTX ranges (74 events)
rank  NB_STEP                    count  median interval  regularity  pauses  threads  name
   1  nvtx:step                     10        102.000ms        2.3%       0        1  step
   2  nvtx:backward                 10        102.000ms        2.3%       0        1  backward
   3  nvtx:forward                  10        102.000ms        2.3%       0        1  forward
   4  kernel:adam_step_kernel       10        102.000ms        2.3%       0        1  void adam_step_kernel(float*, float const*, int)
   -  nvtx:dataloader                4        301.000ms       47.6%       0        1  dataloader
   -  kernel:gemm_kernel            30         10.000ms      104.1%       0        1  void gemm_kernel<float>(float const*, float*)
)golden" + std::string(kLegend) + "suggested: NB_STEP='nvtx:step'\n";
  INFO(got);
  CHECK(got == want);
}

TEST_CASE("census: every kernel regex offered matches its name and no other", "[unit][census]") {
  // Names full of regex metacharacters, and names that share every
  // word, so that only the whole escaped name can tell them apart.
  const std::vector<std::string> names = {
      "void gemm<128, 64>(float*)", "void gemm<64, 128>(float*)", "a.b[c]{2}", "a.b[c]{2}x", "x^y$z|w?",
      "\\back\\slash", "back_slash", "op()+*", "ns::k<(Enum)1>(int const&)",
      "lm_head_gemm<T>::run(T*) [with T = half]", "void reduce_kernel<ArgMaxOps>()", "void reduce_kernel<SumOps>()", "void scan_kernel<ArgMaxOps>()",
      "void scan_kernel<SumOps>()"};
  const std::string table = nb::step_census(regular(names), 0);
  INFO(table);
  const std::vector<std::string> cells = markers(table);
  REQUIRE(cells.size() == names.size());
  std::vector<std::string> covered;
  for (const std::string& cell : cells) {
    INFO(cell);
    REQUIRE(cell.rfind("kernel:", 0) == 0);
    nb::KernelRegex re;
    std::string error;
    REQUIRE(re.compile(cell.substr(7), error));
    std::vector<std::string> hits;
    for (const std::string& n : names) {
      if (re.search(n)) hits.push_back(n);
    }
    REQUIRE(hits.size() == 1);
    covered.push_back(hits[0]);
  }
  std::sort(covered.begin(), covered.end());
  CHECK(std::unique(covered.begin(), covered.end()) == covered.end());
  // Where no word or pair of words is unique, the whole name, escaped.
  for (const char* whole : {"kernel:^void gemm<128, 64>\\(float\\*\\)$", "kernel:^a\\.b\\[c\\]\\{2\\}$",
                            "kernel:^a\\.b\\[c\\]\\{2\\}x$", "kernel:^x\\^y\\$z\\|w\\?$",
                            "kernel:^\\\\back\\\\slash$", "kernel:^op\\(\\)\\+\\*$"}) {
    CHECK(std::find(cells.begin(), cells.end(), whole) != cells.end());
  }
  // Two words where no one word is unique; elsewhere one word is enough.
  CHECK(std::find(cells.begin(), cells.end(), "kernel:reduce_kernel.*ArgMaxOps") != cells.end());
  CHECK(std::find(cells.begin(), cells.end(), "kernel:lm_head_gemm") != cells.end());
  CHECK(std::find(cells.begin(), cells.end(), "kernel:Enum") != cells.end());
}

TEST_CASE("census: the decode loop's suggestion selects one per-step kernel", "[unit][census]") {
  const std::vector<CensusEvent> events = decode_loop();
  const std::string table = nb::step_census(events, 0);
  INFO(table);
  const std::vector<std::string> cells = markers(table);
  REQUIRE(cells.size() == 13);
  const std::string pick = suggested(table);
  REQUIRE(pick == "'kernel:unrolled_elementwise_kernel'");
  nb::KernelRegex re;
  std::string error;
  REQUIRE(re.compile("unrolled_elementwise_kernel", error));
  size_t hits = 0;
  for (const CensusEvent& e : events) hits += re.search(e.name) ? 1 : 0;
  CHECK(hits == 32);  // one step end per decode step
  // Only the four per-step kernels are ranked; every layer kernel is "-".
  CHECK(table.find("\n   4  ") != std::string::npos);
  CHECK(table.find("\n   5  ") == std::string::npos);
  CHECK(table.find("kernel:ampere_bf16_s16816gemm_bf16_128x64") != std::string::npos);  // long word, cut
}

TEST_CASE("census: the finest steady cycle is the step, not every third one", "[unit][census]") {
  // A per-step kernel and one that runs every third step (an evaluation),
  // both perfectly steady: the iteration is the per-step one.
  std::vector<CensusEvent> events;
  for (uint64_t step = 0; step < 12; ++step) {
    events.push_back({"train_kernel", false, step * 50 * kMs, 1});
    if (step % 3 == 0) events.push_back({"eval_kernel", false, step * 50 * kMs + kMs, 1});
  }
  const std::string table = nb::step_census(events, 0);
  INFO(table);
  CHECK(suggested(table) == "'kernel:train_kernel'");
  CHECK(table.find("   2  kernel:eval_kernel") != std::string::npos);  // still a marker, ranked after
}

TEST_CASE("census: names seen once or twice are listed but never suggested", "[unit][census]") {
  const std::vector<CensusEvent> events = {{"setup_kernel", false, 1 * kMs, 1},
                                           {"init", true, 2 * kMs, 1},
                                           {"twice_kernel", false, 3 * kMs, 1},
                                           {"twice_kernel", false, 5 * kMs, 1},
                                           {"same_instant", false, 9 * kMs, 1},
                                           {"same_instant", false, 9 * kMs, 1},
                                           {"same_instant", false, 9 * kMs, 1}};
  const std::string table = nb::step_census(events, 0);
  INFO(table);
  CHECK(table.find("\n   1  ") == std::string::npos);
  CHECK(table.find("   -  kernel:twice_kernel        2          2.000ms           -") != std::string::npos);
  CHECK(table.find("   -  kernel:setup_kernel        1                -           -") != std::string::npos);
  CHECK(table.find("no kernel or NVTX range recurs steadily") != std::string::npos);
  CHECK(suggested(table) == "'time:1s'");
  CHECK(table.find("NB_STEP='sync'") != std::string::npos);
}

TEST_CASE("census: no events at all", "[unit][census][golden]") {
  CHECK(nb::step_census({}, 10) ==
        "no kernel launches or NVTX range ends were seen: cut steps by wall time, or use NB_STEP='sync' if each "
        "step waits for the GPU\n"
        "suggested: NB_STEP='time:1s'\n");
}

TEST_CASE("census: the suggestion is quoted for the shell; threads are counted", "[unit][census]") {
  std::vector<CensusEvent> events;
  for (uint32_t i = 0; i < 6; ++i) events.push_back({"it's a step", true, i * 20 * kMs, 1 + i % 2});
  const std::string table = nb::step_census(events, 1);
  INFO(table);
  CHECK(suggested(table) == "'nvtx:it'\\''s a step'");
  CHECK(table.find("20.000ms        0.0%       0        2  it's a step") != std::string::npos);
}

TEST_CASE("census: a slow start (warm-up steps) does not hide the step marker", "[census]") {
  // As on the H200: the first step takes seconds (module loading, cuBLAS),
  // the second half a second, then 76 ms a step.
  std::vector<nb::CensusEvent> events;
  uint64_t t = 0;
  for (int step = 0; step < 32; ++step) {
    for (int l = 0; l < 12; ++l) events.push_back({"layer_gemm", false, t + 60000ull * l, 1});
    events.push_back({"lm_head_gemv", false, t + 60000ull * 12, 1});
    t += step == 0 ? 2000000000ull : step == 1 ? 500000000ull : 76000000ull + (step % 3) * 100000ull;
  }
  const std::string out = nb::step_census(events, 10);
  INFO(out);
  CHECK(out.find("suggested: NB_STEP='kernel:lm_head_gemv'") != std::string::npos);
}

namespace {

// A decode loop called in bursts, as the seed's program does: decode(8),
// then decode(32) eight times, a synchronize and a copy between calls. Each
// step: `layers` layers of two kernels, then the LM head, the argmax and the
// cat of the new token. The first step is slow (module loading), the second
// slower than the rest (cuBLAS); a step takes 8 ms, more as the sequence
// grows; the pause between calls 20 to 200 ms.
// The table's row of the kernel named `name` (whole name), or "".
std::string row(const std::string& table, const std::string& name) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    if (line.size() >= name.size() + 2 && line.compare(line.size() - name.size() - 2, std::string::npos, "  " + name) == 0) {
      return line;
    }
  }
  return "";
}

std::vector<CensusEvent> bursts_of_steps(int layers) {
  std::vector<CensusEvent> events;
  uint64_t t = 0;
  int step = 0;
  const uint64_t layer_ns = 7 * kMs / static_cast<uint64_t>(layers);
  for (int call = 0; call < 9; ++call) {
    const int steps = call == 0 ? 8 : 32;
    for (int s = 0; s < steps; ++s, ++step) {
      uint64_t at = t;
      for (int l = 0; l < layers; ++l) {
        events.push_back({"ampere_fp16_gemm_layer", false, at, 1});
        events.push_back({"layer_norm_kernel", false, at + layer_ns / 2, 1});
        at += layer_ns;
      }
      events.push_back({"lm_head_gemm", false, at, 1});
      events.push_back({"reduce_kernel_argmax", false, at + 300 * kUs, 1});
      events.push_back({"CatArrayBatchedCopy", false, at + 400 * kUs, 1});
      t += step == 0 ? 2000 * kMs : step == 1 ? 500 * kMs : 8 * kMs + static_cast<uint64_t>(s) * 20 * kUs;
    }
    t += (20 + 180 * static_cast<uint64_t>(call % 3 == 2)) * kMs;
  }
  return events;
}

}  // namespace

TEST_CASE("census: a loop called in bursts with a slow warm-up: the once-per-token kernel comes first", "[unit][census]") {
  for (int layers : {12, 32, 80}) {
    const std::string out = nb::step_census(bursts_of_steps(layers), 10);
    INFO(layers << " layers\n" << out);
    // The argmax and the cat ended each of the 264 steps; the cat is the
    // later of the two (the step's end).
    CHECK(out.find("suggested: NB_STEP='kernel:CatArrayBatchedCopy'") != std::string::npos);
    CHECK(row(out, "CatArrayBatchedCopy").rfind("   1  ", 0) == 0);
    CHECK(row(out, "CatArrayBatchedCopy").find(" 264 ") != std::string::npos);
    // The layers' kernels pause once a step: not markers, however steady.
    CHECK(row(out, "ampere_fp16_gemm_layer").rfind("   -  ", 0) == 0);
    CHECK(row(out, "layer_norm_kernel").rfind("   -  ", 0) == 0);
  }
}

TEST_CASE("census: a long evaluation every 50 steps does not make its own kernel the step", "[unit][census]") {
  std::vector<CensusEvent> events;
  uint64_t t = 0;
  for (int step = 0; step < 200; ++step) {
    events.push_back({"fwd_gemm", false, t, 1});
    events.push_back({"adam_step_kernel", false, t + 5 * kMs, 1});
    t += 10 * kMs;
    if (step % 50 == 49) {
      // Evaluation: 100 batches of 3 ms, then its accuracy, once.
      for (int b = 0; b < 100; ++b, t += 3 * kMs) events.push_back({"eval_gemm", false, t, 1});
      events.push_back({"accuracy_kernel", false, t, 1});
      t += kMs;
    }
  }
  const std::string out = nb::step_census(events, 10);
  INFO(out);
  CHECK(out.find("suggested: NB_STEP='kernel:adam_step_kernel'") != std::string::npos);
}

namespace {

// Noise of a real loop: a step's time times 1 ± up to `spread`, from a
// fixed sequence.
struct Jitter {
  uint64_t state = 88172645463325252ull;
  uint64_t operator()(uint64_t ns, double spread) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    const double u = static_cast<double>(state % 10001) / 10000.0;  // 0..1
    return static_cast<uint64_t>(static_cast<double>(ns) * (1.0 + spread * (2 * u - 1)));
  }
};

}  // namespace

TEST_CASE("census: a generate whose first request warms up on every token: the once-per-token kernel comes first",
          "[unit][census]") {
  // As the seed's `generate` example ran on the H200: two requests of 64
  // tokens; in the first each new length is tuned (46-78 ms a token, one of
  // 440 ms), in the second a token takes 6 ms. The elementwise kernels that
  // copy the growing sequence come in variants by its length's alignment:
  // one of them every other token, one every fourth, each steadier than the
  // per-token kernels by its length. One kernel also runs at each prefill.
  std::vector<CensusEvent> events;
  Jitter jitter;
  uint64_t t = 0;
  int token = 0;
  for (int request = 0; request < 2; ++request) {
    events.push_back({"position_add", false, t, 1});
    for (int k = 0; k < 64; ++k, ++token) {
      const uint64_t step = request == 0 ? (k == 0 ? 372 * kMs : k == 32 ? 440 * kMs : (46 + (k % 11) * 3) * kMs)
                                         : 6 * kMs;
      const uint64_t took = jitter(step, 0.2);
      for (int l = 0; l < 12; ++l) {
        events.push_back({"layer_gemm", false, t + took * static_cast<uint64_t>(l) / 16, 1});
        events.push_back({"layer_norm_kernel", false, t + took * static_cast<uint64_t>(l) / 16 + 10 * kUs, 1});
      }
      const uint64_t end = t + took * 13 / 16;
      events.push_back({"lm_head_gemv", false, end, 1});
      events.push_back({"position_add", false, end + 20 * kUs, 1});
      events.push_back({token % 2 ? "copy_unrolled" : "copy_vectorized4", false, end + 30 * kUs, 1});
      if (token % 4 == 0) events.push_back({"copy_vectorized2", false, end + 35 * kUs, 1});
      events.push_back({"argmax_reduce", false, end + 40 * kUs, 1});
      events.push_back({"stop_sum_reduce", false, end + 50 * kUs, 1});
      t += took;
    }
    t += 300 * kMs;
  }
  const std::string out = nb::step_census(events, 12);
  INFO(out);
  CHECK(out.find("suggested: NB_STEP='kernel:stop_sum_reduce'") != std::string::npos);
  CHECK(row(out, "stop_sum_reduce").rfind("   1  ", 0) == 0);
  CHECK(row(out, "stop_sum_reduce").find(" 128 ") != std::string::npos);
  CHECK(row(out, "argmax_reduce").rfind("   2  ", 0) == 0);
  CHECK(row(out, "layer_gemm").rfind("   -  ", 0) == 0);
}

TEST_CASE("census: a JAX loop after seconds of compiling: its per-step range comes first", "[unit][census]") {
  // As a JAX training loop ran on the H200: 7.5 s of compiling (XLA's own
  // NVTX ranges, a few of each, some as steady as a step; autotuning
  // kernels), then 200 steps of 60 us, the loss read every 10 steps (a
  // wait), each step a range per op inside the module's range.
  std::vector<CensusEvent> events;
  Jitter jitter;
  uint64_t t = 0;
  for (int pass = 0; pass < 40; ++pass) {
    for (int i = 0; i < 3; ++i) events.push_back({"XlaPass:#name=pass" + std::to_string(pass) + "#", true,
                                                  t + static_cast<uint64_t>(i) * 280 * kUs, 1});
    for (int i = 0; i < 17; ++i) events.push_back({"RedzoneAllocatorKernel", false, t + jitter(4 * kMs, 0.9), 1});
    t += jitter(150 * kMs, 0.5);
  }
  for (int i = 0; i < 3; ++i) events.push_back({"XlaCompile:#module=jit_update#", true, t + i * 428 * kMs, 1});
  t += 1300 * kMs;
  for (int step = 0; step < 200; ++step) {
    const uint64_t took = jitter(60 * kUs, 0.3);
    for (int op = 0; op < 6; ++op) {
      events.push_back({"Thunk:#hlo_op=fusion." + std::to_string(op) + "#", true, t + took * static_cast<uint64_t>(op) / 8, 1});
    }
    events.push_back({"XlaModule:#hlo_module=jit_update#", true, t + took * 7 / 8, 1});
    t += took + (step % 10 == 9 ? 600 * kUs : 0);
  }
  const std::string out = nb::step_census(events, 0);
  INFO(out);
  // The module's range or one of its ops' ranges: each ends once a step.
  const std::string pick = suggested(out);
  CHECK((pick == "'nvtx:XlaModule:#hlo_module=jit_update#'" || pick.rfind("'nvtx:Thunk:#hlo_op=fusion.", 0) == 0));
  CHECK(row(out, pick.substr(6, pick.size() - 7)).find(" 200 ") != std::string::npos);
  // The compiler's evenly spaced ranges come after every per-step one.
  const std::string compile = row(out, "XlaCompile:#module=jit_update#");
  CHECK(out.find(compile) > out.find(row(out, "XlaModule:#hlo_module=jit_update#")));
  for (int op = 0; op < 6; ++op) {
    CHECK(out.find(compile) > out.find(row(out, "Thunk:#hlo_op=fusion." + std::to_string(op) + "#")));
  }
}

TEST_CASE("census: a loop of short steps with a few slow ones is still a loop", "[unit][census]") {
  // As the JAX loop ran on the H200 in one of two runs: steps of about
  // 90 us, one in seven of them late (the host's jitter at that scale:
  // the scheduler, the interpreter), the loss read every 10 steps. Its
  // intervals spread about 27% in all; without the few slowest and
  // fastest, less than 25%.
  std::vector<CensusEvent> events;
  Jitter jitter;
  uint64_t t = 0;
  for (int step = 0; step < 200; ++step) {
    const uint64_t took = step % 7 == 3 ? jitter(160 * kUs, 0.08) : jitter(85 * kUs, 0.3);
    events.push_back({"XlaModule:#hlo_module=jit_update#", true, t + took * 7 / 8, 1});
    t += took + (step % 10 == 9 ? 600 * kUs : 0);
  }
  const std::string out = nb::step_census(events, 0);
  INFO(out);
  CHECK(suggested(out) == "'nvtx:XlaModule:#hlo_module=jit_update#'");
}

TEST_CASE("census: the step's count is the one most once-a-step kernels share", "[unit][census]") {
  // As `generate` ran on the H200: two requests of 64 tokens; five kernels
  // once a token (128), one also once more at the end of each request (130:
  // the steadiest), one twice more (132: launched last in the step, as
  // steady to the percent, and seen last).
  std::vector<CensusEvent> events;
  Jitter jitter;
  uint64_t t = 0;
  const char* per_token[] = {"argmax_reduce", "stop_sum_reduce", "bitwise_and", "max_nan", "add_other"};
  for (int request = 0; request < 2; ++request) {
    for (int token = 0; token < 64; ++token) {
      const uint64_t took = jitter(6 * kMs, 0.1);
      for (int k = 0; k < 5; ++k) events.push_back({per_token[k], false, t + took - jitter((600 - 100 * k) * kUs, 0.5), 1});
      events.push_back({"add_long", false, t + took - 80 * kUs, 1});
      events.push_back({"fill_long", false, t + took - 50 * kUs, 1});
      t += took;
    }
    events.push_back({"add_long", false, t, 1});
    for (int extra = 0; extra < 2; ++extra) events.push_back({"fill_long", false, t + 20 * kUs * extra, 1});
    t += 30 * kMs;
  }
  const std::string out = nb::step_census(events, 0);
  INFO(out);
  bool once_a_token = false;
  for (const char* k : per_token) once_a_token = once_a_token || suggested(out) == std::string("'kernel:") + k + "'";
  CHECK(once_a_token);
  CHECK(row(out, "fill_long").rfind("   1  ", 0) != 0);
}

TEST_CASE("census: a loop that reads its loss every 10 steps, the step after each read slow too", "[unit][census]") {
  // As the JAX loop ran on the H200: 200 steps of 50 us; every 10th waits
  // for the loss (0.3-2 ms), and a step just after it is slow as well (the
  // queue refills): 40 long intervals in 199, more than one in eight, but
  // 20 pauses.
  std::vector<CensusEvent> events;
  Jitter jitter;
  uint64_t t = 0;
  for (int step = 0; step < 200; ++step) {
    uint64_t took = jitter(50 * kUs, 0.2);
    if (step % 10 == 1 && step > 1) took = jitter(150 * kUs, 0.3);  // the next but one after a read
    events.push_back({"XlaModule:#hlo_module=jit_update#", true, t + took, 1});
    t += took + (step % 10 == 9 ? jitter(800 * kUs, 0.6) : 0);
  }
  const std::string out = nb::step_census(events, 0);
  INFO(out);
  CHECK(suggested(out) == "'nvtx:XlaModule:#hlo_module=jit_update#'");
}

TEST_CASE("census: a layer's kernel whose wait at a step's end is sometimes short is still inside the step",
          "[unit][census]") {
  // As a slow run of the seed's bursts went on the H200: a layer's kernel 12
  // times a step, 700 us apart; at each step's end the argmax and the cat,
  // and a wait of about 1.8 times that interval, under twice it in one step
  // in three: fewer pauses than steps.
  std::vector<CensusEvent> events;
  Jitter jitter;
  uint64_t t = 0;
  for (int call = 0; call < 9; ++call) {
    for (int step = 0; step < 32; ++step) {
      for (int l = 0; l < 12; ++l) {
        events.push_back({"layer_gemm", false, t, 1});
        t += jitter(700 * kUs, 0.1);
      }
      const uint64_t end = step % 3 == 0 ? jitter(1200 * kUs, 0.1) : jitter(1600 * kUs, 0.1);
      events.push_back({"argmax_reduce", false, t - 700 * kUs + end / 3, 1});
      events.push_back({"CatArrayBatchedCopy", false, t - 700 * kUs + end / 2, 1});
      t += end - 700 * kUs;
    }
    t += 40 * kMs;
  }
  const std::string out = nb::step_census(events, 0);
  INFO(out);
  CHECK((suggested(out) == "'kernel:CatArrayBatchedCopy'" || suggested(out) == "'kernel:argmax_reduce'"));
  CHECK(row(out, "layer_gemm").rfind("   -  ", 0) == 0);
}

TEST_CASE("census: a gemm variant used for some lengths only is not the step, however steady", "[unit][census]") {
  // As cuBLAS does in the seed's decode loop on the H200: each layer's gemm
  // is one of two kernels by the sequence's length (here the first and the
  // second half of each call of decode(32)), launched 6 times a step, close
  // together and steadier than the step itself, which varies by 40%.
  std::vector<CensusEvent> events;
  Jitter jitter;
  uint64_t t = 0;
  for (int call = 0; call < 9; ++call) {
    for (int s = 0; s < 32; ++s) {
      const uint64_t took = jitter(8 * kMs, 0.4);
      const char* gemm = s < 16 ? "nvjet_gemm_64x24" : "nvjet_gemm_64x80";
      for (int l = 0; l < 6; ++l) events.push_back({gemm, false, t + static_cast<uint64_t>(l) * 400 * kUs, 1});
      events.push_back({"reduce_kernel_argmax", false, t + took - 500 * kUs, 1});
      events.push_back({"CatArrayBatchedCopy", false, t + took - 400 * kUs, 1});
      t += took;
    }
    t += 50 * kMs;
  }
  const std::string out = nb::step_census(events, 10);
  INFO(out);
  CHECK(suggested(out) == "'kernel:CatArrayBatchedCopy'");
  CHECK(row(out, "CatArrayBatchedCopy").find(" 288 ") != std::string::npos);
}
