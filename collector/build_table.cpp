#include "collector/builders.h"

#include <algorithm>
#include <map>

#include "core/api.h"

namespace nb {

std::string table_title(const OutputContext& ctx) {
  return "nb: " + ctx.program + " (pid " + std::to_string(ctx.pid) + ")";
}

std::vector<formats::TableRow> build_table_rows(const Session& s, const OutputContext& ctx) {
  // Several symbols can share a display name (__cudaLaunchKernel and
  // cudaLaunchKernel): one row per name.
  std::map<std::string, formats::TableRow> rows;
  const auto dropped = [](const std::vector<uint64_t>& v, uint16_t api) -> uint64_t { return api < v.size() ? v[api] : 0; };
  for (uint16_t api = 0; api < kApiCount; ++api) {
    const ApiStats& st = s.api_stats()[api];
    const uint64_t lost = dropped(ctx.dropped_calls, api);
    if (st.calls == 0 && lost == 0) continue;
    const std::string name = api_info(api).name;
    formats::TableRow& row = rows[name];
    row.name = name;
    // Calls and errors count every call, recorded or not; the times only
    // the recorded ones (a dropped call's duration is not known).
    row.calls += st.calls + lost;
    row.dropped_calls += lost;
    row.errors += st.errors + dropped(ctx.dropped_errors, api);
    if (st.calls == 0) continue;
    const uint64_t min_ns = ctx.time.duration_ns(st.min), max_ns = ctx.time.duration_ns(st.max);
    const bool first_timed = row.calls - row.dropped_calls == st.calls;
    row.host_total_ns += ctx.time.duration_ns(st.total);
    row.host_min_ns = first_timed ? min_ns : std::min(row.host_min_ns, min_ns);
    row.host_max_ns = std::max(row.host_max_ns, max_ns);
  }
  std::vector<formats::TableRow> out;
  for (auto& [name, row] : rows) out.push_back(std::move(row));
  // One row per kernel (and per kind of copy or set), device time only.
  for (const auto& [name, st] : s.device_stats()) {
    formats::TableRow row;
    row.name = name < ctx.kernel_names.size() ? ctx.kernel_names[name] : "?";
    row.calls = st.calls;
    row.has_host = false;
    row.has_device = true;
    row.device_total_ns = st.total;
    out.push_back(std::move(row));
  }
  return out;
}

std::vector<formats::RegionRow> build_region_rows(const Session& s, const OutputContext& ctx) {
  struct Node {
    uint64_t calls = 0, host_ns = 0, device_self_ns = 0;
    uint64_t children_host_ns = 0, children_device_ns = 0;
  };
  // By path; every parent of a recorded range is a node too (one still
  // open at the end, or whose record was dropped, has no calls).
  std::map<std::vector<std::string>, Node> nodes;
  for (const auto& [id, st] : s.region_stats()) {
    const std::string text = id == kOtherRegions ? std::string("(more ranges than nb keeps apart)")
                             : id < ctx.kernel_names.size() ? ctx.kernel_names[id] : "?";
    std::vector<std::string> path;
    for (size_t at = 0;;) {
      const size_t sep = text.find(kRangePathSep, at);
      path.push_back(text.substr(at, sep == std::string::npos ? std::string::npos : sep - at));
      if (sep == std::string::npos) break;
      at = sep + 1;
    }
    Node& n = nodes[path];
    n.calls += st.calls;
    n.host_ns += ctx.time.duration_ns(st.host);
    n.device_self_ns += st.device_self;
    for (size_t k = 1; k < path.size(); ++k) nodes[std::vector<std::string>(path.begin(), path.begin() + k)];
  }
  // Totals from the deepest up: a parent's total is its self plus its
  // children's totals; the host self is what its own spans hold beyond them.
  std::vector<const std::vector<std::string>*> deepest_first;
  for (const auto& [path, n] : nodes) deepest_first.push_back(&path);
  std::stable_sort(deepest_first.begin(), deepest_first.end(),
                   [](const auto* a, const auto* b) { return a->size() > b->size(); });
  std::vector<formats::RegionRow> out;
  for (const std::vector<std::string>* path : deepest_first) {
    Node& n = nodes[*path];
    formats::RegionRow row;
    row.path = *path;
    row.calls = n.calls;
    // A region never seen ending: what is known of it is its children's.
    row.host_total_ns = n.calls ? n.host_ns : n.children_host_ns;
    row.host_self_ns = row.host_total_ns > n.children_host_ns ? row.host_total_ns - n.children_host_ns : 0;
    row.device_self_ns = n.device_self_ns;
    row.device_total_ns = n.device_self_ns + n.children_device_ns;
    if (path->size() > 1) {
      Node& parent = nodes[std::vector<std::string>(path->begin(), path->end() - 1)];
      parent.children_host_ns += row.host_total_ns;
      parent.children_device_ns += row.device_total_ns;
    }
    out.push_back(std::move(row));
  }
  const RegionStats& steps = s.step_stats();
  if (steps.calls) {
    // nb's steps stand apart from the program's ranges: a row of its own
    // whose self is all of it.
    formats::RegionRow row;
    row.path = {"ProfilerStep"};
    row.calls = steps.calls;
    row.host_total_ns = row.host_self_ns = ctx.time.duration_ns(steps.host);
    row.device_total_ns = row.device_self_ns = steps.device_self;
    out.push_back(std::move(row));
  }
  return out;
}

namespace {
constexpr const char* kOtherClientNote =
    "another CUPTI client, such as torch.profiler, took the activity buffers: device time is incomplete";
constexpr const char* kDroppedNote =
    "records were dropped on the way (the footer's other lines say where): those calls have no arrow";
constexpr const char* kJoinFailedNote =
    "device records came but were not joined to their calls: the join failed, the arrows are missing "
    "(please report this with the program's CUDA and CUPTI versions)";

// Half or more of the calls that make device work got no record joined:
// not a few lost. If the device records themselves are missing too, CUPTI
// delivered them to someone else; if they came, the join did not work.
bool most_work_unjoined(const JoinStats& js) {
  return js.work_calls >= 8 && js.work_without_device * 2 >= js.work_calls;
}
bool another_cupti_client(const JoinStats& js) {
  return most_work_unjoined(js) && js.device_records * 2 < js.work_calls;
}

}  // namespace

const char* unjoined_note(const JoinStats& js, const OutputContext& ctx) {
  if (!most_work_unjoined(js)) return nullptr;
  if (another_cupti_client(js)) return kOtherClientNote;
  // Calls or device records lost on the way leave calls without their
  // record (and the order join stops at the gaps): not a failed join.
  if (ctx.dropped != 0 || ctx.device_overflow != 0 || ctx.device_dropped != 0) return kDroppedNote;
  return kJoinFailedNote;
}

formats::TableFooter build_table_footer(const Session& s, const OutputContext& ctx, const JoinStats& js) {
  formats::TableFooter f;
  f.records = s.consumed();
  f.dropped = ctx.dropped;
  if (ctx.device_traced) {
    f.notes.push_back("Device records: " + std::to_string(s.device_consumed()) + " (" +
                      std::to_string(ctx.device_dropped) + " dropped by CUPTI); joined to their host call (" +
                      choice_name(ctx.join_mode) + "): " + std::to_string(js.joined) + " of " +
                      std::to_string(js.device_records) + " in the timeline");
  } else {
    f.notes.push_back("No device time: " + (ctx.device_note.empty() ? std::string("CUPTI not used") : ctx.device_note));
  }
  if (js.work_without_device != 0) {
    f.notes.push_back("Calls that make device work with no device record: " + std::to_string(js.work_without_device) +
                      " of " + std::to_string(js.work_calls) +
                      (unjoined_note(js, ctx) ? " (" + std::string(unjoined_note(js, ctx)) + ")" : std::string()));
  }
  if (ctx.record_cost_ns > 0) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "nb's own cost on the calling threads, estimated: %llu calls x %.0f ns = %.3f ms "
                  "(CUPTI's own work not included)",
                  static_cast<unsigned long long>(s.consumed()), ctx.record_cost_ns,
                  static_cast<double>(s.consumed()) * ctx.record_cost_ns / 1e6);
    f.notes.push_back(buf);
  }
  const MemoryCounts& m = s.memory().counts();
  std::string mem = "Device memory: " + std::to_string(m.allocs) + " allocations, " +
                    std::to_string(m.frees) + " frees, " + std::to_string(m.maps) + " maps, " +
                    std::to_string(m.unmaps) + " unmaps, " + std::to_string(m.ooms) + " OOM";
  mem += "; live at end " + std::to_string(s.memory().live_bytes(0)) + " B, peak " +
         std::to_string(s.memory().peak_bytes(0)) + " B (device 0)";
  f.notes.push_back(mem);
  if (s.memory().ended()) {
    f.notes.push_back("Freed during teardown (after the program's end, not in \"live at end\"): " +
                      std::to_string(m.teardown_frees) + " allocations, " + std::to_string(m.teardown_bytes) + " B");
  }
  if (m.unmatched_frees && ctx.dropped_allocs == 0) {
    f.notes.push_back("Frees of addresses not seen allocated (made before recording began): " +
                      std::to_string(m.unmatched_frees));
  } else if (m.unmatched_frees) {
    // Some of them may be frees of allocations whose record was dropped.
    f.notes.push_back("Frees of addresses not seen allocated: " + std::to_string(m.unmatched_frees) + " (" +
                      std::to_string(ctx.dropped_allocs) +
                      (ctx.dropped_allocs == 1 ? " allocation record was" : " allocation records were") +
                      " dropped; the rest, if any, were made before recording began)");
  }
  if (ctx.dropped_frees) {
    f.notes.push_back("Free records dropped: " + std::to_string(ctx.dropped_frees) +
                      " (those allocations stay live, in \"live at end\", the peak and the snapshot, unless their "
                      "address was allocated again)");
  }
  if (m.overwritten) {
    f.notes.push_back("Memory history entries overwritten (NB_MEM_MAX_ENTRIES ring): " +
                      std::to_string(m.overwritten));
  }
  if (js.released_unjoined) {
    f.notes.push_back("Calls written before their device record came (so without its correlation id): " +
                      std::to_string(js.released_unjoined));
  }
  if (js.overlaps_clipped) {
    f.notes.push_back("Device boxes clipped where they crossed the next one on their stream: " +
                      std::to_string(js.overlaps_clipped));
  }
  if (s.timeline() && s.timeline()->host_events_left_out()) {
    f.notes.push_back("Host calls left out of the timeline (NB_TRACE_MAX_EVENTS), still counted here: " +
                      std::to_string(s.timeline()->host_events_left_out()));
  }
  for (const std::string& n : ctx.notes) f.notes.push_back(n);
  return f;
}

}  // namespace nb
