// The ranking table, laid out like torch.profiler's key_averages().table():
// one row per name, fixed-width columns, a footer with totals. Pure function.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nb::formats {

struct TableRow {
  std::string name;
  uint64_t calls = 0;           // every call, recorded or not
  uint64_t host_total_ns = 0;   // self host time: time inside the call
  uint64_t host_min_ns = 0;
  uint64_t host_max_ns = 0;
  uint64_t errors = 0;          // calls that returned an error (recorded or not)
  bool has_host = true;         // false for device work (kernels, copies, sets): host cells are "-"
  bool has_device = false;      // device columns are shown when any row has them
  uint64_t device_total_ns = 0;
  // Of `calls`, those whose record was dropped (a full ring, or no ring
  // yet): the host times cover the other calls only, and the footer says so.
  uint64_t dropped_calls = 0;
};

// A region of the program: an NVTX range (by where it nests) or nb's steps.
// Total = self + the totals of the regions directly inside it, in host and
// in device time. Host time: the region's own spans on its thread; device
// time: the work launched while it was the innermost region open.
struct RegionRow {
  std::vector<std::string> path;  // outermost first: the row is the last
  uint64_t calls = 0;             // 0: it never ended while recorded (its total is its children's)
  uint64_t host_total_ns = 0;
  uint64_t host_self_ns = 0;
  uint64_t device_total_ns = 0;
  uint64_t device_self_ns = 0;
};

// A source location of the program (`nbprof stats --by source`): the
// device work whose launch's innermost user frame it is (self), and whose
// launch stack holds it anywhere (total).
struct SourceRow {
  std::string location;  // "file.py:12 forward", or "function (file.cpp:34)"
  uint64_t calls = 0;    // pieces of device work launched from here (self)
  uint64_t device_self_ns = 0;
  uint64_t device_total_ns = 0;
  uint64_t total_calls = 0;  // pieces of device work with it anywhere in their stack
};

enum class SortKey { HostTotal, DeviceTotal, Calls, Name };

struct TableOptions {
  SortKey sort = SortKey::HostTotal;
  size_t max_rows = 0;  // 0 = all
  std::string title;    // first line, e.g. the program and the window
};

struct TableFooter {
  uint64_t records = 0;       // host records written into the table
  uint64_t dropped = 0;       // records that could not be stored (full rings)
  std::vector<std::string> notes;  // extra lines, printed as they are
};

std::string format_ranking_table(std::vector<TableRow> rows, const TableOptions& options,
                                 const TableFooter& footer, const std::vector<RegionRow>& regions = {});

// The table as data: what a run printed (options.max_rows = the rows it
// printed to stderr). The Chrome trace keeps it under "nbTable", so that
// `nbprof stats` prints the same table again from the trace alone.
struct RankingTable {
  std::vector<TableRow> rows;
  std::vector<RegionRow> regions;
  std::vector<SourceRow> sources;  // with launch stacks only
  // The run's folded stacks (formats/folded_stacks.h), as its
  // <prefix>.device.folded and .host.folded files have them: with launch
  // stacks only, so that `nbprof stats --folded` writes them from the trace.
  std::string device_folded, host_folded;
  TableOptions options;
  TableFooter footer;
};

// The source locations, by device self time (or the sort's key: device and
// host both mean device self here; calls; name), with their share of the
// device time `device_sum`.
std::string format_source_table(std::vector<SourceRow> rows, const TableOptions& options, uint64_t device_sum);

// NB_TABLE_SORT's words: "device", "host", "calls", "name".
const char* sort_key_name(SortKey key);
bool sort_key_from_name(std::string_view name, SortKey& key);

// "12.345us", "1.234ms", "2.000s": torch.profiler's units.
std::string format_duration_ns(uint64_t ns);

}  // namespace nb::formats
