#include "formats/ranking_table.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "formats/text_encoding.h"

namespace nb::formats {

std::string format_duration_ns(uint64_t ns) {
  char buf[48];
  const double us = static_cast<double>(ns) / 1000.0;
  if (us >= 1e6) std::snprintf(buf, sizeof buf, "%.3fs", us / 1e6);
  else if (us >= 1e3) std::snprintf(buf, sizeof buf, "%.3fms", us / 1e3);
  else std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}

namespace {

constexpr size_t kNameWidth = 55;
constexpr size_t kColWidth = 12;

// Names are shown on a terminal: control characters would break the layout,
// so they are made visible, and long names are cut as torch does ("...").
std::string display_name(const std::string& raw) {
  std::string valid;
  append_valid_utf8(valid, raw);
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < valid.size();) {
    const unsigned char c = static_cast<unsigned char>(valid[i]);
    size_t n = utf8_sequence_length(valid, i);
    if (n == 0) n = 1;
    if (chars == kNameWidth - 3 && i + n < valid.size()) { out += "..."; break; }
    if (c < 0x20 || c == 0x7F) out += '?';
    else out.append(valid, i, n);
    i += n;
    ++chars;
  }
  return out;
}

size_t display_width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

void pad_left(std::string& out, const std::string& cell, size_t width) {
  const size_t w = display_width(cell);
  if (w < width) out.append(width - w, ' ');
  out += cell;
}

// Calls of a row that have a record, so a time.
uint64_t recorded_calls(const TableRow& r) { return r.calls > r.dropped_calls ? r.calls - r.dropped_calls : 0; }

// Rows named in the footer's line on dropped calls; more are counted.
constexpr size_t kMaxPartialListed = 6;

std::string percent(uint64_t part, uint64_t whole) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
  return buf;
}

// The regions as a tree: each region under its parent, indented two
// spaces a level, siblings in the table's order (by total). Left-aligned
// names, so the tree reads as one.
std::vector<const RegionRow*> region_order(const std::vector<RegionRow>& regions, SortKey sort) {
  std::vector<const RegionRow*> sorted;
  for (const RegionRow& r : regions) sorted.push_back(&r);
  const auto before = [&](const RegionRow* a, const RegionRow* b) {
    switch (sort) {
      case SortKey::DeviceTotal:
        if (a->device_total_ns != b->device_total_ns) return a->device_total_ns > b->device_total_ns;
        break;
      case SortKey::Calls:
        if (a->calls != b->calls) return a->calls > b->calls;
        break;
      case SortKey::Name:
        return a->path.back() < b->path.back();
      case SortKey::HostTotal:
      default:
        break;
    }
    if (a->host_total_ns != b->host_total_ns) return a->host_total_ns > b->host_total_ns;
    return a->path < b->path;
  };
  std::stable_sort(sorted.begin(), sorted.end(), before);
  // Depth first from the roots, children in the sorted order. A region
  // whose parent is not a row stands as a root.
  std::map<std::vector<std::string>, std::vector<const RegionRow*>> children;
  std::set<std::vector<std::string>> paths;
  for (const RegionRow* r : sorted) paths.insert(r->path);
  std::vector<const RegionRow*> roots;
  for (const RegionRow* r : sorted) {
    std::vector<std::string> parent(r->path.begin(), r->path.end() - (r->path.empty() ? 0 : 1));
    if (r->path.size() > 1 && paths.count(parent)) children[parent].push_back(r);
    else roots.push_back(r);
  }
  std::vector<const RegionRow*> out;
  std::vector<const RegionRow*> todo(roots.rbegin(), roots.rend());
  while (!todo.empty()) {
    const RegionRow* r = todo.back();
    todo.pop_back();
    out.push_back(r);
    auto it = children.find(r->path);
    if (it != children.end()) todo.insert(todo.end(), it->second.rbegin(), it->second.rend());
  }
  return out;
}

