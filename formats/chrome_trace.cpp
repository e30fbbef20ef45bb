#include "formats/chrome_trace.h"

#include <charconv>
#include <cmath>
#include <map>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "formats/stack_text.h"
#include "formats/text_encoding.h"

namespace nb::formats {

const char* category_name(Category c) {
  switch (c) {
    case Category::CudaRuntime: return "cuda_runtime";
    case Category::CudaDriver: return "cuda_driver";
    case Category::Kernel: return "kernel";
    case Category::GpuMemcpy: return "gpu_memcpy";
    case Category::GpuMemset: return "gpu_memset";
    case Category::UserAnnotation: return "user_annotation";
    case Category::GpuUserAnnotation: return "gpu_user_annotation";
    case Category::Overhead: return "overhead";
  }
  return "unknown";
}

// Numbers are formatted by hand (to_chars, no locale, no allocation): a long
// run writes millions of them.
void append_us_from_ns(std::string& out, int64_t ns) {
  const uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  char buf[32];
  char* p = buf;
  if (ns < 0) *p++ = '-';
  p = std::to_chars(p, buf + sizeof buf, mag / 1000).ptr;
  const unsigned frac = static_cast<unsigned>(mag % 1000);
  p[0] = '.';
  p[1] = static_cast<char>('0' + frac / 100);
  p[2] = static_cast<char>('0' + frac / 10 % 10);
  p[3] = static_cast<char>('0' + frac % 10);
  out.append(buf, static_cast<size_t>(p + 4 - buf));
}

namespace {

void append_int(std::string& out, int64_t v) {
  char buf[24];
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
}
void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
}

// JSON has no NaN or infinity; a bandwidth of a zero-length copy must not make
// the file unparsable.
void append_double(std::string& out, double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[40];
  // Byte counts arrive as doubles in counters: print whole numbers exactly.
  const bool whole = v == std::floor(v) && std::fabs(v) < 9007199254740992.0;
  if (whole) {
    append_int(out, static_cast<int64_t>(v));
    return;
  }
  const int n = std::snprintf(buf, sizeof buf, "%.9g", v);
  out.append(buf, static_cast<size_t>(n));
}

void append_string(std::string& out, const std::string& s) {
  out += '"';
  append_json_escaped(out, s);
  out += '"';
}

void append_key(std::string& out, const char* key) {
  out += '"';
  append_json_escaped(out, key);
  out += "\": ";
}

// Events are written without the spaces of the head: a long run has
// millions of them.
void append_compact_key(std::string& out, std::string_view key) {
  out += '"';
  append_json_escaped(out, key);
  out += "\":";
}

void append_hex(std::string& out, uint64_t v) {
  char buf[24] = {'"', '0', 'x'};
  char* p = std::to_chars(buf + 3, buf + sizeof buf - 1, v, 16).ptr;
  *p++ = '"';
  out.append(buf, static_cast<size_t>(p - buf));
}

void append_args(std::string& out, const ArgList& args, const std::vector<std::string>* escaped_names) {
  out += "{";
  bool first = true;
  for (const Arg& a : args) {
    if (!first) out += ',';
    first = false;
    append_compact_key(out, a.key);
    switch (a.type) {
      case Arg::Type::Int: append_int(out, a.i); break;
      case Arg::Type::UInt: append_uint(out, a.u); break;
      case Arg::Type::Double: append_double(out, a.d); break;
      case Arg::Type::View:
        out += '"';
        append_json_escaped(out, a.v);
        out += '"';
        break;
      case Arg::Type::Hex: append_hex(out, a.u); break;
      case Arg::Type::Name:
        out += escaped_names && a.u < escaped_names->size() ? (*escaped_names)[a.u] : std::string("\"?\"");
        break;
      case Arg::Type::Dim3:
        out += '[';
        append_uint(out, a.dim[0]); out += ',';
        append_uint(out, a.dim[1]); out += ',';
        append_uint(out, a.dim[2]);
        out += ']';
        break;
    }
  }
  out += "}";
}

void append_ts(std::string& out, uint64_t base_ns, uint64_t ts_ns) {
  append_us_from_ns(out, static_cast<int64_t>(ts_ns - base_ns));
}
void append_ts(std::string& out, const TraceData& t, uint64_t ts_ns) { append_ts(out, t.base_time_ns, ts_ns); }

// `,"pid":P,"tid":T,"ts":TS` of an event or a flow.
void append_place(std::string& out, uint64_t base_ns, int64_t pid, int64_t tid, uint64_t ts_ns) {
  out += ",\"pid\":";
  append_int(out, pid);
  out += ",\"tid\":";
  append_int(out, tid);
  out += ",\"ts\":";
  append_ts(out, base_ns, ts_ns);
}

void append_device(std::string& out, const DeviceProperties& d) {
  out += "{\"id\": "; append_int(out, d.id);
  out += ", \"name\": "; append_string(out, d.name);
  out += ", \"totalGlobalMem\": "; append_uint(out, d.total_global_mem);
  out += ", \"computeMajor\": "; append_int(out, d.compute_major);
  out += ", \"computeMinor\": "; append_int(out, d.compute_minor);
  out += ", \"maxThreadsPerBlock\": "; append_int(out, d.max_threads_per_block);
  out += ", \"maxThreadsPerMultiprocessor\": "; append_int(out, d.max_threads_per_multiprocessor);
  out += ", \"regsPerBlock\": "; append_int(out, d.regs_per_block);
  out += ", \"warpSize\": "; append_int(out, d.warp_size);
  out += ", \"sharedMemPerBlock\": "; append_int(out, d.shared_mem_per_block);
  out += ", \"numSms\": "; append_int(out, d.num_sms);
  out += ", \"regsPerMultiprocessor\": "; append_int(out, d.regs_per_multiprocessor);
  out += ", \"sharedMemPerBlockOptin\": "; append_int(out, d.shared_mem_per_block_optin);
  out += ", \"sharedMemPerMultiprocessor\": "; append_int(out, d.shared_mem_per_multiprocessor);
  out += "}";
}

void append_bool(std::string& out, bool v) { out += v ? "true" : "false"; }

// "nbRun": the run's steps, memory curve and end, before "traceEvents".
void append_run(std::string& out, const TraceData& t) {
  const RunSummary& r = t.run;
  out += "  \"nbRun\": {\n    \"programEnd\": ";
  if (r.program_end_ns != 0) append_ts(out, t, static_cast<uint64_t>(r.program_end_ns));
  else out += "null";
  out += ",\n    \"steps\": ";
  if (!r.steps_complete) {
    out += "null";
  } else {
    out += "[";
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const RunSummary::Step& s = r.steps[i];
      out += i ? ", [" : "[";
      append_uint(out, s.number);
      out += ", ";
      append_ts(out, t, static_cast<uint64_t>(s.start_ns));
      out += ", ";
      append_us_from_ns(out, static_cast<int64_t>(s.dur_ns));
      out += ", ";
      append_int(out, s.tid);
      out += "]";
    }
    out += "]";
  }
  out += ",\n    \"memory\": ";
  if (!r.memory_complete) {
    out += "null,\n";
  } else {
    out += "[";
    for (size_t d = 0; d < r.memory.size(); ++d) {
      out += d ? ",\n      {\"device\": " : "\n      {\"device\": ";
      append_int(out, r.memory[d].first);
      out += ", \"points\": [";
      const auto& points = r.memory[d].second;
      for (size_t i = 0; i < points.size(); ++i) {
        out += i ? ", [" : "[";
        append_ts(out, t, static_cast<uint64_t>(points[i].ts_ns));
        out += ", ";
        append_uint(out, points[i].allocated);
        out += ", ";
        append_uint(out, points[i].reserved);
        out += "]";
      }
      out += "]}";
    }
    out += r.memory.empty() ? "],\n" : "\n    ],\n";
  }
  out += "    \"teardown\": {\"frees\": ";
  append_uint(out, r.teardown_frees);
  out += ", \"bytes\": ";
  append_uint(out, r.teardown_bytes);
  out += "}\n  },\n";
}

