"""Scenarios of nb's own host cost: on the fake CUDA driver and runtime
(test/fake_cuda), so they run on any machine, the GPU machine's host too."""
import os
import statistics

from .footer import dropped, footer_lines
from .pairs import Pairs, abba
from .registry import csv, option, scenario
from .run import NB_MODES, ROOT


@scenario("launch-cost", gpu=False,
          backs="performance.md: added host cost per intercepted call (no stacks, and per NB_STACKS); "
                "the dormant shim's cost per call; a hook change against an older shim",
          options=[option("--pairs", type=int, default=11, help="alternating runs of each side"),
                   option("--bursts", type=int, default=40, help="timed bursts of 4096 calls per run"),
                   option("--stacks", choices=["none", "memory", "all"], help="NB_STACKS of the nb side"),
                   option("--dormant", action="store_true", help="NB_TRIGGER=signal, never armed"),
                   option("--base-shim", help="the other side runs under this shim instead of bare")])
def launch_cost(ctx, a):
    """What one intercepted call costs the calling thread: nb-bench-launch
    (cuLaunchKernel through a cuGetProcAddress answer and by symbol,
    cuMemAlloc_v2 + cuMemFree_v2) on the fake driver, bare and under the shim
    (NB_DEVICE=0: the shim's own cost), in alternating processes. Every timed
    call must have been recorded: a drop fails the run. Prints the medians
    and the added ns per call."""
    b = ctx.build
    base = "base shim" if a.base_shim else "bare"
    results = {}  # metric -> Pairs
    common = {"LD_LIBRARY_PATH": b.fake_dir}

    def nb(shim, tag):
        env = dict(common, LD_PRELOAD=shim, NB_OUT=ctx.path(tag), NB_PRINT_TABLE="0", NB_LOG="error", NB_DEVICE="0")
        if a.stacks:
            env["NB_STACKS"] = a.stacks
        if a.dormant:
            env["NB_TRIGGER"] = "signal"
        return env

    ctx.section(f"{a.pairs} pairs, {a.bursts} bursts, NB_STACKS={a.stacks or 'default'}"
                f"{', dormant' if a.dormant else ''}, against {base}")
    for i in range(a.pairs):
        for side in abba(i, [base, "shim"]):
            if side == "shim":
                env = nb(b.shim, f"run-{i}")
            else:
                env = nb(os.path.abspath(a.base_shim), f"base-{i}") if a.base_shim else common
            out = ctx.run([b.bench("nb-bench-launch"), a.bursts], env=env, log="launch")
            for metric in ("launch_ns", "symbol_launch_ns", "alloc_free_ns"):
                results.setdefault(metric, Pairs(base)).add(side, i, out.value(metric))
            lost = None if ctx.dry or a.dormant or "NB_OUT" not in env else dropped(env["NB_OUT"] + ".table.txt")
            if lost:
                raise SystemExit(f"launch-cost: {lost} records dropped in {env['NB_OUT']}: the figure would flatter nb")
    ctx.say(f"| call | {base} ns (median) | with shim ns (median) | added ns |")
    ctx.say("| --- | --- | --- | --- |")
    for metric, p in results.items():
        r = p.row("shim")
        if r["pairs"]:
            ctx.say(f"| {metric} | {r['base_median_s']:.1f} | {r['median_s']:.1f} | "
                    f"**{r['median_s'] - r['base_median_s']:.1f}** |")


def stack_footer(table_path):
    """(native us, Python us, median us) per stack from a table's 'Stacks
    taken' footer line; None without one."""
    for line in footer_lines(table_path):
        if line.startswith("Stacks taken") and " us native and " in line:
            measured = line.split("(measured): ", 1)[1]
            native = float(measured.split(" us native", 1)[0])
            python = float(measured.split(" us native and ", 1)[1].split(" us Python", 1)[0])
            median = float(line.split("half took under ", 1)[1].split(" us", 1)[0])
            return native, python, median
    return None


