// nb-merge: the traces of a job's ranks on one timeline (`nbprof merge`).
//
//   nb-merge DIR|TRACE... -o MERGED[.json.gz] [--overwrite]
//
// Each input is one of nb's traces (PREFIX.trace.json.gz or .trace.json; a
// directory stands for the traces in it). nb writes a trace as a head of
// top-level keys, then "traceEvents" one event per line, then a tail of
// "stackFrames": so the merge reads each file once, line by line, and
// writes each event as it reads it. What it keeps in memory is a line, the
// head of one file and a few numbers per process; the stack frames go to a
// temporary file until the events are all out. Eight traces of 200 MB take
// the memory of one line, not 1.6 GB.
//
// In the merged trace:
// - Each rank is a group of processes, sorted by rank (the trace's
//   distributedInfo; traces without one follow, in file order): its host
//   process ("serve (rank 0, node7)"), then its GPUs ("rank 0: GPU 0"),
//   renumbered so that no two ranks share a process id.
// - Times are on one clock: each trace's "ts" counts from its own
//   baseTimeNanoseconds (a whole second of the wall clock); the merged one
//   counts from the earliest, and every event moves by the whole seconds in
//   between, which is exact. How well two hosts' wall clocks agree is up to
//   their clock sync (NTP: about a millisecond; PTP: microseconds); on one
//   host every process reads the same clock.
// - Arrows (flows) get ids of their own rank; stacks ("sf", "stackFrames")
//   are renamed "r<N>-<id>" in each rank.
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

constexpr const char* kUsage = "usage: nbprof merge DIR|TRACE... -o MERGED.trace.json.gz [--overwrite]";

// The output being written, removed if the merge stops: nothing half
// written is left under any name.
std::string g_partial;

[[noreturn]] void fail(const std::string& message) {
  if (!g_partial.empty()) std::remove(g_partial.c_str());
  std::fprintf(stderr, "nbprof merge: %s\n", message.c_str());
  std::exit(2);
}

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Lines of a gzip or plain file (zlib reads plain text as it is).
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
    if (f_ == nullptr) fail("cannot open " + path);
    gzbuffer(f_, 1 << 18);
  }
  ~LineReader() { gzclose(f_); }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;
  // The next line without its '\n'; false at the end.
  bool next(std::string& line) {
    line.clear();
    whole_ = false;
    char buf[65536];
    for (;;) {
      if (gzgets(f_, buf, sizeof buf) == nullptr) {
        int err = 0;
        gzerror(f_, &err);
        if (err != Z_OK && err != Z_BUF_ERROR) fail(path_ + ": cannot be read (" + gzerror(f_, &err) + ")");
        return !line.empty();
      }
      line += buf;
      if (!line.empty() && line.back() == '\n') {
        line.pop_back();
        whole_ = true;
        return true;
      }
    }
  }
  // Whether the line next() gave ended with its '\n' (the last line of a
  // file cut off while it was written does not, and may still end in '}').
  bool whole() const { return whole_; }

 private:
  bool whole_ = false;
  std::string path_;
  gzFile f_;
};

// Where the output goes: gzip when its name ends in .gz.
class Writer {
 public:
  Writer(const std::string& path, bool gz) : gz_(gz) {
    if (gz_) {
      g_ = gzopen(path.c_str(), "wb6");
      if (g_ != nullptr) gzbuffer(g_, 1 << 18);
    } else {
      p_ = std::fopen(path.c_str(), "wb");
    }
    if (g_ == nullptr && p_ == nullptr) fail("cannot write " + path);
  }
  void put(const std::string& s) { put(s.data(), s.size()); }
  void put(const char* p, size_t n) {
    if (n == 0) return;
    const bool ok = gz_ ? gzwrite(g_, p, static_cast<unsigned>(n)) == static_cast<int>(n) : std::fwrite(p, 1, n, p_) == n;
    if (!ok) failed_ = true;
  }
  bool close() {
    const bool ok = gz_ ? gzclose(g_) == Z_OK : std::fclose(p_) == 0;
    return ok && !failed_;
  }

 private:
  bool gz_;
  gzFile g_ = nullptr;
  FILE* p_ = nullptr;
  bool failed_ = false;
};

