// nb-stats: prints a run's ranking table again from its trace (`nbprof
// stats`), with the same formatter the run used, so the text is the same.
//
//   nb-stats RUN [--sort device|host|calls|name] [--rows N] [--by source] [--folded]
//
// RUN is an output prefix (nb-demo reads nb-demo.trace.json.gz, or
// nb-demo.trace.json; a window is nb-demo.w1) or a trace's path. The table
// is the trace's "nbTable" key (formats/chrome_trace.h), which comes before
// "traceEvents": the file is read (through zlib, which reads plain text as
// it is) as a stream of JSON events and reading stops after the table, so a
// trace of millions of events is neither loaded nor read to its end.
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <istream>
#include <streambuf>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/ranking_table.h"

namespace {

using nlohmann::json;
using nb::formats::SortKey;

constexpr const char* kUsage = "usage: nbprof stats RUN [--sort device|host|calls|name] [--rows N] [--by source] [--folded]";

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "nbprof stats: %s\n", message.c_str());
  std::exit(2);
}

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// PREFIX.trace.json.gz or PREFIX.trace.json (NB_COMPRESS=0), or RUN itself
// when it names a file. A prefix whose run was recorded in windows has
// neither: the message names the windows.
std::string trace_path(const std::string& run) {
  const bool named = ends_with(run, ".trace.json") || ends_with(run, ".trace.json.gz");
  if (!named) {
    for (const char* ext : {".trace.json.gz", ".trace.json"}) {
      if (is_file(run + ext)) return run + ext;
    }
  }
  if (is_file(run)) return run;
  std::string windows;
  for (int w = 1; w <= 1000; ++w) {
    const std::string win = run + ".w" + std::to_string(w);
    if (!is_file(win + ".trace.json.gz") && !is_file(win + ".trace.json")) break;
    windows += (windows.empty() ? "" : ", ") + win;
  }
  if (!windows.empty()) fail("no " + run + ".trace.json.gz; this run was recorded in windows: " + windows);
  fail("no trace at " + (named ? run : run + ".trace.json.gz (nor " + run + ".trace.json)"));
}

// A file read through zlib: gzip inflated, anything else as it is.
class GzBuf : public std::streambuf {
 public:
  explicit GzBuf(gzFile f) : f_(f) {}
  int underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(f_, buf_, sizeof buf_);
    if (n <= 0) return traits_type::eof();
    setg(buf_, buf_, buf_ + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile f_;
  char buf_[1 << 16];
};

// SAX events of the whole document; keeps only the value of the top-level
// key "nbTable" (built as a json value) and stops the parse once it is read.
class TableReader {
 public:
  json table;
  bool found = false;

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(json::number_integer_t v) { return value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return value(v); }
  bool string(json::string_t& v) { return value(v); }
  bool binary(json::binary_t&) { return value(nullptr); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    if (depth_ == 1) keeping_ = k == "nbTable";
    else if (keeping_) key_ = k;
    return true;
  }
  bool parse_error(std::size_t at, const std::string&, const json::exception& e) {
    error = "not a JSON trace (byte " + std::to_string(at) + "): " + e.what();
    return false;
  }
  std::string error;

 private:
  // Adds a value where the reader stands: the table itself, or into the
  // innermost open object (under the last key) or array.
  json* place(json v) {
    if (stack_.empty()) {
      table = std::move(v);
      return &table;
    }
    json& parent = *stack_.back();
    if (parent.is_object()) return &(parent[key_] = std::move(v));
    parent.push_back(std::move(v));
    return &parent.back();
  }
  template <typename T>
  bool value(T&& v) {
    if (keeping_ && depth_ >= 1) {
      place(json(std::forward<T>(v)));
      if (stack_.empty()) return done();
    }
    return true;
  }
  bool open(json v) {
    if (keeping_ && depth_ >= 1) stack_.push_back(place(std::move(v)));
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    if (keeping_ && !stack_.empty()) {
      stack_.pop_back();
      if (stack_.empty()) return done();
    }
    return true;
  }
  bool done() {
    found = true;
    return false;  // stops the parse: nothing after the table is needed
  }

  int depth_ = 0;
  bool keeping_ = false;
  std::string key_;
  std::vector<json*> stack_;
};

uint64_t number(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number_unsigned()) throw std::runtime_error(std::string("\"") + key + "\" is missing");
  return it->get<uint64_t>();
}