@scenario("stack-sites", gpu=False,
          backs="performance.md: a stack's cost with launches from many call sites in turn; the launching "
                "thread's page faults",
          options=[option("--pairs", type=int, default=7, help="alternating runs of each side"),
                   option("--rounds", type=int, default=400, help="rounds of launches, one from each site"),
                   option("--sites", type=int, default=24, help="call sites (at most 48)"),
                   option("--evict-kib", type=int, default=0, help="KiB touched before each launch"),
                   option("--base-shim", help="the other side runs under this shim (else only the shim)"),
                   option("--probe", action="store_true",
                          help="no shim: time nb's unwinder itself (the build's probe library), every capture")])
def stack_sites(ctx, a):
    """nb-bench-stack-sites under the shim (NB_STACKS=all, NB_DEVICE=0):
    ROUNDS x SITES launches, each from its own chain of 10-14 functions on
    40 shared outer frames, the sites in turn. From nb's footer: native us
    per stack (the mean of the timed stacks, as nb reports it) and the
    median stack; from the program: the launching thread's page faults
    during the loop. With --base-shim, that shim in alternating runs. With
    --probe, each site calls nb's unwinder (the probe library's copy) and
    the program times every capture: medians of the median and mean ns."""
    b = ctx.build
    if a.probe:
        ctx.section(f"nb's unwinder alone, {a.pairs} runs, {a.rounds} rounds x {a.sites} sites, "
                    f"{a.evict_kib} KiB touched between")
        got = {}
        for i in range(a.pairs):
            out = ctx.run([b.bench("nb-bench-stack-sites"), a.rounds, a.sites, a.evict_kib, 40, b.probe_lib],
                          log="sites")
            for key in ("median", "mean", "frames"):
                got.setdefault(key, []).append(out.value(key))
        if not ctx.dry:
            ctx.say(f"unwind ns per capture: median {statistics.median(got['median']):.0f}, "
                    f"mean {statistics.median(got['mean']):.0f} (medians of {a.pairs} runs), "
                    f"{statistics.median(got['frames']):.0f} frames")
        return
    sides = ["base", "shim"] if a.base_shim else ["shim"]
    results = {}  # metric -> side -> values
    ctx.section(f"{a.pairs} runs each, {a.rounds} rounds x {a.sites} sites, {a.evict_kib} KiB touched between"
                f"{', against ' + a.base_shim if a.base_shim else ''}")
    for i in range(a.pairs):
        for side in abba(i, sides):
            shim = b.shim if side == "shim" else os.path.abspath(a.base_shim)
            tag = f"{side}-{i}"
            env = {"LD_LIBRARY_PATH": b.fake_dir, "LD_PRELOAD": shim, "NB_OUT": ctx.path(tag), "NB_PRINT_TABLE": "0",
                   "NB_LOG": "error", "NB_DEVICE": "0", "NB_STACKS": "all"}
            out = ctx.run([b.bench("nb-bench-stack-sites"), a.rounds, a.sites, a.evict_kib], env=env, log="sites")
            if ctx.dry:
                continue
            costs = stack_footer(ctx.path(tag + ".table.txt"))
            if costs is None:
                raise SystemExit(f"stack-sites: no stack footer in {ctx.path(tag + '.table.txt')}")
            lost = dropped(ctx.path(tag + ".table.txt"))
            if lost:
                raise SystemExit(f"stack-sites: {lost} records dropped in {tag}: the figure would flatter nb")
            faults = out.value("thread", cast=int)
            for metric, v in (("native us per stack (mean)", costs[0]), ("median stack us", costs[2]),
                              ("page faults on the launching thread", faults)):
                results.setdefault(metric, {}).setdefault(side, []).append(v)
    if ctx.dry:
        return
    ctx.say("| metric | " + " | ".join(f"{s} (median of {a.pairs} runs)" for s in sides) + " |")
    ctx.say("| --- |" + " --- |" * len(sides))
    for metric, by_side in results.items():
        ctx.say(f"| {metric} | " + " | ".join(f"{statistics.median(by_side[s]):.2f}" for s in sides) + " |")


