// formats/chrome_trace.h with names, strings and numbers from the input (one
// field each, split at the first byte; see fuzz_support.h). Field 0 is the
// trace's name, field 1 also gives the base time; every field is an event
// name, an event with one argument of each type, a process, a thread, a
// device, a top-level key, a flow, a counter, a row and a note of the
// ranking table ("nbTable").
// - the whole file parses as JSON (nlohmann::json, which rejects invalid
//   UTF-8, raw control characters, NaN and lone surrogates);
// - every name and string comes back as the input with bad bytes replaced;
// - integers come back exactly, doubles within the 9 digits written (non-finite
//   ones as 0), timestamps exactly to the nanosecond (append_us_from_ns);
// - the ranking table read back from "nbTable" formats to the same text as
//   the table written (what `nbprof stats` relies on).
#include <cmath>
#include <map>
#include <vector>
#include <nlohmann/json.hpp>

#include "formats/chrome_trace.h"
#include "formats/ranking_table.h"
#include "fuzz/fuzz_support.h"

using namespace nb::formats;
using nbfuzz::shown;
using json = nlohmann::json;

namespace {

// "-12.345" back to -12345: exactly the grammar append_us_from_ns promises.
bool ns_from_us_text(const std::string& s, int64_t& ns) {
  size_t i = 0;
  const bool neg = !s.empty() && s[0] == '-';
  if (neg) ++i;
  unsigned __int128 v = 0;
  size_t digits = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) v = v * 10 + static_cast<unsigned>(s[i] - '0');
  if (digits == 0 || i + 4 != s.size() || s[i] != '.') return false;
  for (++i; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + static_cast<unsigned>(s[i] - '0');
  }
  if (v > (neg ? static_cast<unsigned __int128>(INT64_MAX) + 1 : static_cast<unsigned __int128>(INT64_MAX))) {
    return false;
  }
  ns = neg ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : static_cast<int64_t>(v);
  return true;
}

void check_us(int64_t ns) {
  std::string text;
  append_us_from_ns(text, ns);
  int64_t back = 0;
  NB_FUZZ_CHECK(ns_from_us_text(text, back) && back == ns, std::to_string(ns) + " ns printed as " + text);
}

void check_double(const json& got, double v, const std::string& where) {
  NB_FUZZ_CHECK(got.is_number(), where + " is not a number: " + got.dump());
  const double d = got.get<double>();
  if (!std::isfinite(v)) {
    NB_FUZZ_CHECK(d == 0, where + ": non-finite written as " + got.dump());
  } else if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    NB_FUZZ_CHECK(d == v, where + ": whole number " + std::to_string(v) + " written as " + got.dump());
  } else {
    NB_FUZZ_CHECK(std::fabs(d - v) <= std::fabs(v) * 1e-8, where + ": " + std::to_string(v) + " written as " + got.dump());
  }
}