struct Input {
  std::string path;
  long rank = -1;              // distributedInfo's, -1 when the trace has none
  uint64_t base_ns = 0;        // baseTimeNanoseconds
  size_t order = 0;            // place on the command line
  nlohmann::json devices;      // deviceProperties
};

// The head of a trace: the text before its "traceEvents" line, as JSON;
// false, with `why`, for a file that is not one of nb's traces.
bool read_head(LineReader& in, const std::string& path, nlohmann::json& head, std::string& why) {
  std::string text, line;
  while (in.next(line)) {
    if (line.rfind("  \"traceEvents\": [", 0) == 0) {
      while (!text.empty() && (text.back() == '\n' || text.back() == ',' || text.back() == ' ')) text.pop_back();
      text += "}";
      head = nlohmann::json::parse(text, nullptr, false);
      if (head.is_discarded() || !head.is_object()) {
        why = path + ": its head is not JSON (is it one of nb's traces?)";
        return false;
      }
      return true;
    }
    text += line;
    text += '\n';
    if (text.size() > (size_t{64} << 20)) break;
  }
  why = path + ": no \"traceEvents\" line: not one of nb's traces (nb writes one event per line)";
  return false;
}

// The integer after `key` (e.g. "\"pid\":") in `line`, and where it ends.
bool find_int(const std::string& line, const char* key, size_t from, size_t& at, size_t& end, long long& value) {
  at = line.find(key, from);
  if (at == std::string::npos) return false;
  size_t p = at + std::strlen(key);
  end = p;
  if (end < line.size() && line[end] == '-') ++end;
  while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
  if (end == p) return false;
  value = std::strtoll(line.c_str() + p, nullptr, 10);
  return true;
}

// "ts" moved by a whole number of microseconds, in the decimal text it has
// (so the nanoseconds of "123.456" stay exact).
std::string shifted(const std::string& number, long long shift_us) {
  const size_t dot = number.find('.');
  const long long whole = std::strtoll(number.substr(0, dot).c_str(), nullptr, 10);
  const bool negative = !number.empty() && number[0] == '-';
  std::string out;
  if (negative && dot != std::string::npos) {
    // -1.250 + 5 = 3.750: let the double do it (nb never writes a negative ts).
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f", std::strtod(number.c_str(), nullptr) + static_cast<double>(shift_us));
    return buf;
  }
  out = std::to_string(whole + shift_us);
  if (dot != std::string::npos) out += number.substr(dot);
  return out;
}

struct RankState {
  size_t index = 0;   // place in rank order
  std::string label;  // "rank 3" (or "trace 5" without a rank)
  long long shift_us = 0;
  std::map<long long, long long> pids;  // the trace's process id → the merged one
};

long long merged_pid(RankState& r, long long pid) {
  auto it = r.pids.find(pid);
  if (it != r.pids.end()) return it->second;
  // 1000 processes a rank (a host process and its GPUs), ranks in order.
  const long long id = static_cast<long long>(r.index + 1) * 1000 + static_cast<long long>(r.pids.size());
  r.pids.emplace(pid, id);
  return id;
}

// One event line, rewritten for its place in the merged trace.
void rewrite_event(std::string& line, RankState& r) {
  size_t at, end;
  long long v;
  if (find_int(line, "\"pid\":", 0, at, end, v)) {
    const size_t p = at + 6;
    const long long pid = merged_pid(r, v);
    line.replace(p, end - p, std::to_string(pid));
  }
  const size_t ts = line.find("\"ts\":");
  if (ts != std::string::npos) {
    const size_t p = ts + 5;
    size_t e = p;
    while (e < line.size() && (std::isdigit(static_cast<unsigned char>(line[e])) || line[e] == '.' || line[e] == '-')) ++e;
    if (e > p) line.replace(p, e - p, shifted(line.substr(p, e - p), r.shift_us));
  }
  const bool flow = line.find("\"ph\":\"s\"") != std::string::npos || line.find("\"ph\":\"f\"") != std::string::npos ||
                    line.find("\"ph\":\"t\"") != std::string::npos;
  if (flow && find_int(line, "\"id\":", 0, at, end, v)) {
    const size_t p = at + 5;
    line.replace(p, end - p, std::to_string((static_cast<long long>(r.index) << 32) + v));
  }
  if (find_int(line, "\"sf\":", 0, at, end, v)) {
    const size_t p = at + 5;
    line.replace(p, end - p, "\"r" + std::to_string(r.index) + "-" + std::to_string(v) + "\"");
  }
  // Process names and order: each rank's processes together, in rank order.
  if (line.find("\"name\":\"process_name\"") != std::string::npos) {
    const size_t name = line.find("\"args\":{\"name\":\"");
    if (name != std::string::npos && line.find("(rank ") == std::string::npos) {
      line.insert(name + 16, r.label + ": ");
    }
  } else if (line.find("\"name\":\"process_sort_index\"") != std::string::npos &&
             find_int(line, "\"sort_index\":", 0, at, end, v)) {
    const size_t p = at + 13;
    long long pid = 0;
    size_t a2, e2;
    if (find_int(line, "\"pid\":", 0, a2, e2, pid)) line.replace(p, end - p, std::to_string(pid));
  }
}