@scenario("clock", gpu=False, backs="performance.md: what a timestamp costs (CLOCK_MONOTONIC vs TSC)")
def clock(ctx, a):
    """What reading a clock costs on this machine: CLOCK_MONOTONIC(_RAW)
    through the vDSO and the raw TSC, ns per read (nb-bench-clock, two
    rounds)."""
    ctx.section("ns per clock read")
    out = ctx.run([ctx.build.bench("nb-bench-clock")], log="clock")
    for line in out.splitlines():
        ctx.say(line)


@scenario("order-join", gpu=False, backs="performance.md: the order join's cost on the collector thread",
          options=[option("--calls", type=int, default=2000000),
                   option("--runs", type=int, default=5)])
def order_join(ctx, a):
    """The order join's cost on the collector thread (collector/order_join.h):
    CALLS host calls and one device record each, joined in batches as the
    collector's passes do; ns per call + record, median of RUNS runs."""
    ctx.section(f"{a.runs} runs of {a.calls} calls")
    ns = []
    for i in range(a.runs):
        out = ctx.run([ctx.build.bench("nb-bench-order-join"), a.calls], log="order-join")
        if out.rc:
            raise SystemExit(f"order-join: not every call joined:\n{out}")
        ns.append(out.value("ns_per_call"))
        ctx.say(out.strip())
    if all(ns):
        ctx.say(f"order join: median {statistics.median(ns):.1f} ns per call + record over {len(ns)} runs")


@scenario("collector", gpu=False, backs="performance.md: the collector thread's cost per record (join + trace events)",
          options=[option("--calls", type=int, default=1000000),
                   option("--runs", type=int, default=5)])
def collector(ctx, a):
    """The collector thread's cost per record (nb-bench-collector): CALLS
    launch records into a Session that streams its events to a gzip trace
    (the writer thread compresses beside it), each joined by the order join
    to its kernel record, in passes of 8,192; ns of the collector thread's
    CPU per record (host + device), median of RUNS runs."""
    ctx.section(f"{a.runs} runs of {a.calls} calls")
    ns = []
    for i in range(a.runs):
        out = ctx.run([ctx.build.bench("nb-bench-collector"), a.calls, ctx.work], log="collector")
        if out.rc:
            raise SystemExit(f"collector: not every call joined, or the trace failed:\n{out}")
        ns.append(out.value("ns_per_record"))
        ctx.say(out.strip())
    if all(ns):
        med = statistics.median(ns)
        ctx.say(f"collector: median {med:.1f} ns per record ({1e9 / med:,.0f} records/s) over {len(ns)} runs")


@scenario("alloc-stack", gpu=False,
          backs="performance.md: a stack's cost per allocation (native + Python); a flood of deep stacks "
                "(records dropped, stacks lost)",
          options=[option("--rounds", type=int, default=5),
                   option("--modes", type=csv, default=["bare", "none", "memory"],
                          help="bare, NB_STACKS values and nb modes (libunwind, stacksall16, ...)"),
                   option("--depth", type=int, default=20), option("--bursts", type=int, default=40),
                   option("--shape", choices=["functions", "objects"], default="functions"),
                   option("--pause-ms", type=float, default=5),
                   option("--gil", choices=["gil", "released"], default="gil"),
                   option("--base-shim", help="each nb mode also runs under this shim, as MODE@base")])
