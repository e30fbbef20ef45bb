#include "collector/builders.h"

namespace nb {

formats::SnapshotData build_snapshot(const Session& s, const OutputContext& ctx) {
  formats::SnapshotData snap = s.memory().snapshot(ctx.time, ctx.window_from);
  if (!ctx.stacks.empty()) snap.stacks = ctx.stacks;
  snap.allocator_settings.emplace_back("recorded_by", "nb (libnb_shim.so)");
  snap.allocator_settings.emplace_back("source", "CUDA driver and runtime allocation calls");
  return snap;
}

}  // namespace nb