nb::formats::RankingTable to_table(const json& j) {
  nb::formats::RankingTable t;
  t.options.title = j.at("title").get<std::string>();
  if (!nb::formats::sort_key_from_name(j.at("sort").get<std::string>(), t.options.sort)) {
    throw std::runtime_error("unknown sort \"" + j.at("sort").get<std::string>() + "\"");
  }
  t.options.max_rows = number(j, "printedRows");
  for (const json& r : j.at("rows")) {
    nb::formats::TableRow row;
    row.name = r.at("name").get<std::string>();
    row.calls = number(r, "calls");
    row.host_total_ns = number(r, "hostTotalNs");
    row.host_min_ns = number(r, "hostMinNs");
    row.host_max_ns = number(r, "hostMaxNs");
    row.errors = number(r, "errors");
    // Written only where calls of the row were dropped (and not by versions
    // of nb before it was counted).
    row.dropped_calls = r.contains("droppedCalls") ? number(r, "droppedCalls") : 0;
    row.device_total_ns = number(r, "deviceTotalNs");
    row.has_host = r.at("hasHost").get<bool>();
    row.has_device = r.at("hasDevice").get<bool>();
    t.rows.push_back(std::move(row));
  }
  // Written only where the run had regions (and not by versions before them).
  if (j.contains("regions")) {
    for (const json& r : j.at("regions")) {
      nb::formats::RegionRow row;
      for (const json& p : r.at("path")) row.path.push_back(p.get<std::string>());
      if (row.path.empty()) throw std::runtime_error("a region without a name");
      row.calls = number(r, "calls");
      row.host_total_ns = number(r, "hostTotalNs");
      row.host_self_ns = number(r, "hostSelfNs");
      row.device_total_ns = number(r, "deviceTotalNs");
      row.device_self_ns = number(r, "deviceSelfNs");
      t.regions.push_back(std::move(row));
    }
  }
  if (j.contains("sources")) {
    for (const json& r : j.at("sources")) {
      nb::formats::SourceRow row;
      row.location = r.at("location").get<std::string>();
      row.calls = number(r, "calls");
      row.total_calls = number(r, "totalCalls");
      row.device_self_ns = number(r, "deviceSelfNs");
      row.device_total_ns = number(r, "deviceTotalNs");
      t.sources.push_back(std::move(row));
    }
  }
  // The folded files' lines (with launch stacks), one string each.
  for (const auto& [key, into] : {std::pair<const char*, std::string*>{"deviceFolded", &t.device_folded},
                                  {"hostFolded", &t.host_folded}}) {
    if (!j.contains(key)) continue;
    for (const json& line : j.at(key)) {
      *into += line.get<std::string>();
      *into += '\n';
    }
  }
  const json& f = j.at("footer");
  t.footer.records = number(f, "records");
  t.footer.dropped = number(f, "dropped");
  for (const json& n : f.at("notes")) t.footer.notes.push_back(n.get<std::string>());
  return t;
}

// The run's prefix: RUN, or the trace's path without .trace.json(.gz).
std::string prefix_of(const std::string& run) {
  for (const char* ext : {".trace.json.gz", ".trace.json"}) {
    if (ends_with(run, ext)) return run.substr(0, run.size() - std::strlen(ext));
  }
  return run;
}