// "nbTable": the ranking table as data, before "traceEvents" so that a
// reader can stop there.
void append_table(std::string& out, const RankingTable& t) {
  out += "  \"nbTable\": {\n    \"title\": ";
  append_string(out, t.options.title);
  out += ", \"sort\": \"";
  out += sort_key_name(t.options.sort);
  out += "\", \"printedRows\": ";
  append_uint(out, t.options.max_rows);
  out += ",\n    \"rows\": [";
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const TableRow& r = t.rows[i];
    out += i ? ",\n      " : "\n      ";
    out += "{\"name\": ";
    append_string(out, r.name);
    out += ", \"calls\": "; append_uint(out, r.calls);
    out += ", \"hostTotalNs\": "; append_uint(out, r.host_total_ns);
    out += ", \"hostMinNs\": "; append_uint(out, r.host_min_ns);
    out += ", \"hostMaxNs\": "; append_uint(out, r.host_max_ns);
    out += ", \"errors\": "; append_uint(out, r.errors);
    if (r.dropped_calls) { out += ", \"droppedCalls\": "; append_uint(out, r.dropped_calls); }
    out += ", \"deviceTotalNs\": "; append_uint(out, r.device_total_ns);
    out += ", \"hasHost\": "; append_bool(out, r.has_host);
    out += ", \"hasDevice\": "; append_bool(out, r.has_device);
    out += "}";
  }
  out += t.rows.empty() ? "],\n" : "\n    ],\n";
  if (!t.regions.empty()) {
    out += "    \"regions\": [";
    for (size_t i = 0; i < t.regions.size(); ++i) {
      const RegionRow& r = t.regions[i];
      out += i ? ",\n      " : "\n      ";
      out += "{\"path\": [";
      for (size_t k = 0; k < r.path.size(); ++k) {
        if (k) out += ", ";
        append_string(out, r.path[k]);
      }
      out += "], \"calls\": "; append_uint(out, r.calls);
      out += ", \"hostTotalNs\": "; append_uint(out, r.host_total_ns);
      out += ", \"hostSelfNs\": "; append_uint(out, r.host_self_ns);
      out += ", \"deviceTotalNs\": "; append_uint(out, r.device_total_ns);
      out += ", \"deviceSelfNs\": "; append_uint(out, r.device_self_ns);
      out += "}";
    }
    out += "\n    ],\n";
  }
  if (!t.sources.empty()) {
    out += "    \"sources\": [";
    for (size_t i = 0; i < t.sources.size(); ++i) {
      const SourceRow& r = t.sources[i];
      out += i ? ",\n      " : "\n      ";
      out += "{\"location\": ";
      append_string(out, r.location);
      out += ", \"calls\": "; append_uint(out, r.calls);
      out += ", \"totalCalls\": "; append_uint(out, r.total_calls);
      out += ", \"deviceSelfNs\": "; append_uint(out, r.device_self_ns);
      out += ", \"deviceTotalNs\": "; append_uint(out, r.device_total_ns);
      out += "}";
    }
    out += "\n    ],\n";
  }
  // The folded files' lines, one string each.
  for (const auto& [key, text] : {std::pair<const char*, const std::string*>{"deviceFolded", &t.device_folded},
                                  {"hostFolded", &t.host_folded}}) {
    if (text->empty()) continue;
    out += "    \"";
    out += key;
    out += "\": [";
    bool first = true;
    for (size_t at = 0; at < text->size();) {
      size_t end = text->find('\n', at);
      if (end == std::string::npos) end = text->size();
      out += first ? "\n      " : ",\n      ";
      first = false;
      append_string(out, text->substr(at, end - at));
      at = end + 1;
    }
    out += "\n    ],\n";
  }
  out += "    \"footer\": {\"records\": ";
  append_uint(out, t.footer.records);
  out += ", \"dropped\": ";
  append_uint(out, t.footer.dropped);
  out += ", \"notes\": [";
  for (size_t i = 0; i < t.footer.notes.size(); ++i) {
    out += i ? ",\n      " : "\n      ";
    append_string(out, t.footer.notes[i]);
  }
  out += t.footer.notes.empty() ? "]}\n  },\n" : "\n    ]}\n  },\n";
}

