"""Correctness on a real GPU (the GPU machine): what nb records of real
programs, checked against the programs and against torch.profiler. Each
check prints PASS or FAIL with what it saw (nbb/checks.py)."""
import gzip
import os
import shlex
import shutil
import signal
import subprocess
import time

from . import checks
from .registry import csv, option, scenario
from .run import ROOT, WORKLOADS, Result

DEVICE_PARTS = ["cublas", "steps", "cupy", "jax", "threads", "threads-one-core", "graph", "torch-graph"]


@scenario("device-check", gpu=True,
          backs="gpu-validation.md: static runtime + cuBLAS joined; decode steps equal torch.profiler's "
                "(kernels, device time, names, launches seen once) and nb's .json.gz of them smaller; CuPy and JAX "
                "joined; threads, graphs and "
                "stream captures joined to their own calls",
          options=[option("--join", default="order", choices=["order", "callback", "none"],
                          help="NB_CUPTI_JOIN of every nb run"),
                   option("--parts", type=csv, default=DEVICE_PARTS, help=",".join(DEVICE_PARTS))])
def device_check(ctx, a):
    """Device time on a real GPU. cublas: an nvcc-built program (static
    runtime) using cuBLAS, every kernel joined. steps: 8 decode steps under
    nb and, in another process, under torch.profiler: the same kernels per
    step, device time per step within 3%, the same names, every record
    joined, every launch seen once by nb's host calls; then the same steps
    recorded alone by nb (a cudaProfilerStart/Stop window) make a smaller
    .json.gz than torch.profiler's, with as many kernels. cupy, jax: their
    device work joined. threads: 8 threads x 200 launches, sets and copies
    each joined to its own call; threads-one-core: 16 threads on one core
    (threads taken off the CPU inside their calls). graph: a captured graph
    launched 100 times, the captured work repeated eagerly; torch-graph:
    PyTorch's CUDA graphs; captured calls marked, graph work joined to its
    launches."""
    b = ctx.build
    env = dict(ctx.gpu_env(), NB_CUPTI_JOIN=a.join)
    ctx.say(f"NB_CUPTI_JOIN={a.join}")
    if "cublas" in a.parts:
        ctx.section("nvcc static runtime + cuBLAS")
        out = ctx.run([b.bench("cublas_static")], env=dict(env, **ctx.nb_env("default", "cublas")), log="cublas")
        ctx.say(out.lines("own_kernels")[0] if out.lines("own_kernels") else "cublas_static printed nothing",
                "exit", out.rc)
        ctx.check(checks.joined, ctx.path("cublas.trace.json"), 22)
    if "steps" in a.parts:
        ctx.section("decode steps: nb and torch.profiler, separate processes")
        ctx.run(ctx.decode("steps", ctx.work, "nb"), env=dict(env, **ctx.nb_env("default", "nb")), log="steps")
        ctx.run(ctx.decode("steps", ctx.work, "torch"), env=env, log="steps")
        ctx.check(checks.steps_compare, ctx.work)
        # The same steps recorded alone by nb (a cudaProfilerStart/Stop window).
        ctx.run(ctx.decode("steps", ctx.work, "window"), log="steps",
                env=dict(env, **ctx.nb_env("default", "window", NB_STEP="profiler-api")))
        ctx.check(checks.gz_sizes, ctx.path("window.w1.trace.json.gz"), ctx.path("torch.trace.json.gz"))
        table_lines(ctx, "nb")
    for fw in ("cupy", "jax"):
        if fw in a.parts:
            ctx.section(fw)
            ctx.run([ctx.python, ctx.workload("frameworks.py"), fw], log=fw,
                    env=dict(env, XLA_PYTHON_CLIENT_PREALLOCATE="false", **ctx.nb_env("default", fw)))
            ctx.check(checks.joined, ctx.path(f"{fw}.trace.json"))
    for part, threads, iters, pin in (("threads", 8, 200, []), ("threads-one-core", 16, 100, ["taskset", "-c", "0"])):
        if part in a.parts:
            ctx.section(f"{threads} threads x {iters}{' on one core' if pin else ''}")
            ctx.run(pin + [b.bench("threads_join"), threads, iters], log=part,
                    env=dict(env, **ctx.nb_env("nostacks", part)))
            ctx.check(checks.threads_joined, ctx.path(f"{part}.trace.json"), threads, iters)
    if "graph" in a.parts:
        ctx.section("graph launches, the captured work repeated eagerly")
        ctx.run([b.bench("graph_join"), 100], env=dict(env, **ctx.nb_env("default", "graph")), log="graph")
        ctx.check(checks.graph_joined, ctx.path("graph.trace.json"), 100)
        ctx.check(checks.capture_joined, ctx.path("graph.trace.json"))
    if "torch-graph" in a.parts:
        ctx.section("PyTorch CUDA graphs (torch.cuda.graph), replayed, then eager")
        out = ctx.run(ctx.decode("graph", 5, 3), env=dict(env, **ctx.nb_env("default", "tgraph")), log="tgraph")
        ctx.say(*out.lines("torch_graph"))
        ctx.check(checks.capture_joined, ctx.path("tgraph.trace.json"))
        table_lines(ctx, "tgraph")