// Writes `text` to `path` whole or not at all: a temporary file beside it,
// renamed over it.
void write_whole(const std::string& path, const std::string& text) {
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) fail("cannot write " + path + ": " + std::strerror(errno));
  size_t done = 0;
  int saved = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      saved = w < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(w);
  }
  // mkstemp's file is 0600: give it what a new file would get.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0 && saved == 0) saved = errno;
  if (::close(fd) != 0 && saved == 0) saved = errno;
  if (saved == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) saved = errno;
  if (saved != 0) {
    const std::string why = std::strerror(saved);
    ::unlink(tmp.c_str());
    fail("cannot write " + path + ": " + why);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string run;
  std::string sort;
  std::string rows;
  std::string by;
  bool folded = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto take = [&](const char* name, std::string& into) {
      const std::string eq = std::string(name) + "=";
      if (a.compare(0, eq.size(), eq) == 0) {
        into = a.substr(eq.size());
      } else {
        if (i + 1 >= argc) fail(std::string(name) + " needs a value (" + kUsage + ")");
        into = argv[++i];
      }
    };
    if (a == "-h" || a == "--help") {
      std::printf("%s\n\nPrints the ranking table a run printed, again, from its trace. RUN is the\n"
                  "output prefix (nb-demo: nb-demo.trace.json.gz; a window: nb-demo.w1) or the\n"
                  "trace's path. --sort and --rows default to the run's own (NB_TABLE_SORT,\n"
                  "NB_TABLE_ROWS); --rows 0 prints every row, as PREFIX.table.txt has them.\n"
                  "--by source ranks the source lines that launched device work instead (a run\n"
                  "with launch stacks: NB_STACKS=launch or all), as PREFIX.source.txt has them.\n"
                  "--folded writes the run's flame graph files from its trace instead:\n"
                  "PREFIX.device.folded and PREFIX.host.folded (a run with launch stacks).\n",
                  kUsage);
      return 0;
    }
    if (a == "--sort" || a.rfind("--sort=", 0) == 0) take("--sort", sort);
    else if (a == "--rows" || a.rfind("--rows=", 0) == 0) take("--rows", rows);
    else if (a == "--by" || a.rfind("--by=", 0) == 0) take("--by", by);
    else if (a == "--folded") folded = true;
    else if (a.size() > 1 && a[0] == '-') fail("unknown option " + a + " (" + kUsage + ")");
    else if (run.empty()) run = a;
    else fail("unexpected argument '" + a + "' (" + kUsage + ")");
  }
  if (run.empty()) fail(std::string("which run? (") + kUsage + ")");
  if (!by.empty() && by != "source") fail("--by takes 'source', not '" + by + "'");

  SortKey sort_key{};
  if (!sort.empty() && !nb::formats::sort_key_from_name(sort, sort_key)) {
    fail("unknown sort '" + sort + "' (device, host, calls or name)");
  }
  size_t max_rows = 0;
  if (!rows.empty()) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(rows.c_str(), &end, 10);
    if (rows[0] < '0' || rows[0] > '9' || *end != '\0') fail("--rows needs a number of rows (0 = all), not '" + rows + "'");
    max_rows = static_cast<size_t>(n);
  }

  const std::string path = trace_path(run);
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) fail("cannot read " + path + ": " + std::strerror(errno));
  TableReader reader;
  {
    GzBuf buf(file);
    std::istream in(&buf);
    json::sax_parse(in, &reader);
  }
  gzclose(file);
  if (!reader.found) {
    if (!reader.error.empty()) fail(path + ": " + reader.error);
    fail(path + " has no ranking table (\"nbTable\"): it was not written by this version of nb");
  }

  nb::formats::RankingTable table;
  try {
    table = to_table(reader.table);
  } catch (const std::exception& e) {
    fail(path + ": the ranking table (\"nbTable\") is damaged: " + e.what());
  }
  if (!sort.empty()) table.options.sort = sort_key;
  if (!rows.empty()) table.options.max_rows = max_rows;
  if (folded) {
    if (!by.empty() || !sort.empty() || !rows.empty()) fail("--folded writes files; it takes no --by, --sort or --rows");
    if (table.device_folded.empty() && table.host_folded.empty()) {
      fail(path + " has no folded stacks: its run took no launch stacks (record it with NB_STACKS=launch or all)");
    }
    const std::string prefix = prefix_of(run);
    write_whole(prefix + ".device.folded", table.device_folded);
    write_whole(prefix + ".host.folded", table.host_folded);
    std::printf("wrote %s.device.folded (device ns) and %s.host.folded (host ns)\n", prefix.c_str(), prefix.c_str());
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  std::string text;
  if (by == "source") {
    if (table.sources.empty()) {
      fail(path + " has no source locations: its run took no launch stacks (record it with NB_STACKS=launch or all)");
    }
    uint64_t device_sum = 0;
    for (const auto& r : table.rows) device_sum += r.device_total_ns;
    if (rows.empty()) table.options.max_rows = 0;  // the file's rows, unless --rows says
    text = nb::formats::format_source_table(table.sources, table.options, device_sum);
  } else {
    text = nb::formats::format_ranking_table(table.rows, table.options, table.footer, table.regions);
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
