"""nb over a long run, on the fake CUDA driver (test/fake_cuda): nb-demo for
many iterations or seconds, flat out or at a steady call rate, bare and
under nb; what nb adds to its memory over time and to its exit (where nb
writes its files), and whether those files hold every call."""
import collections
import os
import shutil
import subprocess
import threading
import time

from . import trace_stream
from .footer import dropped
from .registry import option, scenario

# nb-demo's counts and nb's table rows: cuMemAlloc is cuMemAlloc_v2 there.
COUNTED = ("cuLaunchKernel", "cuMemAlloc", "cuMemFree")
MIB = 1024.0  # KiB in a MiB: /proc, time and ru_maxrss count KiB
TIME = "/usr/bin/time"


def proc_status(pid):
    """VmRSS and VmHWM (KiB) of a running process, or None once it is gone
    (a process that has exited but is not yet reaped has neither)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if line.startswith(("VmRSS:", "VmHWM:")))
    except OSError:
        return None
    if "VmRSS" not in fields:
        return None
    return {k: int(v.split()[0]) for k, v in fields.items()}


def child_of(pid):
    """The first child of a running process, or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            words = f.read().split()
    except OSError:
        return None
    return int(words[0]) if words else None


def measured_run(ctx, cmd, env, tag, sample_s, timeout):
    """Runs cmd with env, its output in OUT/work/<tag>.log, while a thread
    samples its VmRSS every sample_s; the main thread waits in wait4, so that
    the end is stamped when the process is reaped, not at the next sample.
    The peak is /usr/bin/time -v's "Maximum resident set size": a forked
    child's ru_maxrss counts its parent's resident memory at the fork, and
    time's is about 2 MB where this Python's is tens of MB, more than bare
    nb-demo's peak. env reaches the program through /usr/bin/env, so that
    the shim is not preloaded into time. Without /usr/bin/time, wait4's
    ru_maxrss, which then includes this Python's RSS. Returns a dict, or
    None with --dry-run."""
    env = {k: str(v) for k, v in env.items()}
    timed = os.path.exists(TIME)
    time_out = ctx.path(tag + ".time")
    if timed:
        argv = [TIME, "-v", "-o", time_out, shutil.which("env") or "/usr/bin/env",
                *(f"{k}={v}" for k, v in env.items()), *map(str, cmd)]
        shown, child_env = ctx.shown(argv, {}), os.environ
    else:
        argv = [str(c) for c in cmd]
        shown, child_env = ctx.shown(argv, env), dict(os.environ, **env)
    if ctx.dry:
        print("would run:", shown)
        return None
    log = ctx.path(tag + ".log")
    with open(log, "w") as f:
        f.write(f"$ {shown}\n")
        f.flush()
        started = time.monotonic()
        p = subprocess.Popen(argv, env=child_env, stdout=f, stderr=subprocess.STDOUT)
    samples = []  # (seconds since start, VmRSS KiB, VmHWM KiB)
    done = threading.Event()

    def sample():
        # The first sample after one interval: at the start there is only
        # the loader.
        while not done.wait(sample_s):
            pid = child_of(p.pid) if timed else p.pid  # nb-demo is time's child
            s = proc_status(pid) if pid else None
            if s:
                samples.append((time.monotonic() - started, s["VmRSS"], s.get("VmHWM", 0)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    killed = []

    def kill():
        killed.append(timeout)
        pid = child_of(p.pid) if timed else None
        os.kill(pid or p.pid, 9)

    killer = threading.Timer(timeout, kill)
    killer.start()
    _, status, usage = os.wait4(p.pid, 0)
    ended_ns = time.monotonic_ns()  # CLOCK_MONOTONIC, the clock of nb-demo's stamp
    killer.cancel()
    done.set()
    sampler.join()
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    with open(log) as f:
        text = f.read()
    with open(log, "a") as f:
        f.write(f"[exit {p.returncode}]\n" + (f"[killed after {timeout:.0f} s]\n" if killed else ""))
    peak, source = usage.ru_maxrss, "wait4, with this Python's RSS"
    if timed:
        peak, source = None, "/usr/bin/time"
        try:
            with open(time_out) as f:
                for line in f:
                    if "Maximum resident set size" in line:
                        peak = int(line.rsplit(":", 1)[1])
        except (OSError, ValueError):
            pass
    run = {"rc": p.returncode, "killed": bool(killed), "samples": samples, "peak_kib": peak, "peak_source": source,
           "process_s": ended_ns / 1e9 - started, "calls": {}, "text": text}
    for line in text.splitlines():
        w = line.replace(",", " ").replace("(", " ").replace(")", " ").split()
        if line.startswith("nb-demo: main returns at "):
            run["exit_delay_s"] = (ended_ns - int(w[-1])) / 1e9
        elif line.startswith("nb-demo: ") and "hooked calls" in line:
            run["iterations"], run["hooked"] = int(w[1]), int(w[3])
            run["loop_s"] = float(w[w.index("loop") + 1])
            run["calls"] = {name: int(w[w.index(name) + 1]) for name in COUNTED if name in w}
    return run


def trace_account(path):
    """One pass over a trace: events by ph/cat, the span of its X events,
    and its other top-level keys (nbTable)."""
    by_kind = collections.Counter()
    span = [None, None]

    def event(e):
        by_kind[(e.get("ph"), e.get("cat"))] += 1
        if e.get("ph") == "X" and "ts" in e:
            ts = float(e["ts"])
            end = ts + float(e.get("dur", 0))
            span[0] = ts if span[0] is None else min(span[0], ts)
            span[1] = end if span[1] is None else max(span[1], end)

    started = time.monotonic()
    top = trace_stream.read(path, event)
    return {"by_kind": by_kind, "span_s": (span[1] - span[0]) / 1e6 if span[0] is not None else None,
            "top": top, "read_s": time.monotonic() - started}


def table_calls(table, name):
    """The calls of `name` in nbTable's rows (cuMemAlloc's row is
    cuMemAlloc_v2), or None without such a row."""
    rows = [r for r in table.get("rows", []) if r.get("name") == name or r.get("name", "").startswith(name + "_v")]
    return sum(r.get("calls", 0) for r in rows) if rows else None


def size(n):
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0


def say_files(ctx, prefix, demo_calls, keep):
    """nb's files: sizes; the trace read once (valid JSON, events, span,
    nbTable's drops and counts); the table file's drops."""
    folder, base = os.path.split(prefix)
    names = sorted(n for n in os.listdir(folder) if n.startswith(base + "."))
    ctx.say("nb's files: " + (", ".join(f"{n} {size(os.path.getsize(os.path.join(folder, n)))}" for n in names)
                              or "none"))
    traces = [n for n in names if n in (base + ".trace.json.gz", base + ".trace.json")]
    table_txt = dropped(prefix + ".table.txt")
    for name in traces:
        try:
            t = trace_account(os.path.join(folder, name))
        except (OSError, ValueError, EOFError) as e:
            ctx.say(f"FAIL {name} does not load: {e}")
            continue
        kinds = sorted(t["by_kind"].items(), key=lambda kv: -kv[1])
        ctx.say(f"{name} loads (read in {t['read_s']:.1f} s): {sum(t['by_kind'].values())} events: "
                + ", ".join(f"{ph}/{cat or '-'} {n}" for (ph, cat), n in kinds))
        if t["span_s"] is not None:
            ctx.say(f"  X events span {t['span_s']:.3f} s" + (f" (NB_KEEP={keep})" if keep else ""))
        table = t["top"].get("nbTable")
        if not isinstance(table, dict):
            ctx.say("  no nbTable in the trace")
            continue
        footer = table.get("footer", {})
        ctx.say(f"  records dropped, host and device: {table_txt if table_txt is not None else 'no table file'} "
                f"(table file); host calls: {footer.get('dropped')} (nbTable)")
        for note in footer.get("notes", []):
            if "left out" in note or "dropped" in note:  # counted in the table, missing from the timeline
                ctx.say(f"  nbTable: {note}")
        words = []
        for api in COUNTED:
            got, want = table_calls(table, api), demo_calls.get(api)
            if got is None or want is None:
                words.append(f"{api} {'no row' if got is None else got} (nb-demo: {want})")
            else:
                words.append(f"{api} {got} of {want} " + ("exact" if got == want else f"({got - want:+d})"))
        ctx.say("  calls in nbTable against nb-demo's: " + ", ".join(words))
    if not traces:
        ctx.say(f"no trace ({base}.trace.json or .trace.json.gz); records dropped (table file): {table_txt}")


def say_run(ctx, tag, r):
    samples = r["samples"]
    loop = f"loop {r['loop_s']:.3f} s, {r['hooked'] / r['loop_s']:,.0f} calls/s" if r.get("loop_s") else "loop ?"
    peak = f"{r['peak_kib'] / MIB:.1f} MiB ({r['peak_source']})" if r["peak_kib"] is not None else "unknown"
    delay = f"{r['exit_delay_s'] * 1e3:.1f} ms" if "exit_delay_s" in r else "unknown (no 'main returns' line)"
    sampled = (f"{len(samples)} samples, largest {max(s[1] for s in samples) / MIB:.1f} MiB" if samples
               else "ended before the first sample")
    ctx.say(f"{tag}: exit {r['rc']}{' (killed: too long)' if r['killed'] else ''}; "
            f"{r.get('iterations', '?')} iterations, {r.get('hooked', '?')} hooked calls, {loop}; peak RSS {peak}; "
            f"{sampled}; exit delay {delay}")


def number(x):
    """x as nb-demo's argument: 1000000, not 1e+06."""
    return str(int(x)) if x == int(x) else repr(x)


def env_option(text):
    k, sep, v = text.partition("=")
    if not sep or not k:
        raise ValueError(text)
    return k, v


@scenario("long-run", gpu=False,
          backs="nb over a long run on the fake driver: peak memory and its growth, exit delay, files, drops, "
                "calls counted against the calls made",
          options=[option("--iterations", type=int, default=300000, help="nb-demo's iterations (4 calls each)"),
                   option("--rate", type=float, default=0, help="hooked calls a second (0: flat out)"),
                   option("--seconds", type=float, default=0, help="loop this many s instead (0: --iterations)"),
                   option("--launches-only", action="store_true", help="one launch an iteration, no allocation"),
                   option("--env", type=env_option, action="append", default=[], metavar="K=V",
                          help="an NB_* setting of the nb run (repeatable), e.g. NB_KEEP=30s"),
                   option("--sample-ms", type=float, default=500, help="VmRSS sampled this often")])
def long_run(ctx, a):
    """nb-demo (scripts/demo/nb_demo.cpp) on the fake CUDA driver for
    --iterations or --seconds, flat out or at --rate hooked calls a second
    (each iteration launch, allocate, launch, free; or one launch with
    --launches-only), bare and under nb (the build's shim, --env settings
    added). For each run: the peak RSS (/usr/bin/time -v) and VmRSS sampled
    every --sample-ms (both series in rss.tsv), the loop's time, and
    the exit delay (the process reaped, less nb-demo's stamp of main
    returning: nb writes its files then). Then nb's files: sizes; the trace
    (plain or .gz) read once as JSON, its events by ph/cat and the span of
    its X events; records dropped (trace's nbTable and the table file); and
    nbTable's calls of cuLaunchKernel, cuMemAlloc and cuMemFree against the
    calls nb-demo made."""
    b = ctx.build
    extra = dict(a.env)
    cmd = [b.file("scripts", "nb-demo"), a.iterations]
    cmd += (["--rate", number(a.rate)] if a.rate else []) + (["--seconds", number(a.seconds)] if a.seconds else [])
    cmd += ["--launches-only"] if a.launches_only else []
    bare = {"LD_LIBRARY_PATH": b.fake_dir}
    prefix = ctx.path("nb")
    nb = dict(bare, LD_PRELOAD=b.shim, NB_OUT=prefix, NB_PRINT_TABLE="0", **extra)
    what = f"{a.seconds:g} s" if a.seconds else f"{a.iterations} iterations"
    ctx.section(f"nb-demo {what}{' of launches' if a.launches_only else ''}, "
                f"{f'{a.rate:,.0f} calls/s' if a.rate else 'flat out'}, bare and under nb"
                + (" (" + " ".join(f"{k}={v}" for k, v in extra.items()) + ")" if extra else ""))
    timeout = ctx.time_left(2 * a.seconds + 900)
    sample_s = a.sample_ms / 1000
    if not ctx.dry:
        for name in os.listdir(ctx.work):  # an earlier run's files in a reused --out
            if name.startswith("nb."):
                os.remove(ctx.path(name))
    runs = {}
    for tag, env in (("bare", bare), ("nb", nb)):
        runs[tag] = measured_run(ctx, cmd, env, f"demo-{tag}", sample_s, timeout)
        if ctx.dry:
            continue
        say_run(ctx, tag, runs[tag])
        if tag == "bare" and runs[tag]["rc"]:
            raise SystemExit(f"long-run: nb-demo failed bare:\n{runs[tag]['text'][-2000:]}")
    if ctx.dry:
        print(f"would check: nb's files {prefix}.*: sizes, the trace read once, drops, calls against nb-demo's")
        return
    with open(ctx.keep("rss.tsv"), "w") as f:
        f.write("run\tseconds\tvmrss_kib\tvmhwm_kib\n")
        for tag, r in runs.items():
            f.writelines(f"{tag}\t{t:.3f}\t{rss}\t{hwm}\n" for t, rss, hwm in r["samples"])
    say_files(ctx, prefix, runs["nb"]["calls"] or runs["bare"]["calls"], extra.get("NB_KEEP"))

    def row(what, fmt, get):
        x, y = get(runs["bare"]), get(runs["nb"])
        diff = fmt.format(y - x) if x is not None and y is not None else "–"
        ctx.say(f"| {what} | {fmt.format(x) if x is not None else '–'} | "
                f"{fmt.format(y) if y is not None else '–'} | **{diff}** |")

    ctx.say("| long-run | bare | nb | nb − bare |")
    ctx.say("| --- | --- | --- | --- |")
    row(f"peak RSS MiB ({runs['nb']['peak_source']})", "{:.1f}",
        lambda r: r["peak_kib"] / MIB if r["peak_kib"] is not None else None)
    row("largest VmRSS sample MiB", "{:.1f}",
        lambda r: max(s[1] for s in r["samples"]) / MIB if r["samples"] else None)
    row("loop s", "{:.3f}", lambda r: r.get("loop_s"))
    row("exit delay ms", "{:.1f}", lambda r: r["exit_delay_s"] * 1e3 if "exit_delay_s" in r else None)
    row("process s", "{:.3f}", lambda r: r["process_s"])
    if runs["nb"]["rc"]:
        ctx.say(f"FAIL nb-demo under nb exited {runs['nb']['rc']} (work/demo-nb.log)")