// Metadata ("M") event: `what` of (pid, tid) is {key: value}, value as
// JSON text.
void append_metadata(std::string& out, const char* what, int64_t pid, int64_t tid, const char* key,
                     const std::string& value) {
  out += "{\"name\":\"";
  out += what;
  out += "\",\"ph\":\"M\",\"ts\":0,\"pid\":";
  append_int(out, pid);
  out += ",\"tid\":";
  append_int(out, tid);
  out += ",\"args\":{";
  append_compact_key(out, key);
  out += value;
  out += "}}";
}

std::string json_string(const std::string& s) {
  std::string out;
  append_string(out, s);
  return out;
}

}  // namespace

std::string chrome_trace_head(const TraceData& t) {
  std::string out = "{\n  \"schemaVersion\": 1,\n";
  if (t.distributed.present) {
    // First in the file, "rank": N with its space: HTA finds the rank with
    // a regular expression on the first line that has one.
    const DistributedInfo& d = t.distributed;
    out += "  \"distributedInfo\": {";
    if (!d.backend.empty()) {
      out += "\"backend\": ";
      append_string(out, d.backend);
      out += ", ";
    }
    out += "\"rank\": ";
    append_int(out, d.rank);
    if (d.world_size >= 0) {
      out += ", \"world_size\": ";
      append_int(out, d.world_size);
    }
    if (d.local_rank >= 0) {
      out += ", \"local_rank\": ";
      append_int(out, d.local_rank);
    }
    if (!d.nccl_version.empty()) {
      out += ", \"nccl_version\": ";
      append_string(out, d.nccl_version);
    }
    out += "},\n";
  }
  out += "  \"deviceProperties\": [";
  for (size_t i = 0; i < t.devices.size(); ++i) {
    out += i ? ",\n    " : "\n    ";
    append_device(out, t.devices[i]);
  }
  out += t.devices.empty() ? "],\n" : "\n  ],\n";
  for (const auto& [key, value] : t.top_level_ints) {
    out += "  ";
    append_key(out, key.c_str());
    append_int(out, value);
    out += ",\n";
  }
  out += "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ";
  append_uint(out, t.base_time_ns);
  out += ",\n";
  append_table(out, t.table);
  if (t.run.present) append_run(out, t);
  out += "  \"traceEvents\": [\n";
  // The first element, so that every later one can begin with a comma.
  const ProcessInfo first = t.processes.empty() ? ProcessInfo{0, "nb", 0} : t.processes.front();
  append_metadata(out, "process_name", first.pid, 0, "name", json_string(first.name));
  return out;
}

