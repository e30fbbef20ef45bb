#include "collector/output.h"

#include <sys/stat.h>

#include <cstdio>

#include "collector/output_files.h"
#include "core/log.h"
#include "formats/chrome_trace.h"
#include "formats/memory_snapshot.h"

namespace nb {

std::string size_text(uint64_t bytes) {
  char buf[32];
  if (bytes >= 10000000) std::snprintf(buf, sizeof buf, "%.0f MB", static_cast<double>(bytes) / 1e6);
  else if (bytes >= 1000000) std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(bytes) / 1e6);
  else if (bytes >= 10000) std::snprintf(buf, sizeof buf, "%.0f KB", static_cast<double>(bytes) / 1e3);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

OutputResult write_outputs(Session& s, const OutputContext& ctx, TraceStream& trace,
                           const std::function<void(uint64_t, uint64_t)>& progress) {
  OutputResult res;
  const auto written = [&](const std::string& path) {
    struct stat st {};
    res.written.push_back(::stat(path.c_str(), &st) == 0 ? path + " (" + size_text(static_cast<uint64_t>(st.st_size)) + ")"
                                                         : path);
  };
  const auto write = [&](const std::string& path, const std::function<void(std::ostream&)>& fill) {
    std::string problem;
    if (write_output_file(path, ctx.overwrite, fill, problem)) written(path);
    else res.problems.push_back(problem);
  };
  // The timeline's last events (what waited for device records) first: the
  // table's footer counts what joining found.
  // A dump leaves them waiting: they go out joined, into later files.
  if (!ctx.dump) s.finish_timeline();
  res.phases.mark("last events joined");
  const JoinStats& js = s.timeline()->stats();
  // The snapshot is written on this thread while the writer thread makes
  // the trace's last events (two cores at the end, where there are two).
  trace.file().hand_over();
  std::string snapshot_problem;
  const std::string snapshot_path = ctx.prefix + ".memory.pickle";
  const bool snapshot_ok = write_output_file(
      snapshot_path, ctx.overwrite,
      [&](std::ostream& os) { formats::write_memory_snapshot(build_snapshot(s, ctx), os); }, snapshot_problem);
  res.phases.mark("snapshot");
  // Its table's sources and folded stacks are also the files beside it.
  const formats::TraceData frame = build_trace_frame(s, ctx, trace.base_ns());
  res.phases.mark("trace's table");
  {
    TraceFinish how;
    how.overwrite = ctx.overwrite;
    how.keep_body = ctx.dump;
    if (ctx.trim_trace) how.from_ts = trace.ts(static_cast<uint64_t>(ctx.time.epoch_ns(ctx.window_from)));
    std::string problem;
    if (ctx.dump) {
      // The run goes on: the writer thread puts the copy together after
      // the text before it, and says so itself, while the collector goes
      // back to the rings (waiting here for a burst's text to be
      // compressed would leave them to fill and drop).
      trace.file().finish_async(formats::chrome_trace_head(frame), formats::chrome_trace_tail(frame), how,
                                [path = trace.file().path()](bool ok, const std::string& problem, uint64_t bytes) {
                                  if (ok) log::print("nb: wrote " + path + " (" + size_text(bytes) + ")\n");
                                  else log::warn(problem);
                                });
    } else if (trace.file().finish(formats::chrome_trace_head(frame), formats::chrome_trace_tail(frame), how, problem,
                                   progress)) {
      written(trace.file().path());
    } else {
      res.problems.push_back(problem);
    }
  }
  res.phases.mark("trace");
  if (snapshot_ok) written(snapshot_path);
  else res.problems.push_back(snapshot_problem);

  formats::TableOptions opt;
  opt.sort = ctx.table_sort;
  opt.title = table_title(ctx);
  const auto rows = build_table_rows(s, ctx);
  const auto regions = build_region_rows(s, ctx);
  const auto footer = build_table_footer(s, ctx, js);
  if (unjoined_note(js, ctx) && !ctx.device_handed_over) {
    res.problems.push_back(std::to_string(js.work_without_device) + " of " + std::to_string(js.work_calls) +
                           " calls that make device work have no device record: " + unjoined_note(js, ctx));
  }
  const std::string full = formats::format_ranking_table(rows, opt, footer, regions);
  write(ctx.prefix + ".table.txt", [&](std::ostream& os) { os << full; });
  if (ctx.folded) {
    uint64_t device_sum = 0;
    for (const formats::TableRow& r : rows) device_sum += r.device_total_ns;
    formats::TableOptions all = opt;
    all.max_rows = 0;
    write(ctx.prefix + ".source.txt",
          [&](std::ostream& os) { os << formats::format_source_table(frame.table.sources, all, device_sum); });
    write(ctx.prefix + ".device.folded", [&](std::ostream& os) { os << frame.table.device_folded; });
    write(ctx.prefix + ".host.folded", [&](std::ostream& os) { os << frame.table.host_folded; });
  }
  res.phases.mark("table");
  opt.max_rows = ctx.table_rows;
  res.table_for_stderr = opt.max_rows ? formats::format_ranking_table(rows, opt, footer, regions) : full;
  return res;
}

}  // namespace nb