@scenario("corr-order", gpu=True,
          backs="gpu-validation.md / performance.md: why the order join is exact (CUPTI's ids, without any "
                "join, are dense and in the order of the calls that made the work)")
def corr_order(ctx, a):
    """With NB_CUPTI_JOIN=none (CUPTI's kernel, copy and set activity, no
    join), the correlation ids of device records: on 8 decode steps and on
    8 threads launching at once, are they one per call, dense, and in the
    start order of the host calls that made the work (kernel name and grid,
    or bytes)? The order join relies on it."""
    env = dict(ctx.gpu_env())
    ctx.section("decode steps, no join")
    ctx.run(ctx.decode("steps", ctx.work, "none"), env=dict(env, **ctx.nb_env("nojoin", "none")), log="none")
    ctx.check(checks.corr_order, ctx.path("none.trace.json"))
    ctx.section("8 threads x 200, no join")
    ctx.run([ctx.build.bench("threads_join"), 8, 200], env=dict(env, **ctx.nb_env("nojoin", "threads")),
            log="threads")
    ctx.check(checks.corr_order, ctx.path("threads.trace.json"))


@scenario("memory-check", gpu=True,
          backs="gpu-validation.md: the generate example's snapshot (loads in memory_viz, peak equals torch's, "
                "Python lines), the real-CUDA leak names its line, PyTorch allocations carry their Python frames",
          options=[option("--parts", type=csv, default=["generate", "leak", "frames"])])
def memory_check(ctx, a):
    """generate: the seed's memory example (two generate() calls) without nb
    for torch's own peak, then under nb with NB_TORCH_ALLOCS=1: the snapshot
    loads in torch.cuda._memory_viz stats and trace, its active peak is
    within 5% of torch's, the largest allocations name a Python line; where
    the trace's bytes go. leak: an nvcc -g program that leaks one
    allocation: the one live segment names the leaking line. frames:
    tensors allocated from known Python lines, with and without
    NB_TORCH_ALLOCS: every allocation carries frames of that file."""
    env = ctx.gpu_env()
    if "generate" in a.parts:
        ctx.section("the generate example: torch's peak, then NB_TORCH_ALLOCS=1")
        bare = ctx.run(ctx.decode("generate"), env=env, log="generate")
        ctx.say(*bare.lines("max_memory_allocated"))
        out = ctx.run(ctx.decode("generate"), env=dict(env, **ctx.nb_env("torchallocs", "gen")), log="generate")
        ctx.say(*out.lines("max_memory_allocated"))
        snap = ctx.path("gen.memory.pickle")
        for view in ("stats", "trace"):
            r = ctx.run([ctx.python, "-m", "torch.cuda._memory_viz", view, snap], env=env, log="memory_viz")
            ctx.say(f"torch.cuda._memory_viz {view}: exit {r.rc}, {len(r.splitlines())} lines")
            if view == "stats":
                for line in r.splitlines()[-12:]:
                    ctx.say("  " + line)
        peak = bare.value("max_memory_allocated", cast=int)
        if peak or ctx.dry:
            ctx.check(checks.snapshot_peak, snap, peak)
        else:
            ctx.say("FAIL the program without nb printed no peak of its own")
        ctx.check(checks.trace_sizes, ctx.path("gen.trace.json"))
    if "leak" in a.parts:
        ctx.section("a real-CUDA leak")
        ctx.run([ctx.build.bench("leak")], env=dict(env, **ctx.nb_env("default", "leak")), log="leak")
        ctx.check(checks.leak, ctx.path("leak.memory.pickle"), os.path.join(WORKLOADS, "leak.cu"))
    if "frames" in a.parts:
        for tag, extra in (("torch-allocs", {"NB_TORCH_ALLOCS": "1"}), ("caching", {})):
            ctx.section(f"PyTorch allocations from known lines ({tag})")
            ctx.run([ctx.python, ctx.workload("torch_frames.py")], log="frames",
                    env=dict(env, **ctx.nb_env("default", tag, **extra)))
            ctx.check(checks.snapshot_frames, ctx.path(f"{tag}.memory.pickle"), "torch_frames.py")


