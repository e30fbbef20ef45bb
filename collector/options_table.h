// The one table of NB_* variables: name, type, default, accepted range, help.
// The shim reads them once at start-up (options.cpp), nbprof derives its
// command-line flags and --help from the same table (via `nb-options`), and
// the README's table is checked against it by a test. Add a variable here and
// nowhere else.
//
// NB_OPTION(field, NAME, Type, default, min, max, help)
//   Type: String | Bool | UInt | LogLevel    (min/max apply to UInt)
// clang-format off
#define NB_OPTIONS(NB_OPTION)                                                               \
  NB_OPTION(out, NB_OUT, String, "nb-%n-%p", 0, 0,                                          \
    "Output prefix; %p = pid, %n = program name, %% = %. Relative to the starting directory. " \
    "Files: <prefix>.trace.json, <prefix>.memory.pickle, <prefix>.table.txt")                \
  NB_OPTION(log, NB_LOG, LogLevel, "warn", 0, 0,                                             \
    "Shim log level on stderr: trace, debug, info, warn, error, off")                       \
  NB_OPTION(enable, NB_ENABLE, Bool, "1", 0, 0,                                              \
    "0 = hooks pass straight through and nothing is recorded")                              \
  NB_OPTION(mem_max_entries, NB_MEM_MAX_ENTRIES, UInt, "200000", 1, 100000000,               \
    "Memory history ring: newest entries kept in the snapshot's device_traces")             \
  NB_OPTION(ring_records, NB_RING_RECORDS, UInt, "16384", 64, 16777216,                      \
    "Records per thread ring (rounded up to a power of two; 128 bytes each)")               \
  NB_OPTION(trace_max_events, NB_TRACE_MAX_EVENTS, UInt, "1000000", 0, 1000000000,           \
    "Host calls kept for the timeline, 128 bytes each (later ones still count in the table)") \
  NB_OPTION(print_table, NB_PRINT_TABLE, Bool, "1", 0, 0,                                    \
    "Print the ranking table to stderr when recording ends")                                \
  NB_OPTION(table_rows, NB_TABLE_ROWS, UInt, "12", 0, 100000,                               \
    "Rows of the ranking table printed to stderr (0 = all; the file always has all)")       \
  NB_OPTION(overwrite, NB_OVERWRITE, Bool, "0", 0, 0,                                        \
    "Overwrite existing output files (default: keep them and warn)")
// clang-format on