namespace {

// The track of the stacks' slices: above any thread id (< 2^22) and the
// step tracks (2^29 + tid).
constexpr int64_t kStackTrack = int64_t{1} << 30;

// "stack N" slices, one per stack, with its frames as text: what Perfetto
// shows (it reads no stackFrames from JSON); an event's "stack" argument N
// finds its slice through the search box.
void append_stack_slices(std::string& out, const TraceData& t) {
  if (t.stacks.empty()) return;
  const int64_t pid = t.processes.empty() ? 0 : t.processes.front().pid;
  for (const auto& [id, stack] : t.stacks) {
    out += ",\n{\"ph\":\"X\",\"cat\":\"call_stack\",\"name\":\"stack ";
    append_uint(out, id);
    out += '"';
    append_place(out, t.base_time_ns, pid, kStackTrack, t.stacks_ts_ns);
    out += ",\"dur\":0,\"args\":{\"frames\":";
    append_string(out, trace_stack_text(stack));
    out += "}}";
  }
  out += ",\n";
  append_metadata(out, "thread_name", pid, kStackTrack, "name", json_string("Call stacks (\"stack N\" of an event)"));
}

// "stackFrames": the stacks as a tree of frames, outermost at the root, for
// chrome://tracing, which shows an event's "sf" as its stack. Each stack's
// innermost frame has the stack's own id; the frames above are shared.
void append_stack_frames(std::string& out, const TraceData& t) {
  if (t.stacks.empty()) return;
  std::map<std::pair<std::string, std::string>, std::string> nodes;  // (parent, name) → id
  std::string body;
  const auto add = [&](const std::string& id, const std::string& name, const std::string& parent) {
    body += body.empty() ? "\n    " : ",\n    ";
    append_string(body, id);
    body += ": {\"name\": ";
    append_string(body, name);
    if (!parent.empty()) {
      body += ", \"parent\": ";
      append_string(body, parent);
    }
    body += "}";
  };
  for (const auto& [id, stack] : t.stacks) {
    const std::vector<std::string> lines = trace_stack_lines(stack);  // innermost first
    if (lines.empty()) continue;
    std::string parent;
    for (size_t i = lines.size() - 1; i > 0; --i) {
      auto [it, added] = nodes.try_emplace({parent, lines[i]}, "f" + std::to_string(nodes.size() + 1));
      if (added) add(it->second, lines[i], parent);
      parent = it->second;
    }
    add(std::to_string(id), lines.front(), parent);
  }
  out += "  \"stackFrames\": {";
  out += body;
  out += "\n  },\n";
}

}  // namespace