def trace_head(trace, head):
    """The part of a trace before its events (nbTable, nbRun...), closed as
    a trace with no events: what `nbprof report` reads, small enough to
    carry back from the GPU machine with the snapshot."""
    trace = checks.resolve(trace)
    with (gzip.open if trace.endswith(".gz") else open)(trace, "rb") as f:
        text = f.read(64 << 20)
    at = text.find(b'"traceEvents"')
    if at < 0:
        return False
    with open(head, "wb") as f:
        f.write(text[:at] + b'"traceEvents": []}\n')
    return True


@scenario("memory-report", gpu=True,
          backs="gpu-validation.md: nbprof report on the generate example (a sawtooth, its peak against torch's) "
                "and on a PyTorch loop that keeps a tensor per step (a leak naming its line)",
          options=[option("--parts", type=csv, default=["generate", "leak"])])
def memory_report(ctx, a):
    """generate: the seed's memory example (two generate() calls, each an
    NVTX range "generate", NB_STEP=nvtx:generate) under nb with
    NB_TORCH_ALLOCS=1, after a run without nb for torch's own peak. leak:
    workloads/torch_leak.py (a tensor kept per step, NB_STEP=nvtx:step).
    Each run's snapshot and trace head (what nbprof report reads) are kept
    in the output folder as <tag>.memory.pickle and <tag>.trace.json, with
    the report if nbprof report runs here."""
    env = ctx.gpu_env()
    runs = []
    if "generate" in a.parts:
        ctx.section("the generate example: torch's peak, then NB_TORCH_ALLOCS=1, a step per request")
        bare = ctx.run(ctx.decode("generate"), env=env, log="generate")
        ctx.say(*bare.lines("max_memory_allocated"))
        out = ctx.run(ctx.decode("generate"), log="generate",
                      env=dict(env, **ctx.nb_env("torchallocs", "gen", NB_STEP="nvtx:generate")))
        ctx.say(*out.lines("max_memory_allocated"))
        runs.append("gen")
    if "leak" in a.parts:
        ctx.section("a PyTorch loop that keeps a tensor per step")
        out = ctx.run([ctx.python, ctx.workload("torch_leak.py")], log="leak",
                      env=dict(env, **ctx.nb_env("torchallocs", "leak", NB_STEP="nvtx:step")))
        ctx.say(*out.lines("max_memory_allocated"))
        runs.append("leak")
    for tag in runs:
        if ctx.dry:
            print(f"would keep {tag}.memory.pickle and the head of {tag}.trace.json")
            continue
        shutil.copy(ctx.path(f"{tag}.memory.pickle"), ctx.keep(f"{tag}.memory.pickle"))
        shutil.copy(ctx.path(f"{tag}.table.txt"), ctx.keep(f"{tag}.table.txt"))
        if not trace_head(ctx.path(f"{tag}.trace.json"), ctx.keep(f"{tag}.trace.json")):
            ctx.say(f"FAIL {tag}.trace.json has no traceEvents")
            continue
        report = ctx.run([ctx.build.nbprof, "report", ctx.keep(tag)], env=env, log="report")
        ctx.say(f"nbprof report {tag}: exit {report.rc}")
        for line in report.splitlines():
            ctx.say("  " + line)


@scenario("window-check", gpu=True,
          backs="gpu-validation.md: recording windows on the seed's loop (nbprof steps finds the step; "
                "wait/warmup/active exact; NVTX steps; repeat; armed by SIGUSR2 mid-run)",
          options=[option("--parts", type=csv, default=["census", "kernel", "nvtx", "repeat", "signal"]),
                   option("--marker", help="NB_STEP to use instead of the census's suggestion"),
                   option("--signal-after", type=float, default=15, help="seconds before SIGUSR2"),
                   option("--signal-runs", type=int, default=1,
                          help="runs of the signal part (t.w1, or t1.w1, t2.w1 ...)")])
