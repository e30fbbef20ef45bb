"""Finding and reading a run's files: the memory snapshot (pickle) and what
the report needs of the Chrome trace.

The trace (PREFIX.trace.json.gz, or .trace.json when written plain) is read
through gzip as a stream. Its own summary, the top-level key "nbRun" (steps,
memory curves, the program's end), comes before "traceEvents", so the trace
is read only up to there: a trace of millions of events is neither loaded
nor read to its end. Where the summary has no steps or memory points (null:
the run had more than it keeps), or a trace has no "nbRun" (an older run),
the events are scanned for memory counters and ProfilerStep spans instead:
slower, same answer.
"""
import codecs
import gzip
import json
import os
import pickle

SUFFIXES = (".trace.json.gz", ".trace.json", ".memory.pickle", ".table.txt", ".memory.png")
TRACE_SUFFIXES = (".trace.json.gz", ".trace.json")  # NB_COMPRESS=0 writes the second
COUNTER = "Device memory (bytes)"


class RunError(Exception):
    """A run that cannot be read; the message is for the user."""


def resolve(run):
    """RUN (a prefix, a window's prefix PREFIX.wN, or one of the run's files)
    -> (prefix, trace path or None, snapshot path or None)."""
    prefix = run
    for suffix in SUFFIXES:
        if run.endswith(suffix) and os.path.isfile(run):
            prefix = run[: -len(suffix)]
            break
    trace = next((prefix + t for t in TRACE_SUFFIXES if os.path.isfile(prefix + t)), None)
    snapshot = prefix + ".memory.pickle"
    snapshot = snapshot if os.path.isfile(snapshot) else None
    if trace is None and snapshot is None:
        windows = []
        n = 1
        while n <= 1000 and (os.path.isfile(f"{prefix}.w{n}.memory.pickle") or
                             any(os.path.isfile(f"{prefix}.w{n}{t}") for t in TRACE_SUFFIXES)):
            windows.append(f"{prefix}.w{n}")
            n += 1
        if windows:
            raise RunError(f"no {prefix}.memory.pickle; this run was recorded in windows: " + ", ".join(windows))
        raise RunError(f"no run at {prefix} (no {prefix}.memory.pickle or {prefix}.trace.json.gz)")
    return prefix, trace, snapshot


def open_trace(path, mode="rb"):
    """A trace file, gzip (.gz) or plain, as a file object."""
    if path.endswith(".gz"):
        return gzip.open(path, mode, encoding="utf-8") if "b" not in mode else gzip.open(path, mode)
    return open(path, mode, encoding="utf-8") if "b" not in mode else open(path, mode)


def read_snapshot(path):
    try:
        with open(path, "rb") as f:
            d = pickle.load(f)
    except Exception as e:  # noqa: BLE001 - any failure is the user's answer
        raise RunError(f"{path}: not a memory snapshot: {e}") from None
    if not isinstance(d, dict) or "device_traces" not in d or "segments" not in d:
        raise RunError(f"{path}: not a memory snapshot (no segments / device_traces)")
    return d


class _Reader:
    """The text of a file, read in growing chunks as a parse needs more."""

    def __init__(self, f):
        self.f = f
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.eof = False
        self.chunk = 1 << 20

    def more(self):
        if self.eof:
            return False
        raw = self.f.read(self.chunk)
        self.chunk = min(self.chunk * 2, 64 << 20)
        if not raw:
            self.eof = True
            self.text += self.decoder.decode(b"", final=True)
            return False
        self.text += self.decoder.decode(raw)
        return True


def _skip_ws(r, pos):
    while True:
        n = len(r.text)
        while pos < n and r.text[pos] in " \t\r\n":
            pos += 1
        if pos < n or not r.more():
            return pos


def read_trace_head(path):
    """The top-level keys of a Chrome trace that come before "traceEvents",
    as a dict, and whether "traceEvents" was reached."""
    decoder = json.JSONDecoder()
    head = {}
    with open_trace(path) as f:
        r = _Reader(f)
        pos = _skip_ws(r, 0)
        if pos >= len(r.text) or r.text[pos] != "{":
            raise RunError(f"{path}: not a JSON trace")
        pos += 1
        while True:
            pos = _skip_ws(r, pos)
            if pos < len(r.text) and r.text[pos] == "}":
                return head, False
            key, pos = _decode_value(decoder, r, pos, path)
            pos = _skip_ws(r, pos)
            if pos >= len(r.text) or r.text[pos] != ":":
                raise RunError(f"{path}: not a JSON trace (at character {pos})")
            pos = _skip_ws(r, pos + 1)
            if key == "traceEvents":
                return head, True
            value, pos = _decode_value(decoder, r, pos, path)
            head[key] = value
            pos = _skip_ws(r, pos)
            if pos < len(r.text) and r.text[pos] == ",":
                pos += 1
            elif pos < len(r.text) and r.text[pos] == "}":
                return head, False
            else:
                raise RunError(f"{path}: not a JSON trace (at character {pos})")