std::string chrome_trace_tail(const TraceData& t) {
  std::string out;
  append_stack_slices(out, t);
  for (size_t i = 0; i < t.processes.size(); ++i) {
    const ProcessInfo& p = t.processes[i];
    if (i != 0) {  // the head has the first one's name
      out += ",\n";
      append_metadata(out, "process_name", p.pid, 0, "name", json_string(p.name));
    }
    out += ",\n";
    append_metadata(out, "process_sort_index", p.pid, 0, "sort_index", std::to_string(p.sort_index));
  }
  for (const ThreadInfo& th : t.threads) {
    out += ",\n";
    append_metadata(out, "thread_name", th.pid, th.tid, "name", json_string(th.name));
    out += ",\n";
    append_metadata(out, "thread_sort_index", th.pid, th.tid, "sort_index", std::to_string(th.sort_index));
  }
  out += "\n  ],\n";
  append_stack_frames(out, t);
  out += "  \"traceName\": ";
  append_string(out, t.trace_name);
  out += "\n}\n";
  return out;
}

const std::string& EventText::name(uint32_t i) {
  static const std::string kUnknown = "\"?\"";
  if (i >= escaped_.size()) {
    if (i >= names_->size()) return kUnknown;
    // Names are appended only: escape the new ones.
    for (size_t k = escaped_.size(); k < names_->size(); ++k) escaped_.push_back(json_string((*names_)[k]));
  }
  return escaped_[i];
}

