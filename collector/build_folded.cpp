#include "collector/builders.h"

#include <map>

#include "core/api.h"
#include "formats/folded_stacks.h"

namespace nb {

namespace {

// The stack's frames outermost first, or one frame that says why there is none.
std::vector<std::string> frames_of(uint32_t stack, const OutputContext& ctx, const char* none) {
  std::vector<std::string> out;
  if (stack == 0 || stack >= ctx.stacks.size() || ctx.stacks[stack].empty()) {
    out.emplace_back(none);
    return out;
  }
  const formats::Stack& st = ctx.stacks[stack];
  for (auto it = st.rbegin(); it != st.rend(); ++it) out.push_back(formats::folded_frame(*it));
  return out;
}

}  // namespace

std::string build_device_folded(const Session& s, const OutputContext& ctx) {
  // Each piece of work under the stack of the call that launched it, its
  // name the leaf; weights in device ns, summing to the table's device time.
  std::vector<formats::FoldedLine> lines;
  for (const auto& [key, t] : s.device_by_stack()) {
    const uint32_t stack = static_cast<uint32_t>(key >> 32), name = static_cast<uint32_t>(key);
    formats::FoldedLine l;
    l.frames = frames_of(stack, ctx, "[no stack]");
    l.frames.push_back(name < ctx.kernel_names.size() && !ctx.kernel_names[name].empty() ? ctx.kernel_names[name] : "?");
    l.weight = t.time;
    lines.push_back(std::move(l));
  }
  return formats::format_folded(lines);
}

std::string build_host_folded(const Session& s, const OutputContext& ctx) {
  // Each recorded call under its stack, the API the leaf; weights in host
  // ns, summing to the table's host time (calls without a stack under
  // "[no stack]").
  std::vector<formats::FoldedLine> lines;
  std::vector<uint64_t> stacked(kApiCount, 0);
  for (const auto& [key, t] : s.host_by_stack()) {
    const uint64_t ticks = t.time;
    const uint32_t stack = static_cast<uint32_t>(key >> 32);
    const uint16_t api = static_cast<uint16_t>(key);
    if (api >= kApiCount) continue;
    stacked[api] += ticks;
    formats::FoldedLine l;
    l.frames = frames_of(stack, ctx, "[no stack]");
    l.frames.push_back(api_info(api).name);
    l.weight = ctx.time.duration_ns(ticks);
    lines.push_back(std::move(l));
  }
  for (uint16_t api = 0; api < kApiCount; ++api) {
    const uint64_t total = s.api_stats()[api].total;
    if (total > stacked[api]) lines.push_back({{"[no stack]", api_info(api).name}, ctx.time.duration_ns(total - stacked[api])});
  }
  return formats::format_folded(lines);
}

}  // namespace nb