std::string region_name(const RegionRow& r) {
  std::string name(2 * (r.path.size() - 1), ' ');
  name += r.path.empty() ? std::string() : r.path.back();
  return display_name(name);
}

void pad_right(std::string& out, const std::string& cell, size_t width) {
  out += cell;
  const size_t w = display_width(cell);
  if (w < width) out.append(width - w, ' ');
}

// Dashes under a table's first column (`first` wide) and each of its
// `columns` other columns.
std::string rule_of(size_t first, size_t columns) {
  std::string rule(first, '-');
  for (size_t i = 0; i < columns; ++i) rule += "  " + std::string(kColWidth, '-');
  rule += '\n';
  return rule;
}

// The column titles between two rules: the first column's title (left-
// aligned where its cells are), the others right-aligned.
void put_header(std::string& out, const std::string& rule, const std::string& first, size_t width, bool left,
                const std::vector<std::string>& headers) {
  out += rule;
  if (left) pad_right(out, first, width);
  else pad_left(out, first, width);
  for (const std::string& h : headers) { out += "  "; pad_left(out, h, kColWidth); }
  out += '\n';
  out += rule;
}

// `device_sum`: all the device time of the table (regions overlap: nb's
// steps hold the ranges' work too), what Self Device % is of.
std::string format_regions(const std::vector<RegionRow>& regions, const TableOptions& opt, bool device,
                           uint64_t device_sum) {
  std::vector<std::string> headers = {"Host Total", "Host Self", "Host avg"};
  if (device) {
    headers.push_back("Device Total");
    headers.push_back("Device Self");
    headers.push_back("Self Device %");
  }
  headers.push_back("# of Calls");
  const std::string rule = rule_of(kNameWidth, headers.size());
  std::string out = "Regions (NVTX ranges, nb's steps): Total = Self + the regions inside\n";
  put_header(out, rule, "Name", kNameWidth, true, headers);
  const std::vector<const RegionRow*> order = region_order(regions, opt.sort);
  const size_t shown = opt.max_rows && opt.max_rows < order.size() ? opt.max_rows : order.size();
  for (size_t i = 0; i < shown; ++i) {
    const RegionRow& r = *order[i];
    std::vector<std::string> cells = {format_duration_ns(r.host_total_ns), format_duration_ns(r.host_self_ns),
                                      r.calls ? format_duration_ns(r.host_total_ns / r.calls) : "-"};
    if (device) {
      cells.push_back(format_duration_ns(r.device_total_ns));
      cells.push_back(format_duration_ns(r.device_self_ns));
      cells.push_back(percent(r.device_self_ns, device_sum));
    }
    cells.push_back(std::to_string(r.calls));
    pad_right(out, region_name(r), kNameWidth);
    for (const std::string& c : cells) { out += "  "; pad_left(out, c, kColWidth); }
    out += '\n';
  }
  out += rule;
  if (shown < order.size()) out += "(" + std::to_string(order.size() - shown) + " more regions not shown)\n";
  return out;
}

}  // namespace