def window_check(ctx, a):
    """On the seed's loop (workloads/decode.py seed: 32 steps, no warm-up, no
    profiler calls). census: `nbprof steps` ranks the kernel that ends each
    step and suggests it. kernel: with that marker, wait 4 warmup 2 active
    8: 8 ProfilerStep spans, every kernel inside one, the same count in each.
    nvtx: the loop with an NVTX range per step, NB_STEP=nvtx:step. repeat:
    repeat 2 writes two complete windows whose snapshots load. signal:
    NB_TRIGGER=signal armed by SIGUSR2 while a slow loop runs: the window
    starts with the next whole step and is written while the program runs."""
    env = ctx.gpu_env()
    marker = a.marker
    sched = {"NB_WAIT": "4", "NB_WARMUP": "2", "NB_ACTIVE": "8"}
    if "census" in a.parts:
        ctx.section("nbprof steps")
        out = ctx.run([ctx.build.nbprof, "steps", "-o", ctx.path("census"), "--", *ctx.decode("seed", 32)],
                      env=env, log="census")
        for line in out.splitlines():
            if not line.startswith("end_ns"):
                ctx.say("  " + line)
        if os.path.exists(ctx.path("census.steps.txt")):
            with open(ctx.path("census.steps.txt")) as f:
                out = Result(f.read(), 0)
        suggested = out.lines("suggested: NB_STEP=")
        marker = marker or (shlex.split(suggested[0].split("=", 1)[1])[0] if suggested else None)
    marker = marker or ("CENSUS_SUGGESTION" if ctx.dry else None)
    ctx.say(f"marker: {marker}")
    if not marker and not ctx.dry and {"kernel", "repeat", "signal"} & set(a.parts):
        ctx.say("FAIL no step marker: give --marker")
        return
    if "kernel" in a.parts:
        ctx.section(f"NB_STEP={marker}, wait 4 warmup 2 active 8")
        ctx.run(ctx.decode("seed", 32), env=dict(env, **ctx.nb_env("default", "k", NB_STEP=marker, NB_REPEAT="1",
                                                                    **sched)), log="kernel")
        ctx.check(checks.window, ctx.path("k.w1.trace.json"), 8)
    if "nvtx" in a.parts:
        ctx.section("an NVTX range per step, NB_STEP=nvtx:step")
        ctx.run(ctx.decode("seed", 32, "--nvtx"), env=dict(env, **ctx.nb_env("default", "n", NB_STEP="nvtx:step",
                                                                               **sched)), log="nvtx")
        ctx.check(checks.window, ctx.path("n.w1.trace.json"), 8)
    if "repeat" in a.parts:
        ctx.section("repeat 2")
        ctx.run(ctx.decode("seed", 32), env=dict(env, **ctx.nb_env("default", "r", NB_STEP=marker, NB_REPEAT="2",
                                                                    **sched)), log="repeat")
        for w in (1, 2):
            ctx.check(checks.window, ctx.path(f"r.w{w}.trace.json"), 8)
            r = ctx.run([ctx.python, "-m", "torch.cuda._memory_viz", "stats", ctx.path(f"r.w{w}.memory.pickle")],
                        env=env, log="memory_viz")
            ctx.say("PASS" if r.rc == 0 else "FAIL", f"window {w}'s snapshot loads in torch.cuda._memory_viz stats")
    if "signal" in a.parts:
        for n in range(1, a.signal_runs + 1):
            signal_window(ctx, env, marker, a.signal_after, "t" if a.signal_runs == 1 else f"t{n}")


def signal_window(ctx, env, marker, after, tag):
    """The loop at 0.1 s a step, dormant under NB_TRIGGER=signal, SIGUSR2
    after `after` s: one window of 8 steps, written while the program runs."""
    ctx.section(f"NB_TRIGGER=signal, SIGUSR2 after {after} s of a slow loop (0.1 s a step): {tag}")
    p = ctx.run(ctx.decode("seed", 200, "--pause", 0.1), background=True, log=f"signal-{tag}",
                env=dict(env, **ctx.nb_env("dormant", tag, NB_STEP=marker, NB_ACTIVE="8")))
    if p is not None and not ctx.dry:
        time.sleep(after)
        os.kill(p.pid, signal.SIGUSR2)
        try:
            stdout, stderr = p.communicate(timeout=ctx.time_left(600))
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
        with open(ctx.path(f"signal-{tag}.log"), "a") as f:
            f.write(stdout + stderr + f"[exit {p.returncode}]\n")
        end_ns = int(next((l.split()[1] for l in stdout.splitlines() if l.startswith("end_ns")), "0"))
        trace = checks.resolve(ctx.path(f"{tag}.w1.trace.json"))
        written = os.path.getmtime(trace) if os.path.exists(trace) else 0
        ctx.say(f"window written {end_ns / 1e9 - written:.0f} s before the program ended; exit {p.returncode}")
    ctx.check(checks.window, ctx.path(f"{tag}.w1.trace.json"), 8)