std::string c_string(const std::string& s) { return s.substr(0, s.find('\0')); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> f = nbfuzz::split_fields(data, size);
  const size_t n = f.size();
  static const char* const kKeys[] = {"a", "b\"\\\n", "\xff"};

  TraceData t;
  t.trace_name = n > 0 ? f[0] : "";
  t.base_time_ns = n > 1 ? nbfuzz::number_u64(f[1]) : 0;
  std::map<std::string, int64_t> top;  // what the top-level keys read back as (the last one wins)
  for (size_t i = 0; i < n; ++i) {
    const std::string& s = f[i];
    const int64_t si = nbfuzz::number_s64(s);
    const uint64_t ui = nbfuzz::number_u64(s);
    const double d = nbfuzz::number_double(s);
    check_us(si);
    t.names.push_back(s);
    Event e;
    e.name = static_cast<uint32_t>(i % 3 == 2 ? n + i : i);  // every third one out of range: "?"
    e.cat = static_cast<Category>(i % 8);
    e.pid = si;
    e.tid = static_cast<int64_t>(ui >> 1);
    e.ts_ns = ui;
    e.dur_ns = ui >> (i % 64);
    e.args = {Arg::view("s", s), Arg::integer("i", si), Arg::uinteger("u", ui), Arg::real("d", d),
              Arg::dim3("grid", static_cast<uint32_t>(ui), static_cast<uint32_t>(si), UINT32_MAX),
              Arg::view(kKeys[i % 3], s)};
    t.events.push_back(std::move(e));
    t.processes.push_back({si, s, si ^ 1});
    t.threads.push_back({si, static_cast<int64_t>(ui), s, si});
    if (i < 4) {
      DeviceProperties dev;
      dev.id = static_cast<int>(si);
      dev.name = s;
      dev.total_global_mem = ui;
      t.devices.push_back(dev);
    }
    t.top_level_ints.emplace_back(s, si);
    top[nbfuzz::ref_repaired(c_string(s))] = si;
    t.flows.push_back({ui, si, si, ui, i % 2 == 0});
    t.counters.push_back({static_cast<uint32_t>(i), si, ui, {{"allocated", d}, {kKeys[i % 3], -d}}});
    t.table.rows.push_back({s, ui, ui / 2, ui / 4, ui, ui % 7, i % 2 == 0, i % 3 == 0, ui / 3});
    t.table.footer.notes.push_back(s);
  }
  t.table.options.title = t.trace_name;
  t.table.options.sort = static_cast<SortKey>(t.base_time_ns % 4);
  t.table.options.max_rows = n / 2;
  t.table.footer.records = t.base_time_ns;

  const std::string text = chrome_trace_string(t);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const std::exception& e) {
    NB_FUZZ_CHECK(false, std::string("not JSON: ") + e.what() + "\n" + shown(text, 2000));
  }

  NB_FUZZ_CHECK(doc.is_object(), "top level is not an object");
  NB_FUZZ_CHECK(doc["traceName"] == nbfuzz::ref_repaired(t.trace_name), "traceName " + doc["traceName"].dump());
  for (const auto& [key, value] : top) {
    static const char* const kOwn[] = {"schemaVersion", "deviceProperties", "displayTimeUnit",
                                       "baseTimeNanoseconds", "nbTable", "traceEvents", "traceName"};
    bool own = false;
    for (const char* k : kOwn) own |= key == k;
    if (!own) NB_FUZZ_CHECK(doc[key] == value, "top-level " + shown(key) + " = " + doc[key].dump());
  }
  const json& devices = doc["deviceProperties"];
  if (!top.count("deviceProperties")) {
    NB_FUZZ_CHECK(devices.is_array() && devices.size() == t.devices.size(), "deviceProperties");
    for (size_t i = 0; i < t.devices.size(); ++i) {
      NB_FUZZ_CHECK(devices[i]["name"] == nbfuzz::ref_repaired(t.devices[i].name), "device name");
      NB_FUZZ_CHECK(devices[i]["totalGlobalMem"] == t.devices[i].total_global_mem, "totalGlobalMem");
    }
  }

  if (!top.count("nbTable")) {
    const json& table = doc["nbTable"];
    RankingTable back;
    back.options.title = table["title"].get<std::string>();
    NB_FUZZ_CHECK(sort_key_from_name(table["sort"].get<std::string>(), back.options.sort), "nbTable sort");
    back.options.max_rows = table["printedRows"].get<size_t>();
    for (const json& r : table["rows"]) {
      back.rows.push_back({r["name"].get<std::string>(), r["calls"].get<uint64_t>(), r["hostTotalNs"].get<uint64_t>(),
                           r["hostMinNs"].get<uint64_t>(), r["hostMaxNs"].get<uint64_t>(), r["errors"].get<uint64_t>(),
                           r["hasHost"].get<bool>(), r["hasDevice"].get<bool>(), r["deviceTotalNs"].get<uint64_t>()});
    }
    back.footer.records = table["footer"]["records"].get<uint64_t>();
    back.footer.dropped = table["footer"]["dropped"].get<uint64_t>();
    for (const json& note : table["footer"]["notes"]) back.footer.notes.push_back(note.get<std::string>());
    const std::string written = format_ranking_table(t.table.rows, t.table.options, t.table.footer);
    const std::string read = format_ranking_table(back.rows, back.options, back.footer);
    NB_FUZZ_CHECK(written.size() == read.size() && written == read, "nbTable read back formats differently:\n" +
                                                                     shown(written, 2000) + "\n" + shown(read, 2000));
  }

  // The trace is written in pieces (head, events, tail: chrome_trace.h), so
  // metadata, events, flows and counters are found by kind; within a kind
  // they keep the order they were given in.
  const json& events = doc["traceEvents"];
  NB_FUZZ_CHECK(events.is_array(), "traceEvents is an array");
  std::vector<const json*> process_names, process_sorts, thread_names, thread_sorts, xs, flows, counters;
  for (const json& e : events) {
    const std::string ph = e["ph"].get<std::string>();
    if (ph == "M") {
      const std::string what = e["name"].get<std::string>();
      if (what == "process_name") process_names.push_back(&e);
      else if (what == "process_sort_index") process_sorts.push_back(&e);
      else if (what == "thread_name") thread_names.push_back(&e);
      else if (what == "thread_sort_index") thread_sorts.push_back(&e);
      else NB_FUZZ_CHECK(false, "unknown metadata " + e.dump());
    } else if (ph == "X") {
      xs.push_back(&e);
    } else if (ph == "s" || ph == "f") {
      flows.push_back(&e);
    } else if (ph == "C") {
      counters.push_back(&e);
    } else {
      NB_FUZZ_CHECK(false, "unknown event " + e.dump());
    }
  }
  // With no process at all, pid 0's name opens the array.
  NB_FUZZ_CHECK(process_names.size() == (n ? n : 1) && process_sorts.size() == n && thread_names.size() == n &&
                    thread_sorts.size() == n && xs.size() == n && flows.size() == n && counters.size() == n,
                "traceEvents count");
  for (size_t i = 0; i < n; ++i) {
    NB_FUZZ_CHECK((*process_names[i])["args"]["name"] == nbfuzz::ref_repaired(f[i]), "process name " + process_names[i]->dump());
    NB_FUZZ_CHECK((*process_sorts[i])["args"]["sort_index"] == t.processes[i].sort_index, "process sort index");
    NB_FUZZ_CHECK((*thread_names[i])["args"]["name"] == nbfuzz::ref_repaired(f[i]), "thread name " + thread_names[i]->dump());
    NB_FUZZ_CHECK((*thread_names[i])["tid"] == static_cast<int64_t>(nbfuzz::number_u64(f[i])), "thread tid");
  }
  for (size_t i = 0; i < n; ++i) {
    const Event& e = t.events[i];
    const json& j = *xs[i];
    const std::string where = "event " + std::to_string(i);
    NB_FUZZ_CHECK(j["ph"] == "X" && j["cat"] == category_name(e.cat), where);
    NB_FUZZ_CHECK(j["name"] == (e.name < n ? nbfuzz::ref_repaired(f[e.name]) : "?"), where + " name " + j["name"].dump());
    NB_FUZZ_CHECK(j["pid"] == e.pid && j["tid"] == e.tid, where + " pid/tid");
    const json& a = j["args"];
    NB_FUZZ_CHECK(a["s"] == nbfuzz::ref_repaired(f[i]), where + " string arg " + a["s"].dump());
    NB_FUZZ_CHECK(a["i"] == e.args[1].i && a["u"] == e.args[2].u, where + " integer args " + a.dump());
    check_double(a["d"], e.args[3].d, where + " double arg");
    NB_FUZZ_CHECK(a["grid"] == json::array({e.args[4].dim[0], e.args[4].dim[1], e.args[4].dim[2]}), where + " dim3");
    NB_FUZZ_CHECK(a[nbfuzz::ref_repaired(kKeys[i % 3])] == nbfuzz::ref_repaired(f[i]), where + " escaped key");
  }
  for (size_t i = 0; i < n; ++i) {
    NB_FUZZ_CHECK((*flows[i])["id"] == t.flows[i].id && (*flows[i])["ph"] == (i % 2 == 0 ? "s" : "f"), "flow");
  }
  for (size_t i = 0; i < n; ++i) {
    const json& j = *counters[i];
    NB_FUZZ_CHECK(j["ph"] == "C" && j["name"] == nbfuzz::ref_repaired(f[i]), "counter " + j.dump());
    check_double(j["args"]["allocated"], t.counters[i].values[0].second, "counter value");
    check_double(j["args"][nbfuzz::ref_repaired(kKeys[i % 3])], t.counters[i].values[1].second, "counter value");
  }
  return 0;
}