std::string format_source_table(std::vector<SourceRow> rows, const TableOptions& opt, uint64_t device_sum) {
  std::stable_sort(rows.begin(), rows.end(), [&](const SourceRow& a, const SourceRow& b) {
    if (opt.sort == SortKey::Name) return a.location < b.location;
    if (opt.sort == SortKey::Calls && a.calls != b.calls) return a.calls > b.calls;
    if (a.device_self_ns != b.device_self_ns) return a.device_self_ns > b.device_self_ns;
    if (a.device_total_ns != b.device_total_ns) return a.device_total_ns > b.device_total_ns;
    return a.location < b.location;
  });
  const std::vector<std::string> headers = {"Self Device", "Self Device %", "Device Total", "Total Device %",
                                            "# of Calls", "Calls Total"};
  constexpr size_t kLocationWidth = 80;
  const std::string rule = rule_of(kLocationWidth, headers.size());
  std::string out;
  if (!opt.title.empty()) {
    append_valid_utf8(out, opt.title);
    out += '\n';
  }
  out += "Source locations by the device time of the work launched there (Self: the innermost user frame of the "
         "launch's stack; Total: anywhere in it)\n";
  put_header(out, rule, "Location", kLocationWidth, true, headers);
  const size_t shown = opt.max_rows && opt.max_rows < rows.size() ? opt.max_rows : rows.size();
  for (size_t i = 0; i < shown; ++i) {
    const SourceRow& r = rows[i];
    std::string loc;
    append_valid_utf8(loc, r.location);
    for (char& c : loc) if (static_cast<unsigned char>(c) < 0x20) c = '?';
    if (display_width(loc) > kLocationWidth) {
      // The end says the most (file, line, function): cut from the front,
      // on a character's first byte.
      size_t from = loc.size() - (kLocationWidth - 3);
      while (from < loc.size() && (static_cast<unsigned char>(loc[from]) & 0xC0) == 0x80) ++from;
      loc = "..." + loc.substr(from);
    }
    pad_right(out, loc, kLocationWidth);
    for (const std::string& c : {format_duration_ns(r.device_self_ns), percent(r.device_self_ns, device_sum),
                                 format_duration_ns(r.device_total_ns), percent(r.device_total_ns, device_sum),
                                 std::to_string(r.calls), std::to_string(r.total_calls)}) {
      out += "  ";
      pad_left(out, c, kColWidth);
    }
    out += '\n';
  }
  out += rule;
  if (shown < rows.size()) out += "(" + std::to_string(rows.size() - shown) + " more locations not shown)\n";
  out += "Device time total: " + format_duration_ns(device_sum) + '\n';
  return out;
}

const char* sort_key_name(SortKey key) {
  switch (key) {
    case SortKey::DeviceTotal: return "device";
    case SortKey::HostTotal: return "host";
    case SortKey::Calls: return "calls";
    case SortKey::Name: return "name";
  }
  return "host";
}

bool sort_key_from_name(std::string_view name, SortKey& key) {
  for (SortKey k : {SortKey::DeviceTotal, SortKey::HostTotal, SortKey::Calls, SortKey::Name}) {
    if (name == sort_key_name(k)) { key = k; return true; }
  }
  return false;
}