namespace {

// The events of a long run are written by pointer into a buffer on the
// stack, sized from a bound computed first, then appended at once: the
// same text as the std::string appends of the slow path below (used when
// an event could be longer than the buffer), at a fraction of the cost.
constexpr size_t kFastEventBytes = 4096;

size_t escaped_bound(std::string_view s) { return 6 * s.size(); }  // \u00XX per byte at worst

char* put(char* p, std::string_view s) {
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}
template <typename T>
char* put_number(char* p, T v) {
  return std::to_chars(p, p + 24, v).ptr;
}
char* put_us(char* p, int64_t ns) {
  const uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) *p++ = '-';
  p = put_number(p, mag / 1000);
  const unsigned frac = static_cast<unsigned>(mag % 1000);
  p[0] = '.';
  p[1] = static_cast<char>('0' + frac / 100);
  p[2] = static_cast<char>('0' + frac / 10 % 10);
  p[3] = static_cast<char>('0' + frac % 10);
  return p + 4;
}
// Bytes that JSON escapes, or that need a UTF-8 check: not copied as they are.
struct NotPlain {
  bool byte[256];
  constexpr NotPlain() : byte() {
    for (int c = 0; c < 256; ++c) byte[c] = c < 0x20 || c >= 0x7F || c == '"' || c == '\\';
  }
};
constexpr NotPlain kNotPlain;

// Whether none of 8 bytes is one of kNotPlain's (exact: the usual "has a
// byte less than n" and "has a zero byte" word tricks).
bool plain8(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  const auto has_zero = [](uint64_t x) { return ((x - kOnes) & ~x & kHighs) != 0; };
  if (w & kHighs) return false;                                   // >= 0x80
  if (((w - kOnes * 0x20) & ~w & kHighs) != 0) return false;      // < 0x20
  return !has_zero(w ^ (kOnes * 0x7F)) && !has_zero(w ^ (kOnes * '"')) && !has_zero(w ^ (kOnes * '\\'));
}

char* put_escaped(char* p, std::string_view s) {
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    if (!plain8(w)) break;
  }
  while (i < s.size() && !kNotPlain.byte[static_cast<uint8_t>(s[i])]) ++i;
  p = put(p, s.substr(0, i));
  if (i == s.size()) return p;
  std::string rest;  // anything to escape: the general escaper, for the rest
  append_json_escaped(rest, s.substr(i));
  return put(p, rest);
}

size_t args_bound(const ArgList& args, const std::vector<std::string>& names) {
  size_t n = 2;
  for (const Arg& a : args) {
    n += escaped_bound(a.key) + 4;
    switch (a.type) {
      case Arg::Type::View: n += escaped_bound(a.v) + 2; break;
      case Arg::Type::Dim3: n += 3 * 24 + 4; break;
      case Arg::Type::Name: n += (a.u < names.size() ? names[a.u].size() : 0) + 3; break;
      default: n += 48; break;
    }
  }
  return n;
}

char* put_args(char* p, const ArgList& args, const std::vector<std::string>& names) {
  *p++ = '{';
  bool first = true;
  for (const Arg& a : args) {
    if (!first) *p++ = ',';
    first = false;
    *p++ = '"';
    p = put_escaped(p, a.key);
    p = put(p, "\":");
    switch (a.type) {
      case Arg::Type::Int: p = put_number(p, a.i); break;
      case Arg::Type::UInt: p = put_number(p, a.u); break;
      case Arg::Type::Double: {
        std::string d;
        append_double(d, a.d);
        p = put(p, d);
        break;
      }
      case Arg::Type::View:
        *p++ = '"';
        p = put_escaped(p, a.v);
        *p++ = '"';
        break;
      case Arg::Type::Name:
        p = put(p, a.u < names.size() ? std::string_view(names[a.u]) : std::string_view("\"?\""));
        break;
      case Arg::Type::Hex:
        p = put(p, "\"0x");
        p = std::to_chars(p, p + 24, a.u, 16).ptr;
        *p++ = '"';
        break;
      case Arg::Type::Dim3:
        *p++ = '[';
        p = put_number(p, a.dim[0]);
        *p++ = ',';
        p = put_number(p, a.dim[1]);
        *p++ = ',';
        p = put_number(p, a.dim[2]);
        *p++ = ']';
        break;
    }
  }
  *p++ = '}';
  return p;
}

}  // namespace