def alloc_stack(ctx, a):
    """cudaMalloc + cudaFree on the fake runtime through ctypes from a Python
    stack DEPTH deep (workloads/alloc_stack.py), bare and under nb with each
    NB_STACKS value or nb mode (NB_DEVICE=0), ABBA rounds; ns per call, and each nb
    run's footer (stacks taken and their measured cost, records dropped,
    stacks lost). --shape objects nests callable objects, as PyTorch's
    modules are (DEPTH 12 fills 64 native frames); --pause-ms 0 makes a
    flood the collector must keep up with. With --base-shim, each nb mode
    also runs under an older shim (a change to the hooks against it)."""
    b = ctx.build
    p = Pairs("bare")
    modes = a.modes + ([f"{m}@base" for m in a.modes if m != "bare"] if a.base_shim else [])
    cmd = [ctx.python, ctx.workload("alloc_stack.py"), a.depth, a.bursts, a.shape, a.pause_ms, a.gil]
    ctx.section(f"{a.rounds} rounds of {', '.join(modes)}; depth {a.depth} ({a.shape}), {a.bursts} bursts, "
                f"pause {a.pause_ms} ms, {a.gil}")
    for i in range(a.rounds):
        for mode in abba(i, modes):
            env = {"LD_LIBRARY_PATH": b.fake_dir}
            if mode != "bare":
                name, _, base = mode.partition("@")
                env.update(LD_PRELOAD=os.path.abspath(a.base_shim) if base else b.shim, NB_OUT=ctx.path(f"{mode}-{i}"),
                           NB_PRINT_TABLE="0", **NB_MODES.get(name, {"NB_STACKS": name}), NB_DEVICE="0")
            out = ctx.run(cmd, env=env, log="alloc-stack")
            p.add(mode, i, out.value("ns_per_call"))
            ctx.say(f"{mode} {i} ns_per_call {out.value('ns_per_call')}")
            for line in footer_lines(ctx.path(f"{mode}-{i}.table.txt")) if mode != "bare" else []:
                if not line.startswith("nb's own cost"):
                    ctx.say(f"  {mode} {i}: {line}")
    ctx.say("| NB_STACKS | runs | ns per call (median) | added to bare (median of rounds) |")
    ctx.say("| --- | --- | --- | --- |")
    for mode in modes:
        times = list(p.times.get(mode, {}).values())
        if times:
            added = p.differences(mode) if mode != "bare" else [0]
            ctx.say(f"| {mode} | {len(times)} | {statistics.median(times):.0f} | "
                    f"{f'{statistics.median(added):.0f}' if added else '–'} |")


@scenario("stack-cold", gpu=False,
          backs="performance.md: what a stack costs hot and with cold caches (Python frames, nb's unwinder, "
                "libunwind)",
          options=[option("--kib", type=int, nargs="*", default=[0, 1024, 4096, 32768],
                          help="KiB touched before each capture"),
                   option("--no-torch", action="store_true", help="do not import torch first (machines without it)")])
def stack_cold(ctx, a):
    """Captures of a 20-object-deep Python stack, with the caches cleared by
    touching KIB KiB before each: Python frames (the probe library, without
    the GIL), native frames by libunwind and by nb's own unwinder; medians,
    the clock's cost taken off (workloads/stack_cold.py). Imports torch
    first (its ~400 libraries loaded, as in the decode loop) unless
    --no-torch."""
    env = {"NO_TORCH": "1"} if a.no_torch else {}
    ctx.section(f"cold captures after touching {a.kib} KiB")
    out = ctx.run([ctx.python, ctx.workload("stack_cold.py"), ctx.build.probe_lib, ctx.build.libunwind,
                   *a.kib], env=env, log="stack-cold")
    for line in out.lines("cold"):
        ctx.say(line)
    if out.rc:
        raise SystemExit(f"stack-cold failed:\n{out}")


@scenario("py-frames", gpu=False,
          backs="gpu-validation.md: Python frames on the machine's own Python (code versions, the last-stack "
                "memo); performance.md: the Python frames bench",
          options=[option("--bench", action="store_true", help="also time the captures")])
def py_frames(ctx, a):
    """test/programs/py_frames_check.py on this machine's Python, with the
    probe library of the build: every check of nb's Python frame capture
    (with and without the GIL, code objects at reused addresses, the
    last-stack memo), and with --bench the capture times."""
    ctx.section("py_frames_check.py")
    out = ctx.run([ctx.python, os.path.join(ROOT, "test", "programs", "py_frames_check.py"), ctx.build.probe_lib]
                  + (["--bench"] if a.bench else []), log="py-frames")
    for line in out.splitlines():
        if line.startswith(("bench:", "FAIL", "python")) or "passed" in line:
            ctx.say(line)
    ctx.say("PASS" if out.rc == 0 else "FAIL", "py_frames_check.py exit", out.rc)