std::string format_ranking_table(std::vector<TableRow> rows, const TableOptions& opt,
                                 const TableFooter& footer, const std::vector<RegionRow>& regions) {
  // Names as they are shown and saved (valid UTF-8; the title and the notes
  // too, below), so that a table read back from the trace's JSON sorts and
  // prints exactly as the run's did.
  for (TableRow& r : rows) {
    std::string valid;
    append_valid_utf8(valid, r.name);
    r.name = std::move(valid);
  }
  const bool device = std::any_of(rows.begin(), rows.end(), [](const TableRow& r) { return r.has_device; });
  uint64_t host_sum = 0, device_sum = 0, calls_sum = 0;
  for (const TableRow& r : rows) {
    host_sum += r.host_total_ns;
    device_sum += r.device_total_ns;
    if (r.has_host) calls_sum += r.calls;  // host calls; device rows count launches again
  }

  std::stable_sort(rows.begin(), rows.end(), [&](const TableRow& a, const TableRow& b) {
    switch (opt.sort) {
      case SortKey::DeviceTotal:
        if (a.device_total_ns != b.device_total_ns) return a.device_total_ns > b.device_total_ns;
        return a.host_total_ns > b.host_total_ns;
      case SortKey::Calls:
        if (a.calls != b.calls) return a.calls > b.calls;
        return a.host_total_ns > b.host_total_ns;
      case SortKey::Name:
        return a.name < b.name;
      case SortKey::HostTotal:
      default:
        if (a.host_total_ns != b.host_total_ns) return a.host_total_ns > b.host_total_ns;
        return a.name < b.name;
    }
  });

  std::vector<std::string> headers = {"Self Host", "Self Host %", "Host avg", "Host min",
                                      "Host max"};
  if (device) {
    headers.push_back("Self Device");
    headers.push_back("Self Device %");
    headers.push_back("Device avg");
  }
  headers.push_back("# of Calls");
  headers.push_back("Errors");

  const std::string rule = rule_of(kNameWidth, headers.size());

  std::string out;
  if (!opt.title.empty()) {
    append_valid_utf8(out, opt.title);
    out += '\n';
  }
  put_header(out, rule, "Name", kNameWidth, false, headers);

  const size_t shown = opt.max_rows && opt.max_rows < rows.size() ? opt.max_rows : rows.size();
  for (size_t i = 0; i < shown; ++i) {
    const TableRow& r = rows[i];
    std::vector<std::string> cells;
    const uint64_t timed = recorded_calls(r);
    if (r.has_host && timed == 0) {
      // Every call of the row was dropped: no time is known.
      cells = {format_duration_ns(0), percent(0, host_sum), "-", "-", "-"};
    } else if (r.has_host) {
      cells = {format_duration_ns(r.host_total_ns), percent(r.host_total_ns, host_sum),
               format_duration_ns(r.host_total_ns / timed), format_duration_ns(r.host_min_ns),
               format_duration_ns(r.host_max_ns)};
    } else {
      cells = {"-", "-", "-", "-", "-"};
    }
    if (device) {
      if (r.has_device) {
        cells.push_back(format_duration_ns(r.device_total_ns));
        cells.push_back(percent(r.device_total_ns, device_sum));
        cells.push_back(format_duration_ns(r.calls ? r.device_total_ns / r.calls : 0));
      } else {
        cells.insert(cells.end(), {"-", "-", "-"});
      }
    }
    cells.push_back(std::to_string(r.calls));
    cells.push_back(r.has_host ? std::to_string(r.errors) : "-");
    pad_left(out, display_name(r.name), kNameWidth);
    for (const std::string& c : cells) { out += "  "; pad_left(out, c, kColWidth); }
    out += '\n';
  }
  out += rule;
  if (shown < rows.size()) {
    out += "(" + std::to_string(rows.size() - shown) + " more rows not shown)\n";
  }
  out += "Self Host time total: " + format_duration_ns(host_sum) + '\n';
  if (device) out += "Self Device time total: " + format_duration_ns(device_sum) + '\n';
  out += "Calls: " + std::to_string(calls_sum) + ", records: " + std::to_string(footer.records) +
         ", dropped: " + std::to_string(footer.dropped) + '\n';
  // Rows whose calls are not all timed, in the table's order: their Self
  // Host and averages are those of the recorded calls.
  std::string partial;
  size_t listed = 0, unlisted = 0;
  for (const TableRow& r : rows) {
    if (!r.has_host || r.dropped_calls == 0) continue;
    if (listed == kMaxPartialListed) {
      ++unlisted;
      continue;
    }
    partial += (listed++ ? ", " : "") + display_name(r.name) + " (" + std::to_string(recorded_calls(r)) + " of " +
               std::to_string(r.calls) + " recorded)";
  }
  if (unlisted) partial += " and " + std::to_string(unlisted) + " more";
  if (!partial.empty()) out += "Host times of rows with dropped calls cover the recorded calls only: " + partial + '\n';
  if (!regions.empty()) {
    const bool region_device =
        device || std::any_of(regions.begin(), regions.end(), [](const RegionRow& r) { return r.device_total_ns != 0; });
    out += format_regions(regions, opt, region_device, device_sum);
  }
  for (const std::string& n : footer.notes) {
    append_valid_utf8(out, n);
    out += '\n';
  }
  return out;
}

}  // namespace nb::formats