void EventText::event(std::string& out, const Event& e) {
  for (const Arg& a : e.args) {
    if (a.type == Arg::Type::Name) name(static_cast<uint32_t>(a.u));  // escaped and kept
  }
  const std::string* shown = e.label.empty() ? &name(e.name) : nullptr;
  const size_t bound = 160 + (shown ? shown->size() : escaped_bound(e.label) + 2) + args_bound(e.args, escaped_);
  if (bound <= kFastEventBytes) {
    char buf[kFastEventBytes];
    char* p = put(buf, ",\n{\"ph\":\"X\",\"cat\":\"");
    p = put(p, category_name(e.cat));
    p = put(p, "\",\"name\":");
    if (shown) {
      p = put(p, *shown);
    } else {
      *p++ = '"';
      p = put_escaped(p, e.label);
      *p++ = '"';
    }
    p = put(p, ",\"pid\":");
    p = put_number(p, e.pid);
    p = put(p, ",\"tid\":");
    p = put_number(p, e.tid);
    p = put(p, ",\"ts\":");
    p = put_us(p, static_cast<int64_t>(e.ts_ns - base_));
    p = put(p, ",\"dur\":");
    p = put_us(p, static_cast<int64_t>(e.dur_ns));
    if (e.stack != 0) {
      p = put(p, ",\"sf\":");
      p = put_number(p, e.stack);
    }
    if (!e.args.empty()) {
      p = put(p, ",\"args\":");
      p = put_args(p, e.args, escaped_);
    }
    *p++ = '}';
    out.append(buf, static_cast<size_t>(p - buf));
    return;
  }
  out += ",\n{\"ph\":\"X\",\"cat\":\"";
  out += category_name(e.cat);
  out += "\",\"name\":";
  if (e.label.empty()) out += name(e.name);
  else append_string(out, e.label);
  append_place(out, base_, e.pid, e.tid, e.ts_ns);
  out += ",\"dur\":";
  append_us_from_ns(out, static_cast<int64_t>(e.dur_ns));
  if (e.stack != 0) {
    out += ",\"sf\":";
    append_uint(out, e.stack);
  }
  if (!e.args.empty()) {
    out += ",\"args\":";
    append_args(out, e.args, &escaped_);
  }
  out += "}";
}

void EventText::flow(std::string& out, const Flow& f) {
  out += f.start ? ",\n{\"ph\":\"s\",\"id\":" : ",\n{\"ph\":\"f\",\"id\":";
  append_uint(out, f.id);
  append_place(out, base_, f.pid, f.tid, f.ts_ns);
  out += f.start ? ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}" : ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}";
}

void EventText::counter(std::string& out, const Counter& c) {
  out += ",\n{\"ph\":\"C\",\"name\":";
  out += name(c.name);
  out += ",\"pid\":";
  append_int(out, c.pid);
  out += ",\"tid\":0,\"ts\":";
  append_ts(out, base_, c.ts_ns);
  out += ",\"args\":{";
  for (size_t i = 0; i < c.values.size(); ++i) {
    if (i) out += ',';
    append_compact_key(out, c.values[i].first);
    append_double(out, c.values[i].second);
  }
  out += "}}";
}

void write_chrome_trace(const TraceData& t, std::ostream& os) {
  std::string out = chrome_trace_head(t);
  EventText text(t.base_time_ns, &t.names);
  const auto flush = [&](bool always) {
    if (!always && out.size() < (1u << 16)) return;  // a trace of millions of events is never one string
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
    out.clear();
  };
  for (const Event& e : t.events) {
    text.event(out, e);
    flush(false);
  }
  for (const Flow& f : t.flows) {
    text.flow(out, f);
    flush(false);
  }
  for (const Counter& c : t.counters) {
    text.counter(out, c);
    flush(false);
  }
  out += chrome_trace_tail(t);
  flush(true);
}

std::string chrome_trace_string(const TraceData& trace) {
  std::ostringstream os;
  write_chrome_trace(trace, os);
  return os.str();
}

}  // namespace nb::formats