# The census's programs: (tag, command after the Python, the counts a
# once-per-step marker has there). generate: 2 requests of 64 new tokens.
CENSUS_PROGRAMS = [
    ("seed", ["decode.py", "seed", "32"], [32]),
    ("bursts", ["decode.py", "seed", "32", "--bursts", "8"], [264]),
    ("generate", ["decode.py", "generate"], [128]),
    ("jax", ["frameworks.py", "jax-loop", "200"], [200]),
]


@scenario("census", gpu=True,
          backs="gpu-validation.md: `nbprof steps` ranks a once-per-step marker first and suggests it, on the "
                "seed's loop, the loop timed in bursts as the seed's notebook does, `generate` and a JAX loop",
          options=[option("--programs", type=csv, default=[t for t, _, _ in CENSUS_PROGRAMS],
                          help=",".join(t for t, _, _ in CENSUS_PROGRAMS))])
def census(ctx, a):
    """`nbprof steps -- PROGRAM` on the seed's loop (32 steps), the loop as
    the seed's notebook times it (decode(8), then decode(32) 8 times: 264
    steps in bursts, the case of a warm-up and gaps between bursts), the
    `generate` example (2 requests of 64 tokens) and a JAX training loop
    (200 jitted steps). PASS when the candidate ranked first is the one
    suggested and it is seen once per step (its count)."""
    env = ctx.gpu_env()
    for tag, cmd, counts in CENSUS_PROGRAMS:
        if tag not in a.programs:
            continue
        ctx.section(f"nbprof steps -- {' '.join(cmd)}")
        out = ctx.run([ctx.build.nbprof, "steps", "-o", ctx.path(tag), "--", ctx.python, ctx.workload(cmd[0]),
                       *cmd[1:]], env=env, log=f"census-{tag}")
        ctx.say(f"exit {out.rc}")
        if ctx.dry:
            continue
        table = ctx.path(f"{tag}.steps.txt")
        if not os.path.exists(table):
            ctx.say(f"FAIL {tag}: no {table}")
            continue
        with open(table) as f:
            text = f.read()
        for line in text.splitlines()[:6]:
            ctx.say("  " + line)
        first = next((line.split() for line in text.splitlines() if line.split()[:1] == ["1"]), None)
        suggested = Result(text, 0).lines("suggested: NB_STEP=")
        marker = shlex.split(suggested[0].split("=", 1)[1])[0] if suggested else None
        if first is None or marker is None:
            ctx.say(f"FAIL {tag}: no candidate ranked first or none suggested ({suggested})")
            continue
        # Once per step: within 2% (a prefill or warm-up pass more), as nbprof steps counts it.
        ok = first[1] == marker and any(abs(int(first[2]) - c) <= max(1, c // 50) for c in counts)
        ctx.say("PASS" if ok else "FAIL", f"{tag}: ranked first {first[1]} x{first[2]} (a step: {counts}), "
                f"suggested {marker}")


@scenario("handover", gpu=True,
          backs="gpu-validation.md: nb beside the program's own torch.profiler (the hand-over), and beside "
                "nsys where it is installed")
def handover(ctx, a):
    """A program that runs torch.profiler itself around 8 steps, bare and
    with nb preloaded: torch.profiler gets the same kernels and flows in
    both (nb leaves CUPTI to it and says where its own device time stops);
    the loop with nb and no profiler of its own: device time all along.
    Then nsys with nb preloaded, if nsys is installed."""
    env = ctx.gpu_env()
    ctx.section("the seed's loop under nb, no profiler of its own")
    ctx.run(ctx.decode("seed", 8), env=dict(env, **ctx.nb_env("default", "plain")), log="plain")
    table_lines(ctx, "plain")
    ctx.section("torch.profiler inside the program, bare, then with nb")
    bare = ctx.run(ctx.decode("profiler-inside", ctx.path("bare.json")), env=env, log="inside")
    nb = ctx.run(ctx.decode("profiler-inside", ctx.path("nb.json")), env=dict(env, **ctx.nb_env("default", "tp")),
                 log="inside")
    ctx.say("bare:", *bare.lines("torch.profiler"))
    ctx.say("nb:", *nb.lines("torch.profiler"))
    ctx.say(*[line for line in nb.splitlines() if "own CUPTI client" in line])
    table_lines(ctx, "tp")
    if not ctx.dry:
        same = bare.lines("torch.profiler") == nb.lines("torch.profiler") and bare.lines("torch.profiler")
        ctx.say("PASS" if same else "FAIL", "torch.profiler sees the same kernels and flows with nb preloaded")
    nsys = next((p for p in ("/usr/local/cuda/bin/nsys",) if os.path.exists(p)), None)
    if nsys:
        ctx.section(f"nsys profile with nb preloaded ({nsys})")
        out = ctx.run([nsys, "profile", "-o", ctx.path("nsys"), "--force-overwrite", "true", "-t", "cuda", "env",
                       *[f"{k}={v}" for k, v in ctx.nb_env("default", "ns").items()], *ctx.decode("seed", 8)],
                      env=env, log="nsys")
        ctx.say(*out.splitlines()[-8:])
    else:
        ctx.say("nsys: not installed here")


def table_lines(ctx, tag):
    """The lines of a run's table that say where device time came from."""
    try:
        with open(ctx.path(f"{tag}.table.txt")) as f:
            for line in f:
                if line.startswith(("Device records", "No device time", "Device time stops", "nb's own cost")) \
                        or "no device record" in line:
                    ctx.say("  " + line.strip())
    except OSError:
        if not ctx.dry:
            ctx.say(f"  no table for {tag}")


@scenario("interrupt", gpu=True,
          backs="gpu-validation.md: a loop ended by an uncaught KeyboardInterrupt (files written, exit status "
                "unchanged)")
def interrupt(ctx, a):
    """The seed's loop ended by an uncaught KeyboardInterrupt after 8 steps,
    bare and under nb: the exit status is the same, and nb's files are
    written after Python's finalization with every device record joined."""
    env = ctx.gpu_env()
    ctx.section("KeyboardInterrupt after 8 steps")
    bare = ctx.run(ctx.decode("interrupt"), env=env, log="interrupt")
    nb = ctx.run(ctx.decode("interrupt"), env=dict(env, **ctx.nb_env("default", "ki")), log="interrupt")
    ctx.say(f"exit status bare {bare.rc}, under nb {nb.rc}")
    if not ctx.dry:
        ctx.say("PASS" if bare.rc == nb.rc else "FAIL", "nb leaves the exit status as it was")
    ctx.check(checks.joined, ctx.path("ki.trace.json"))


@scenario("demo", gpu=True,
          backs="gpu-validation.md: nb-demo under nbprof on real CUDA (right result, outputs load)")
def demo(ctx, a):
    """nb-demo (reaches the driver by dlopen + cuGetProcAddress, as a CUDA
    runtime does) under nbprof: it checks its own result; the trace and the
    snapshot pass test/tools/nbread.py, the snapshot loads in
    torch.cuda._memory_viz stats; its launches by kernel name."""
    env = ctx.gpu_env()
    ctx.section("nbprof -- nb-demo 200")
    out = ctx.run([ctx.build.nbprof, "-o", ctx.path("demo"), "--", ctx.build.file("scripts", "nb-demo"), 200],
                  env=env, log="demo")
    ctx.say("PASS" if out.rc == 0 or ctx.dry else "FAIL", "nb-demo exit", out.rc)
    for kind, suffix in (("trace", "trace.json.gz"), ("snapshot", "memory.pickle")):
        r = ctx.run([ctx.python, os.path.join(ROOT, "test", "tools", "nbread.py"), kind, ctx.path(f"demo.{suffix}")],
                    log="nbread")
        ctx.say("PASS" if r.rc == 0 else "FAIL", f"nbread.py {kind}")
    r = ctx.run([ctx.python, "-m", "torch.cuda._memory_viz", "stats", ctx.path("demo.memory.pickle")], env=env,
                log="memory_viz")
    ctx.say(*r.splitlines()[-6:])
    ctx.check(checks.kernel_names, ctx.path("demo.trace.json"))
