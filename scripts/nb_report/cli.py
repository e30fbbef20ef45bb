"""nbprof report RUN [--json] [--out PATH] [--no-picture]

What a run's device memory did: the peak and the stacks that held it, what
was live at the program's end, and the verdicts (sawtooth, leak,
fragmentation) with the numbers behind them; and one picture of allocated
and reserved bytes over time (PREFIX.memory.png, or --out PATH).

RUN is the output prefix (PREFIX.memory.pickle and PREFIX.trace.json.gz; a
window is PREFIX.w1) or one of the run's files. --json prints the same
facts as JSON instead of text. Exit status 2 when the run cannot be read.
"""
import json
import sys

from . import analysis
from . import inputs
from . import picture
from . import text

USAGE = "usage: nbprof report RUN [--json] [--out PATH] [--no-picture]"


def fail(message):
    print(f"nbprof report: {message}", file=sys.stderr)
    sys.exit(2)


def parse(argv):
    run, as_json, out, draw = None, False, None, True
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        elif a == "--json":
            as_json = True
        elif a == "--no-picture":
            draw = False
        elif a in ("--out", "-o"):
            if i + 1 >= len(argv):
                fail("--out needs a path")
            out = argv[i + 1]
            i += 1
        elif a.startswith("--out="):
            out = a[len("--out="):]
        elif a.startswith("-") and a != "-":
            fail(f"unknown option {a} ({USAGE})")
        elif run is None:
            run = a
        else:
            fail(f"one run at a time ({USAGE})")
        i += 1
    if run is None:
        fail(f"which run? ({USAGE})")
    if out == "":
        fail("--out needs a path")
    return run, as_json, out, draw


def devices_of(run):
    found = set()
    snap = run.snapshot
    if snap:
        for d, trace in enumerate(snap.get("device_traces", [])):
            if trace:
                found.add(d)
        for s in snap.get("segments", []):
            found.add(s.get("device", 0))
    for d in run.curve_devices():
        found.add(d)
    return sorted(found)


def build(run):
    """The report's facts, as the dict --json prints (keys with a leading
    '_' are for the picture and are left out of the JSON)."""
    steps = run.steps()
    program_end = run.program_end()
    stacks = analysis.Stacks()
    notes = []
    if run.trace_path is None:
        notes.append("no trace: no steps, and reserved bytes are those of the snapshot's segments "
                     "(what memory pools keep is in the trace's curve)")
    elif not run.has_nb_run:
        notes.append("this run's trace has no program-end record (nb before program-end marking): "
                     "'live at the end' is the state after the program's teardown")
    if run.snapshot is None:
        notes.append("no memory snapshot: no stacks (NB_STACKS, PREFIX.memory.pickle)")
    devices = []
    snap = run.snapshot or {"device_traces": [], "segments": []}
    for d in devices_of(run):
        traces = snap.get("device_traces", [])
        entries = traces[d] if d < len(traces) else []
        segments = [s for s in snap.get("segments", []) if s.get("device", 0) == d]
        devices.append(analysis.analyse(run, d, entries, segments, stacks, steps, program_end))
    report = {
        "run": run.prefix,
        "files": {"snapshot": run.snapshot_path, "trace": run.trace_path},
        "steps": {"count": len(steps), "first": steps[0][0] if steps else None,
                  "last": steps[-1][0] if steps else None},
        "program_end_us": program_end,
        "notes": notes,
        "devices": devices,
    }
    td = run.teardown()
    if td is not None:
        report["teardown"] = td
    return report


def first_time(report, steps):
    times = [s[1] for s in steps]
    for dev in report["devices"]:
        d = dev["_device"]
        if d.ts:
            times.append(d.ts[0])
        if d.ev_t:
            times.append(d.ev_t[0])
    return min(times) if times else 0.0


def plot_data(report, run, t0):
    """What the picture draws, as plain data (picture.py). Each curve starts
    at the first record with what was allocated before its first point and
    runs on to the end of the last step."""
    steps = [[n, s - t0, e - t0] for n, s, e, _ in run.steps()]
    span = steps[-1][2] if steps else 0.0
    for dev in report["devices"]:
        d = dev["_device"]
        if d.ts:
            span = max(span, d.ts[-1] - t0)
    devs = []
    for dev in report["devices"]:
        d = dev["_device"]
        ts, alloc, reserved = [t - t0 for t in d.ts], list(d.alloc), list(d.reserved)
        if not ts or ts[0] > 0:
            before = d.allocated_at(t0 - 1)
            ts, alloc, reserved = [0.0] + ts, [before] + alloc, [max(before, d.reserved_at(t0 - 1))] + reserved
        if ts[-1] < span:
            ts, alloc, reserved = ts + [span], alloc + alloc[-1:], reserved + reserved[-1:]
        ts, alloc, reserved = picture.thin(ts, alloc, reserved)
        p = dev["peak"]
        oom = [[o["ts_us"] - t0, o["allocated_bytes"], o["request_bytes"]]
               for o in dev["verdicts"]["fragmentation"]["ooms"]]
        devs.append({"device": dev["device"], "ts": ts, "alloc": alloc, "reserved": reserved,
                     "peak": [p["ts_us"] - t0, p["bytes"]] if p.get("ts_us") is not None else None, "ooms": oom})
    scale, unit = (1e6, "s") if span >= 2e6 else (1e3, "ms") if span >= 2e3 else (1.0, "\u00b5s")
    end = report.get("program_end_us")
    return {"title": f"nb: {run.prefix} \u2014 device memory", "devices": devs,
            "steps": steps, "program_end": end - t0 if end is not None else None,
            "time_scale": scale, "time_unit": unit}


def public(obj):
    if isinstance(obj, dict):
        return {k: public(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [public(v) for v in obj]
    return obj


def main(argv=None):
    run_arg, as_json, out, draw = parse(sys.argv[1:] if argv is None else argv)
    try:
        prefix, trace, snapshot = inputs.resolve(run_arg)
        run = inputs.Run(prefix, trace, snapshot)
        report = build(run)
    except inputs.RunError as e:
        fail(str(e))
    t0 = first_time(report, run.steps())
    report["t0_us"] = t0
    if not draw:
        report["picture"] = {"path": None, "skipped": "--no-picture"}
    elif not report["devices"]:
        report["picture"] = {"path": None, "skipped": "no device memory in this run"}
    else:
        path = out or prefix + ".memory.png"
        try:
            why = picture.draw(plot_data(report, run, t0), path)
        except Exception as e:  # noqa: BLE001 - the text report still comes out
            why = f"drawing failed: {e}"
        report["picture"] = {"path": None if why else path, "skipped": why}
    if as_json:
        json.dump(public(report), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(text.render(public(report), t0))
    return 0
