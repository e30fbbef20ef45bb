// The one table of NB_* variables: name, type, default, accepted values, help.
// The shim reads them once at start-up (options.cpp), nbprof derives its
// command-line flags and --help from the same table (via `nb-options`), and
// the README's table is checked against it by a test. Add a variable here and
// nowhere else.
//
// NB_OPTION(field, NAME, Type, default, min, max, Enum, help)
//   Type: String (non-empty) | Path (may be empty) | Bool | UInt |
//         OptUInt (an integer or empty) | Duration | LogLevel |
//         Step (an NB_STEP marker, core/step_marker.h) | Choice
//   min/max apply to UInt and OptUInt. A Choice names its Enum, whose values are listed
//   by NB_CHOICES_<Enum>(X) as X(Enumerator, "text"): options.h makes the
//   enum class and its parser from that list.
// clang-format off
#define NB_CHOICES_CuptiJoin(X) X(Order, "order") X(Callback, "callback") X(None, "none")
#define NB_CHOICES_StackKinds(X) X(None, "none") X(Memory, "memory") X(Launch, "launch") X(All, "all")
#define NB_CHOICES_Unwinder(X) X(Nb, "nb") X(Libunwind, "libunwind")
#define NB_CHOICES_TableSort(X) X(Device, "device") X(Host, "host") X(Calls, "calls") X(Name, "name")
#define NB_CHOICES_Trigger(X) X(None, "none") X(Signal, "signal")
#define NB_CHOICE_ENUMS(X) X(CuptiJoin) X(StackKinds) X(Unwinder) X(TableSort) X(Trigger)

