#include "formats/chrome_trace.h"

#include <cmath>
#include <cstdio>
#include <sstream>

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

void append_us_from_ns(std::string& out, int64_t ns) {
  uint64_t mag = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%s%llu.%03llu", ns < 0 ? "-" : "",
                              static_cast<unsigned long long>(mag / 1000),
                              static_cast<unsigned long long>(mag % 1000));
  out.append(buf, static_cast<size_t>(n));
}

namespace {

void append_int(std::string& out, int64_t v) { out += std::to_string(v); }
void append_uint(std::string& out, uint64_t v) { out += std::to_string(v); }

// JSON has no NaN or infinity; a bandwidth of a zero-length copy must not make
// the file unparsable.
void append_double(std::string& out, double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[40];
  // Byte counts arrive as doubles in counters: print whole numbers exactly.
  const bool whole = v == std::floor(v) && std::fabs(v) < 9007199254740992.0;
  const int n = whole ? std::snprintf(buf, sizeof buf, "%.0f", v)
                      : std::snprintf(buf, sizeof buf, "%.9g", v);
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

void append_args(std::string& out, const std::vector<Arg>& args) {
  out += "{";
  bool first = true;
  for (const Arg& a : args) {
    if (!first) out += ", ";
    first = false;
    append_key(out, a.key);
    switch (a.type) {
      case Arg::Type::Int: append_int(out, a.i); break;
      case Arg::Type::UInt: append_uint(out, a.u); break;
      case Arg::Type::Double: append_double(out, a.d); break;
      case Arg::Type::String: append_string(out, a.s); break;
      case Arg::Type::Dim3:
        out += '[';
        append_uint(out, a.dim[0]); out += ", ";
        append_uint(out, a.dim[1]); out += ", ";
        append_uint(out, a.dim[2]);
        out += ']';
        break;
    }
  }
  out += "}";
}

void append_ts(std::string& out, const TraceData& t, uint64_t ts_ns) {
  append_us_from_ns(out, static_cast<int64_t>(ts_ns - t.base_time_ns));
}

// `, "pid": P, "tid": T, "ts": TS` of an event or a flow.
void append_place(std::string& out, const TraceData& t, int64_t pid, int64_t tid, uint64_t ts_ns) {
  out += ", \"pid\": ";
  append_int(out, pid);
  out += ", \"tid\": ";
  append_int(out, tid);
  out += ", \"ts\": ";
  append_ts(out, t, ts_ns);
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
  out += ",\n    \"steps\": [";
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
  out += "],\n    \"memory\": [";
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

// Writes in chunks so that a trace of millions of events never needs one
// string of its full size.
class ChunkedOut {
 public:
  explicit ChunkedOut(std::ostream& os) : os_(os) { buf_.reserve(kChunk + 4096); }
  ~ChunkedOut() { flush(); }
  std::string& buf() { return buf_; }
  void maybe_flush() { if (buf_.size() >= kChunk) flush(); }
  void flush() { os_.write(buf_.data(), static_cast<std::streamsize>(buf_.size())); buf_.clear(); }

 private:
  static constexpr size_t kChunk = 1 << 16;
  std::ostream& os_;
  std::string buf_;
};

}  // namespace

void write_chrome_trace(const TraceData& t, std::ostream& os) {
  ChunkedOut co(os);
  std::string& out = co.buf();

  // Names are escaped once each, not once per event.
  std::vector<std::string> names;
  names.reserve(t.names.size());
  for (const std::string& n : t.names) {
    std::string e = "\"";
    append_json_escaped(e, n);
    e += '"';
    names.push_back(std::move(e));
  }
  const auto name_of = [&](uint32_t i) -> const std::string& {
    static const std::string kUnknown = "\"?\"";
    return i < names.size() ? names[i] : kUnknown;
  };

  out += "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [";
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
  out += "  \"traceEvents\": [";

  bool first = true;
  const auto begin_event = [&] {
    out += first ? "\n  " : ",\n  ";
    first = false;
  };

  // Metadata ("M") event: `what` of (pid, tid) is {key: value}.
  const auto metadata = [&](const char* what, int64_t pid, int64_t tid, const char* key, auto&& value) {
    begin_event();
    out += "{\"name\": \"";
    out += what;
    out += "\", \"ph\": \"M\", \"ts\": 0, \"pid\": ";
    append_int(out, pid);
    out += ", \"tid\": ";
    append_int(out, tid);
    out += ", \"args\": {";
    append_key(out, key);
    value();
    out += "}}";
  };
  for (const ProcessInfo& p : t.processes) {
    metadata("process_name", p.pid, 0, "name", [&] { append_string(out, p.name); });
    metadata("process_sort_index", p.pid, 0, "sort_index", [&] { append_int(out, p.sort_index); });
  }
  for (const ThreadInfo& th : t.threads) {
    metadata("thread_name", th.pid, th.tid, "name", [&] { append_string(out, th.name); });
    metadata("thread_sort_index", th.pid, th.tid, "sort_index", [&] { append_int(out, th.sort_index); });
  }

  for (const Event& e : t.events) {
    begin_event();
    out += "{\"ph\": \"X\", \"cat\": \"";
    out += category_name(e.cat);
    out += "\", \"name\": ";
    out += name_of(e.name);
    append_place(out, t, e.pid, e.tid, e.ts_ns);
    out += ", \"dur\": ";
    append_us_from_ns(out, static_cast<int64_t>(e.dur_ns));
    if (!e.args.empty()) {
      out += ", \"args\": ";
      append_args(out, e.args);
    }
    out += "}";
    co.maybe_flush();
  }

  for (const Flow& f : t.flows) {
    begin_event();
    out += f.start ? "{\"ph\": \"s\", \"id\": " : "{\"ph\": \"f\", \"id\": ";
    append_uint(out, f.id);
    append_place(out, t, f.pid, f.tid, f.ts_ns);
    out += f.start ? ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}"
                   : ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}";
    co.maybe_flush();
  }

  for (const Counter& c : t.counters) {
    begin_event();
    out += "{\"ph\": \"C\", \"name\": ";
    out += name_of(c.name);
    out += ", \"pid\": ";
    append_int(out, c.pid);
    out += ", \"tid\": 0";
    out += ", \"ts\": ";
    append_ts(out, t, c.ts_ns);
    out += ", \"args\": {";
    for (size_t i = 0; i < c.values.size(); ++i) {
      if (i) out += ", ";
      append_key(out, c.values[i].first);
      append_double(out, c.values[i].second);
    }
    out += "}}";
    co.maybe_flush();
  }

  out += first ? "],\n" : "\n  ],\n";
  out += "  \"traceName\": ";
  append_string(out, t.trace_name);
  out += "\n}\n";
}

std::string chrome_trace_string(const TraceData& trace) {
  std::ostringstream os;
  write_chrome_trace(trace, os);
  return os.str();
}

}  // namespace nb::formats