// A "stackFrames" entry line, its id and parent renamed for its rank.
void rewrite_frame(std::string& line, const RankState& r) {
  const std::string tag = "r" + std::to_string(r.index) + "-";
  const size_t key = line.find('"');
  if (key != std::string::npos) line.insert(key + 1, tag);
  const size_t parent = line.rfind("\"parent\": \"");
  if (parent != std::string::npos) line.insert(parent + 11, tag);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

struct Found {
  std::string path;
  bool named;  // on the command line (not found in a directory)
};

std::vector<Found> expand_inputs(const std::vector<std::string>& args, const std::string& output) {
  std::vector<Found> out;
  for (const std::string& a : args) {
    if (!is_dir(a)) {
      out.push_back({a, true});
      continue;
    }
    std::vector<std::string> found;
    if (DIR* d = opendir(a.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (!ends_with(name, ".trace.json.gz") && !ends_with(name, ".trace.json")) continue;
        const std::string path = a + "/" + name;
        if (!same_file(path, output)) found.push_back(path);
      }
      closedir(d);
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) fail(a + ": no *.trace.json.gz or *.trace.json in it");
    for (const std::string& f : found) out.push_back({f, false});
  }
  return out;
}

}  // namespace

int merge(int argc, char** argv) {
  std::vector<std::string> args;
  std::string output;
  bool overwrite = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-o" || a == "--out") {
      if (i + 1 >= argc) fail("-o needs a file name\n" + std::string(kUsage));
      output = argv[++i];
    } else if (a == "--overwrite") {
      overwrite = true;
    } else if (a == "-h" || a == "--help") {
      std::printf("%s\n", kUsage);
      return 0;
    } else {
      args.push_back(a);
    }
  }
  if (output.empty() || args.empty()) fail(kUsage);
  if (!overwrite && access(output.c_str(), F_OK) == 0) fail(output + " exists: pass --overwrite, or another -o");

  // Pass one: each trace's rank and clock base, from its head.
  std::vector<Input> inputs;
  for (const auto& [path, named] : expand_inputs(args, output)) {
    LineReader in(path);
    nlohmann::json head;
    std::string why;
    if (!read_head(in, path, head, why)) {
      // Named: the user meant it. Found in a directory (torch.profiler's
      // .pt.trace.json beside nb's): left out, said.
      if (named) fail(why);
      std::fprintf(stderr, "nbprof merge: left out %s\n", why.c_str());
      continue;
    }
    if (head.contains("nbMerged")) {
      if (named) fail(path + " is a merged trace already");
      std::fprintf(stderr, "nbprof merge: left out %s: a merged trace already\n", path.c_str());
      continue;
    }
    Input t;
    t.path = path;
    t.order = inputs.size();
    t.base_ns = head.value("baseTimeNanoseconds", uint64_t{0});
    t.devices = head.value("deviceProperties", nlohmann::json::array());
    if (head.contains("distributedInfo") && head["distributedInfo"].is_object() &&
        head["distributedInfo"].value("rank", nlohmann::json()).is_number_integer()) {
      t.rank = head["distributedInfo"]["rank"].get<long>();
    }
    inputs.push_back(t);
  }
  std::stable_sort(inputs.begin(), inputs.end(), [](const Input& a, const Input& b) {
    if ((a.rank < 0) != (b.rank < 0)) return a.rank >= 0;
    return a.rank != b.rank ? a.rank < b.rank : a.order < b.order;
  });
  uint64_t base = UINT64_MAX;
  for (const Input& t : inputs) base = std::min(base, t.base_ns);

  const std::string partial = output + ".partial";
  Writer out(partial, ends_with(output, ".gz"));
  g_partial = partial;
  FILE* frames = std::tmpfile();
  if (frames == nullptr) fail("cannot make a temporary file for the stack frames");
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    ranks.push_back({{"rank", inputs[i].rank}, {"file", inputs[i].path}, {"baseTimeNanoseconds", inputs[i].base_ns}});
  }
  // The devices as the first rank saw them (a GPU of the same ordinal on
  // another host is another card; its rank's process name says which).
  const nlohmann::json devices = inputs.empty() ? nlohmann::json::array() : inputs.front().devices;
  if (inputs.empty()) fail("no trace of nb's to merge");
  using Json = nlohmann::json;
  out.put("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": " + devices.dump(-1, ' ', false, Json::error_handler_t::replace) +
          ",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " +
          std::to_string(base) + ",\n  \"nbMerged\": " + ranks.dump(-1, ' ', false, Json::error_handler_t::replace) +
          ",\n  \"traceEvents\": [\n");

  // Pass two: the events of each trace in rank order, then the frames.
  bool first_event = true, first_frame = true;
  std::string line;
  uint64_t events = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Input& t = inputs[i];
    RankState r;
    r.index = i;
    r.label = t.rank >= 0 ? "rank " + std::to_string(t.rank) : "trace " + std::to_string(t.order);
    r.shift_us = static_cast<long long>((t.base_ns - base) / 1000);
    LineReader in(t.path);
    nlohmann::json head;
    std::string why;
    if (!read_head(in, t.path, head, why)) fail(why + " (it changed while being merged)");
    enum { Events, Tail, Frames } part = Events;
    bool said_cut = false;
    while (in.next(line)) {
      if (part == Events) {
        if (line.rfind("  ]", 0) == 0) {
          part = Tail;
          continue;
        }
        if (!in.whole()) {
          // The last line of a file cut off while it was written.
          std::fprintf(stderr, "nbprof merge: %s ends in the middle of an event; merged up to it\n", t.path.c_str());
          said_cut = true;
          break;
        }
        if (!line.empty() && line.back() == ',') line.pop_back();
        if (line.empty() || line[0] != '{') continue;
        if (line.back() != '}') {
          std::fprintf(stderr, "nbprof merge: %s has a broken event line; merged up to it\n", t.path.c_str());
          said_cut = true;
          break;
        }
        rewrite_event(line, r);
        if (!first_event) out.put(",\n", 2);
        first_event = false;
        out.put(line);
        ++events;
      } else if (part == Tail) {
        if (line.rfind("  \"stackFrames\": {", 0) == 0) part = Frames;
      } else {
        if (line.rfind("  }", 0) == 0) {
          part = Tail;
          continue;
        }
        if (!line.empty() && line.back() == ',') line.pop_back();
        rewrite_frame(line, r);
        if (!first_frame) std::fputs(",\n", frames);
        first_frame = false;
        std::fputs(line.c_str(), frames);
      }
    }
    if (part == Events && !said_cut) {
      // Cut off between two events: all of its events are whole.
      std::fprintf(stderr, "nbprof merge: %s ends before its events' end; merged all it holds\n", t.path.c_str());
    }
  }
  out.put("\n  ],\n  \"stackFrames\": {\n");
  std::rewind(frames);
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, frames)) > 0) out.put(buf, n);
  std::fclose(frames);
  out.put("\n  }\n}\n");
  if (!out.close()) {
    std::remove(partial.c_str());
    fail("cannot write " + output + " (disk full?)");
  }
  if (std::rename(partial.c_str(), output.c_str()) != 0) fail("cannot rename " + partial + " to " + output);
  g_partial.clear();
  std::fprintf(stderr, "nbprof merge: wrote %s: %zu traces, %llu events\n", output.c_str(), inputs.size(),
               static_cast<unsigned long long>(events));
  return 0;
}

int main(int argc, char** argv) {
  try {
    return merge(argc, argv);
  } catch (const std::exception& e) {
    fail(std::string("stopped: ") + e.what());
  }
}