#define NB_OPTIONS(NB_OPTION)                                                               \
  NB_OPTION(out, NB_OUT, String, "nb-%n-%p", 0, 0, ,                                      \
    "Output prefix; %p = pid, %n = program name (a Python script's or module's name), "    \
    "%r = rank, %l = local rank (0 without a launcher), %h = short host name, %q{VAR} = "  \
    "environment variable VAR, %% = %. Unset: nb-%n-%p, or nb-%n-r%r-%p when a launcher " \
    "gives a rank. Relative to the starting directory; ending in / = a directory, with "  \
    "the default name inside. Files: <prefix>.trace.json.gz, <prefix>.memory.pickle, "    \
    "<prefix>.table.txt")                                                                   \
  NB_OPTION(rank, NB_RANK, OptUInt, "", 0, 1000000000, ,                                 \
    "This process's rank (%r, the trace's distributedInfo); empty = the launcher's "      \
    "(torchrun RANK, Open MPI OMPI_COMM_WORLD_RANK, PMI_RANK, Slurm SLURM_PROCID, in "    \
    "that order)")                                                                          \
  NB_OPTION(log, NB_LOG, LogLevel, "warn", 0, 0, ,                                         \
    "Shim log level on stderr: trace, debug, info, warn, error, off")                       \
  NB_OPTION(enable, NB_ENABLE, Bool, "1", 0, 0, ,                                          \
    "0 = hooks pass straight through and nothing is recorded")                              \
  NB_OPTION(device, NB_DEVICE, Bool, "1", 0, 0, ,                                          \
    "Record device work (kernels, copies, sets) through CUPTI; 0 = host calls only")        \
  NB_OPTION(cupti_lib, NB_CUPTI_LIB, Path, "", 0, 0, ,                                     \
    "libcupti to load if none is loaded already (default: the soname, then the toolkit's "  \
    "and the Python wheel's usual places)")                                                 \
  NB_OPTION(cupti_join, NB_CUPTI_JOIN, Choice, "order", 0, 0, CuptiJoin,         \
    "How device work is tied to its host call: order (CUPTI's correlation ids follow the " \
    "order of the calls; no CUPTI work per call), callback (a CUPTI callback on each "     \
    "launch/copy/set call: also exact, costs about 1 us a call), none (no arrows)")        \
  NB_OPTION(cupti_buffers_mb, NB_CUPTI_BUFFERS_MB, UInt, "128", 8, 4096, ,                 \
    "Most memory for CUPTI activity buffers (1 MiB each); beyond it records are dropped "  \
    "and counted")                                                                          \
  NB_OPTION(cupti_flush_ms, NB_CUPTI_FLUSH_MS, UInt, "250", 0, 600000, ,                  \
    "How often partly filled CUPTI buffers are collected while recording, in ms (0 = only " \
    "when a buffer fills and at the end)")                                                  \
  NB_OPTION(stacks, NB_STACKS, Choice, "memory", 0, 0, StackKinds,             \
    "Which calls get their native + Python stack: none, memory (allocations, frees, "     \
    "mappings), launch (kernel and graph launches), all (every recorded call)")           \
  NB_OPTION(stack_depth, NB_STACK_DEPTH, UInt, "64", 1, 256, ,                             \
    "Most native frames kept per stack (and most Python frames)")                          \
  NB_OPTION(unwind, NB_UNWIND, Choice, "nb", 0, 0, Unwinder,                           \
    "How native stacks are read: nb (nb's own unwinder, from the modules' .eh_frame, with " \
    "a small per-thread cache; a stack it cannot read goes to libunwind, counted in the "  \
    "footer) or libunwind (always)")                                                        \
  NB_OPTION(torch_allocs, NB_TORCH_ALLOCS, Bool, "0", 0, 0, ,                              \
    "1 = add backend:cudaMallocAsync to PYTORCH_CUDA_ALLOC_CONF at start-up, so each "     \
    "PyTorch tensor allocation and free is a CUDA call nb sees (changes the allocator)")    \
  NB_OPTION(mem_max_entries, NB_MEM_MAX_ENTRIES, UInt, "1000000", 1, 100000000, ,          \
    "Memory history ring: newest entries kept in the snapshot's device_traces (about 20 bytes each)") \
  NB_OPTION(ring_records, NB_RING_RECORDS, UInt, "16384", 64, 16777216, ,                  \
    "Records per thread ring (rounded up to a power of two; 128 bytes each)")               \
  NB_OPTION(trace_max_events, NB_TRACE_MAX_EVENTS, UInt, "0", 0, 1000000000000, ,          \
    "Most host calls in the timeline, 0 = all (the trace streams to disk as the run goes; " \
    "calls past the limit still count in the table)")                                       \
  NB_OPTION(compress, NB_COMPRESS, UInt, "9", 0, 9, ,                                        \
    "The trace's gzip level, 1 (fastest) to 9, while events come slower than 8 MB of text "  \
    "a second (level 5 above); 0 = plain JSON, PREFIX.trace.json instead of "               \
    "PREFIX.trace.json.gz")                                                                 \
  NB_OPTION(keep, NB_KEEP, Duration, "0", 0, 0, ,                                            \
    "Flight recorder: keep only the last DURATION (e.g. 30s, 5m) of trace and memory "      \
    "history, written at exit, on a terminating signal, or on each SIGUSR2 with "           \
    "NB_TRIGGER=signal; 0 = the whole run")                                                 \
  NB_OPTION(print_table, NB_PRINT_TABLE, Bool, "1", 0, 0, ,                                \
    "Print the ranking table to stderr when recording ends")                                \
  NB_OPTION(table_sort, NB_TABLE_SORT, Choice, "device", 0, 0, TableSort,     \
    "Ranking table order: self device time, self host time, calls, or name")               \
  NB_OPTION(table_rows, NB_TABLE_ROWS, UInt, "12", 0, 100000, ,                            \
    "Rows of the ranking table printed to stderr (0 = all; the file always has all)")       \
  NB_OPTION(overwrite, NB_OVERWRITE, Bool, "0", 0, 0, ,                                    \
    "Overwrite existing output files (default: keep them and warn)")                        \
  NB_OPTION(step, NB_STEP, Step, "", 0, 0, ,                                                \
    "What ends a step: kernel:REGEX, nvtx:NAME, sync, launches:N, time:DURATION, "          \
    "profiler-api (cudaProfilerStart/Stop bound the active part); empty = sync when a "      \
    "schedule is set")                                                                      \
  NB_OPTION(skip_first, NB_SKIP_FIRST, UInt, "0", 0, 1000000000, ,                         \
    "Steps ignored before the first wait")                                                  \
  NB_OPTION(wait, NB_WAIT, UInt, "0", 0, 1000000000, ,                                     \
    "Steps ignored at the start of each cycle")                                             \
  NB_OPTION(warmup, NB_WARMUP, UInt, "0", 0, 1000000000, ,                                 \
    "Steps recorded and thrown away after the wait")                                        \
  NB_OPTION(active, NB_ACTIVE, UInt, "0", 0, 1000000000, ,                                 \
    "Steps kept per window (0 = no schedule: one window over the whole run); each window "  \
    "is written as <prefix>.w<N>.*")                                                        \
  NB_OPTION(repeat, NB_REPEAT, UInt, "1", 0, 1000000000, ,                                 \
    "Windows to record (0 = cycle until the program exits)")                                \
  NB_OPTION(trigger, NB_TRIGGER, Choice, "none", 0, 0, Trigger,                         \
    "signal = dormant (hooks pass straight through) until SIGUSR2 arms the schedule; "      \
    "armed again by the next SIGUSR2 once the window is written")                             \
  NB_OPTION(census, NB_CENSUS, Bool, "0", 0, 0, ,                                          \
    "Also write <prefix>.steps.txt and print it: kernels and NVTX ranges that recur like "  \
    "steps, ranked, with the NB_STEP value for each (what nbprof steps runs)")
// clang-format on