def _decode_value(decoder, r, pos, path):
    # A value that ends where the text read so far ends may go on (a number
    # cut in two): it counts only once something follows it, or at the end.
    while True:
        try:
            value, end = decoder.raw_decode(r.text, pos)
            if end < len(r.text) or r.eof:
                return value, end
        except json.JSONDecodeError as e:
            if r.eof:
                raise RunError(f"{path}: not valid JSON: {e}") from None
        r.more()


def scan_trace_events(path):
    """An older trace (no "nbRun"): its memory counters and ProfilerStep spans,
    as nbRun would give them. nb writes one event per line, so only lines
    that mention them are parsed; a trace laid out otherwise is loaded whole."""
    steps, curves = [], {}
    try:
        with open_trace(path, "rt") as f:
            for line in f:
                if COUNTER not in line and "ProfilerStep#" not in line:
                    continue
                text = line.strip().rstrip(",")
                if not text.startswith("{"):
                    raise ValueError("not one event per line")
                _take_event(json.loads(text), steps, curves)
    except (ValueError, UnicodeDecodeError, OSError, EOFError):
        steps, curves = [], {}
        try:
            with open_trace(path, "rt") as f:
                doc = json.load(f)
        except (ValueError, UnicodeDecodeError, OSError, EOFError) as e:
            raise RunError(f"{path}: not valid JSON: {e}") from None
        for ev in doc.get("traceEvents", []):
            if isinstance(ev, dict):
                _take_event(ev, steps, curves)
    memory = [{"device": d, "points": pts} for d, pts in sorted(curves.items())]
    return {"programEnd": None, "steps": steps, "memory": memory, "teardown": None}


def _take_event(ev, steps, curves):
    name = ev.get("name", "")
    if ev.get("ph") == "C" and name == COUNTER:
        args = ev.get("args", {})
        if "allocated" in args:
            alloc = args["allocated"]
            curves.setdefault(int(ev.get("pid", 0)), []).append(
                [float(ev.get("ts", 0)), alloc, args.get("reserved", alloc)])
    elif ev.get("ph") == "X" and isinstance(name, str) and name.startswith("ProfilerStep#"):
        try:
            number = int(name[len("ProfilerStep#"):])
        except ValueError:
            return
        steps.append([number, float(ev.get("ts", 0)), float(ev.get("dur", 0)), ev.get("tid", 0)])


class Run:
    """What the report reads of a run."""

    def __init__(self, prefix, trace_path, snapshot_path):
        self.prefix = prefix
        self.trace_path = trace_path
        self.snapshot_path = snapshot_path
        self.snapshot = read_snapshot(snapshot_path) if snapshot_path else None
        self.base_us = None       # the trace's timebase, epoch microseconds
        self.device_total = {}    # device -> totalGlobalMem
        self.nb_run = None        # the trace's "nbRun" (or the same, scanned)
        self.has_nb_run = False
        if trace_path:
            head, _ = read_trace_head(trace_path)
            base = head.get("baseTimeNanoseconds")
            if isinstance(base, (int, float)):
                self.base_us = base / 1000.0
            for d in head.get("deviceProperties") or []:
                if isinstance(d, dict) and "id" in d:
                    self.device_total[d["id"]] = d.get("totalGlobalMem")
            if isinstance(head.get("nbRun"), dict):
                self.nb_run = dict(head["nbRun"])
                self.has_nb_run = True
                if self.nb_run.get("steps") is None or self.nb_run.get("memory") is None:
                    # More steps or memory points than the summary keeps: the
                    # events have them all.
                    scanned = scan_trace_events(trace_path)
                    for key in ("steps", "memory"):
                        if self.nb_run.get(key) is None:
                            self.nb_run[key] = scanned[key]
            else:
                self.nb_run = scan_trace_events(trace_path)
        if self.base_us is None:
            # No trace: times count from the snapshot's first entry.
            first = None
            if self.snapshot:
                for trace in self.snapshot.get("device_traces", []):
                    for e in trace[:1]:
                        t = e.get("time_us")
                        if isinstance(t, (int, float)) and (first is None or t < first):
                            first = t
            self.base_us = float(first or 0)

    def steps(self):
        """[(number, start, end, tid)] in the trace's timebase, by start."""
        out = []
        for s in (self.nb_run or {}).get("steps") or []:
            number, ts, dur = int(s[0]), float(s[1]), float(s[2])
            out.append((number, ts, ts + dur, s[3] if len(s) > 3 else 0))
        out.sort(key=lambda s: (s[1], s[0]))
        return out

    def curve(self, device):
        """[(ts, allocated, reserved)] of a device from the trace, or None."""
        for m in (self.nb_run or {}).get("memory") or []:
            if m.get("device") == device:
                return [(float(p[0]), p[1], p[2]) for p in m.get("points", [])]
        return None

    def curve_devices(self):
        return [m.get("device") for m in (self.nb_run or {}).get("memory") or []]

    def program_end(self):
        end = (self.nb_run or {}).get("programEnd")
        return float(end) if isinstance(end, (int, float)) else None

    def teardown(self):
        t = (self.nb_run or {}).get("teardown")
        return t if isinstance(t, dict) else None
