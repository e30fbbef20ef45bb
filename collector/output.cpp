#include "collector/output.h"

#include "collector/output_files.h"
#include "formats/chrome_trace.h"
#include "formats/memory_snapshot.h"

namespace nb {

OutputResult write_outputs(const Session& s, const OutputContext& ctx) {
  OutputResult res;
  JoinStats js;
  const auto write = [&](const std::string& path, const std::function<void(std::ostream&)>& fill) {
    std::string problem;
    if (write_output_file(path, ctx.overwrite, fill, problem)) res.written.push_back(path);
    else res.problems.push_back(problem);
  };
  write(ctx.prefix + ".trace.json", [&](std::ostream& os) { formats::write_chrome_trace(build_trace(s, ctx, &js), os); });
  write(ctx.prefix + ".memory.pickle", [&](std::ostream& os) {
    const std::string bytes = formats::memory_snapshot_pickle(build_snapshot(s, ctx));
    os.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });

  formats::TableOptions opt;
  opt.sort = ctx.table_sort;
  opt.title = table_title(ctx);
  const auto rows = build_table_rows(s, ctx);
  const auto footer = build_table_footer(s, ctx, js);
  if (unjoined_note(js) && !ctx.device_handed_over) {
    res.problems.push_back(std::to_string(js.work_without_device) + " of " + std::to_string(js.work_calls) +
                           " calls that make device work have no device record: " + unjoined_note(js));
  }
  const std::string full = formats::format_ranking_table(rows, opt, footer);
  write(ctx.prefix + ".table.txt", [&](std::ostream& os) { os << full; });
  opt.max_rows = ctx.table_rows;
  res.table_for_stderr = opt.max_rows ? formats::format_ranking_table(rows, opt, footer) : full;
  return res;
}

}  // namespace nb
