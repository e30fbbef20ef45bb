"""What nb costs a real program on the GPU machine, against bare and against
its peers: the decode loop in on/off pairs inside one process and in
alternating processes, and the launch-bound loop per launch."""
import datetime
import os
import platform
import statistics
import time

from .footer import footer_lines
from .pairs import Pairs, abba
from .registry import csv, option, scenario
from .run import NB_MODES
from .scenarios_host import stack_footer

PEERS = ["cupti", "memhist-python", "memhist-all", "prof-cuda", "prof-cpu-cuda"]
PEER_NAMES = {
    "cupti": "CUPTI kernel + copy + set activity alone (the floor)",
    "memhist-python": 'memory history, stacks="python"',
    "memhist-all": 'memory history, stacks="all"',
    "prof-cuda": "torch.profiler, CUDA activity only",
    "prof-cpu-cuda": "torch.profiler, CPU + CUDA",
}
MODE_NAMES = {
    "default": "nb default (order join, stacks on memory calls)",
    "nostacks": "nb, NB_STACKS=none",
    "stacksall": "nb, NB_STACKS=all",
    "stacksall16": "nb, NB_STACKS=all NB_STACK_DEPTH=16",
    "libunwind": "nb, NB_STACKS=all NB_UNWIND=libunwind",
    "callback": "nb, NB_CUPTI_JOIN=callback",
    "nojoin": "nb, NB_CUPTI_JOIN=none (CUPTI activity, no join)",
    "host": "nb, host calls only (NB_DEVICE=0)",
    "dormant": "nb dormant (NB_TRIGGER=signal, never armed)",
    "torchallocs": "nb, NB_TORCH_ALLOCS=1 (against bare with the cudaMallocAsync backend)",
}


def inprocess_runs(ctx, modes, pairs):
    """Runs workloads/inprocess.py: one process per nb mode (nb dormant
    between windows), one bare process for CUPTI alone and one for the other
    peers, each started ahead and held after its imports. Returns
    {mode: row}, row as Pairs.row, plus 'footers'."""
    rows = {}
    runs = [(m, ["nb"], dict(ctx.gpu_env(), **ctx.nb_env(m, f"ip-{m}", NB_TRIGGER="signal")))
            for m in modes if m in NB_MODES]
    if "cupti" in modes:
        runs.append(("cupti", ["cupti"], dict(ctx.gpu_env(), NBB_CUPTI_FLOOR=ctx.build.bench("libnbb_cupti_floor.so"))))
    peers = [m for m in modes if m in PEERS and m != "cupti"]
    if peers:
        runs.append(("peers", peers, ctx.gpu_env()))
    jobs = [([ctx.python, ctx.workload("inprocess.py"), "--modes", ",".join(which), "--pairs", pairs], env,
             f"inprocess-{tag}") for tag, which, env in runs]
    for (tag, which, env), out in zip(runs, ctx.run_ahead(jobs)):
        for line in out.lines("inprocess "):
            w = line.split()
            mode = tag if w[1] == "nb" else w[1]
            ratios = [float(x) for x in w[w.index("ratios") + 1:]]
            rows[mode] = {"pairs": len(ratios), "median": float(w[w.index("median") + 1]), "min": min(ratios),
                          "max": max(ratios), "median_s": float(w[w.index("on_median") + 1]),
                          "base_median_s": float(w[w.index("off_median") + 1]), "ratios": ratios}
        footers = [line.split(" ", 2) for line in out.lines("footer w")]  # the last window's account
        if tag in rows and footers:
            rows[tag]["footers"] = [f[2] for f in footers if f[1] == footers[-1][1]]
        if out.rc and not ctx.dry:
            ctx.say(f"inprocess {tag} exited {out.rc}: {out.strip().splitlines()[-1:]}")
    return rows


def say_rows(ctx, rows, names, what):
    ctx.say(f"| {what} | pairs | median ratio | min | max | median on s | median off s |")
    ctx.say("| --- | --- | --- | --- | --- | --- | --- |")
    for mode, r in rows.items():
        ctx.say(f"| {names.get(mode, mode)} | {r['pairs']} | **{r['median']:.3f}** | {r['min']:.3f} | {r['max']:.3f} "
                f"| {r['median_s']:.4f} | {r['base_median_s']:.4f} |")
        for line in r.get("footers", []):
            ctx.say(f"  {mode}: {line}")


@scenario("overhead", gpu=True,
          backs="performance.md: nb's overhead on the decode loop, pairs inside one process (per NB_STACKS and "
                "join), with nb's own account of its stacks; the peers the same way",
          options=[option("--pairs", type=int, default=10),
                   option("--modes", type=csv, default=["nostacks", "stacksall"],
                          help="nb modes (" + ",".join(NB_MODES) + ") and peers (" + ",".join(PEERS) + ")")])
def overhead(ctx, a):
    """The decode loop (32 steps) timed in on/off pairs inside one process,
    ABBA, the switching off the clock (workloads/inprocess.py): for each nb
    mode a process under the shim with NB_TRIGGER=signal, SIGUSR2 opening
    and closing each window (off: nb dormant, about 7 ns a hooked call);
    the peers in bare processes (CUPTI alone in one of its own), started and
    stopped through their own APIs. Prints the median of the on/off ratios
    and each window's footer (stacks taken and their measured cost)."""
    bad = [m for m in a.modes if m not in NB_MODES and m not in PEERS]
    if bad:
        raise SystemExit(f"overhead: unknown mode {bad[0]}")
    ctx.section(f"in-process pairs, {a.pairs} each")
    say_rows(ctx, inprocess_runs(ctx, a.modes, a.pairs), {**MODE_NAMES, **PEER_NAMES}, "mode")


def process_pairs(ctx, modes, rounds, deadline, report=None, extra_rounds=None):
    """The decode loop bare and under each nb mode in alternating processes,
    ABBA, until `rounds` rounds or `deadline` seconds (a round started is
    finished). Modes after the first run only in the first `extra_rounds`
    rounds. Each process is started two turns early and held after its
    imports (Context.run_ahead), so a pair costs its GPU work and exits, not
    its imports. Returns a Pairs of decode_s."""
    p = Pairs("bare")
    started = time.time()
    args = ["time"] + (["--report", report] if report else [])
    plan = []
    for i in range(rounds):
        these = modes if extra_rounds is None or i < extra_rounds else modes[:1]
        plan += [(i, mode, f"p-{mode}-{i}") for mode in abba(i, ["bare"] + these)]
    jobs = ((ctx.decode(*args), dict(ctx.gpu_env(), **ctx.nb_env(mode, tag)), "pairs") for _, mode, tag in plan)
    done = 0

    def stop():  # asked before plan[done]: a round started is finished
        return plan[done][0] != plan[done - 1][0] and deadline and time.time() - started > deadline

    for (i, mode, tag), out in zip(plan, ctx.run_ahead(jobs, stop=stop)):
        done += 1
        p.add(mode, i, out.value("decode_s"))
        loops = out.lines("loops", "threads_cpu_s", "cgroup", "usage", "phase")
        ctx.say(f"{mode} {i} decode_s {out.value('decode_s')}")
        if ctx.dry:
            continue
        with open(ctx.keep("processes.txt"), "a") as f:
            f.write("".join(f"{mode} {i} {line}\n" for line in loops + footer_lines(ctx.path(tag + ".table.txt"))))
        for name in os.listdir(ctx.work):
            if name.startswith(tag + "."):
                os.remove(ctx.path(name))  # the files of a whole decode process: large
    return p


@scenario("pairs", gpu=True,
          backs="performance.md: nb's overhead on the decode loop in alternating process pairs (the figure a "
                "user sees); the dormant shim; where a profiled process's main thread spends its time",
          options=[option("--modes", type=csv, default=["nostacks"], help=",".join(NB_MODES)),
                   option("--rounds", type=int, default=10),
                   option("--deadline", type=float, default=0, help="stop starting rounds after this many s"),
                   option("--extra-rounds", type=int, help="modes after the first only in this many rounds"),
                   option("--report", help="threads,phases: also what each process's threads and phases used")])
def pairs(ctx, a):
    """The decode loop (workloads/decode.py time: warm-up, then the median
    of 7 timed loops of 32 steps) bare and under each nb mode in alternating
    processes, ABBA rounds; the ratio of each mode to the bare process of its
    round, and their median. Every process's loops, steal time, context
    switches (and with --report its threads' CPU time and phases) and nb's
    footer go to processes.txt."""
    ctx.section(f"process pairs: {', '.join(a.modes)}, {a.rounds} rounds"
                + (f", at most {a.deadline:.0f} s" if a.deadline else ""))
    p = process_pairs(ctx, a.modes, a.rounds, a.deadline, a.report, a.extra_rounds)
    ctx.say(p.table())


def stack_line(text, prefix, after, before):
    """The number between `after` and `before` (the last of a ", " list
    there) in the first line of `text` that holds `prefix`; None without."""
    for line in text.splitlines():
        if prefix in line and after in line:
            try:
                return float(line.split(after, 1)[1].split(before, 1)[0].rsplit(", ", 1)[-1])
            except ValueError:
                return None
    return None


@scenario("stack-decode", gpu=True,
          backs="performance.md: a stack's cost in the decode loop (nb's footer), one build against another",
          options=[option("--rounds", type=int, default=3, help="ABBA rounds (one run of each side a round)"),
                   option("--steps", type=int, default=64, help="decode steps of each run"),
                   option("--base-shim", help="the other side runs under this shim (else only the shim)")])
def stack_decode(ctx, a):
    """The seed's decode loop (workloads/decode.py seed STEPS) under the
    shim with a native and Python stack on every call (NB_STACKS=all,
    NB_LOG=debug), and with --base-shim under that shim in ABBA rounds.
    From each run's footer: native and Python us per stack (the means of
    the timed stacks) and the median stack; from its log: the native
    frames nb's unwinder walked and the share read from its memos; the
    frames a stack; a run's exit status where not 0. Runs differ by up
    to half in one build, so compare sides only over rounds."""
    sides = ["base", "shim"] if a.base_shim else ["shim"]
    ctx.section(f"{a.rounds} rounds of decode.py seed {a.steps}, NB_STACKS=all"
                + (f", against {a.base_shim}" if a.base_shim else ""))
    got = {}  # side -> metric -> values
    for i in range(a.rounds):
        for side in abba(i, sides):
            tag = f"{side}-{i}"
            env = dict(ctx.gpu_env(), LD_PRELOAD=ctx.build.shim if side == "shim" else os.path.abspath(a.base_shim),
                       NB_OUT=ctx.path(tag), NB_PRINT_TABLE="0", NB_STACKS="all", NB_LOG="debug")
            out = ctx.run(ctx.decode("seed", a.steps), env=env, log=tag)
            if ctx.dry:
                continue
            table = ctx.path(tag + ".table.txt")
            costs = stack_footer(table)
            if costs is None:
                raise SystemExit(f"stack-decode: no stack footer from {tag} (exit {out.rc}, work/{tag}.log)")
            stacks = "".join(line for line in footer_lines(table) if line.startswith("Stacks taken"))
            row = {"native us": costs[0], "Python us": costs[1], "median stack us": costs[2],
                   "native frames": stack_line(stacks, "per stack", "per stack ", " native frames"),
                   "Python frames": stack_line(stacks, "per stack", " native frames and ", " Python frames"),
                   "memo share %": stack_line(out, "frames walked by nb's unwinder", "unwinder: ", "% of them")}
            # The exit status is told, not judged: a sanitizer build's leak
            # report at exit, say, leaves the figures as they are.
            ctx.say(f"{tag}: " + ", ".join(f"{k} {v}" for k, v in row.items()) + (f" (exit {out.rc})" if out.rc else ""))
            for k, v in row.items():
                if v is not None:
                    got.setdefault(side, {}).setdefault(k, []).append(v)
    if ctx.dry:
        return
    metrics = list(next(iter(got.values())).keys())
    ctx.say("| metric | " + " | ".join(f"{s}: median of {a.rounds} (min–max)" for s in sides) + " |")
    ctx.say("| --- |" + " --- |" * len(sides))
    for m in metrics:
        cells = []
        for s in sides:
            xs = got.get(s, {}).get(m, [])
            cells.append(f"**{statistics.median(xs):.2f}** ({min(xs):.2f}–{max(xs):.2f})" if xs else "–")
        ctx.say(f"| {m} | " + " | ".join(cells) + " |")


def launch_runs(ctx, reps, bursts, cupti, nb_modes):
    """The launch-bound loop (launch_loop): per configuration, REPS processes,
    each the added ns per launch from its on/off bursts."""
    added = {}
    off = {}
    for r in range(reps):
        for flags in cupti:
            out = ctx.run([ctx.build.bench("launch_loop"), bursts, "cupti:" + flags], env=ctx.gpu_env(), log="launch")
            added.setdefault("cupti " + flags, []).append(out.value("added"))
            off.setdefault("cupti " + flags, []).append(out.value("off"))
        for mode in nb_modes:
            env = dict(ctx.gpu_env(), **ctx.nb_env(mode, f"l-{mode}-{r}", NB_TRIGGER="signal"))
            out = ctx.run([ctx.build.bench("launch_loop"), bursts, "nb"], env=env, log="launch")
            added.setdefault("nb " + mode, []).append(out.value("added"))
            off.setdefault("nb " + mode, []).append(out.value("off"))
    rows = {}
    for k, xs in added.items():
        xs = [x for x in xs if x is not None]
        if xs:
            rows[k] = {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs),
                       "off": statistics.median([x for x in off[k] if x is not None])}
    return rows


def say_launch(ctx, rows):
    ctx.say("| configuration | processes | added ns per launch (median) | min | max | launch ns when off |")
    ctx.say("| --- | --- | --- | --- | --- | --- |")
    for k, r in rows.items():
        ctx.say(f"| {k} | {r['n']} | **{r['median']:.0f}** | {r['min']:.0f} | {r['max']:.0f} | {r['off']:.0f} |")


@scenario("launch-gpu", gpu=True,
          backs="performance.md: what CUPTI's activity and each nb join add to one launch (an empty kernel, "
                "on/off inside each process)",
          options=[option("--reps", type=int, default=3), option("--bursts", type=int, default=400),
                   option("--cupti", type=csv, default=["act", "act+ts+cb+flush"],
                          help="CUPTI variations without nb ('+' between flags of one)"),
                   option("--nb", type=csv, default=["nostacks", "callback", "nojoin"], help="nb modes")])
def launch_gpu(ctx, a):
    """An empty kernel launched in bursts of 500 (workloads/launch_loop.cu),
    the tracer going off and on every 10 bursts inside the process, so both
    sides run at the machine's speed of the moment: CUPTI used directly
    (cupti_floor.c: act = kernel + copy + set activity; ts, cb, flush = what
    nb's callback join adds) and nb (SIGUSR2 under NB_TRIGGER=signal) in
    each mode. One figure per process, added ns per launch; REPS rounds."""
    ctx.section(f"launch-bound loop, {a.reps} rounds")
    say_launch(ctx, launch_runs(ctx, a.reps, a.bursts, [c.replace("+", ",") for c in a.cupti], a.nb))


@scenario("compare", gpu=True,
          backs="performance.md: nb and every peer on the decode loop in one table (in-process pairs, process "
                "pairs for nb default, the launch-bound case)",
          options=[option("--pairs", type=int, default=10, help="in-process pairs per mode"),
                   option("--process-pairs", type=int, default=20, help="process pairs of nb default (0: none)"),
                   option("--deadline", type=float, default=420, help="at most this many s of process pairs"),
                   option("--reps", type=int, default=3, help="processes per launch-bound configuration (0: none)")])
def compare(ctx, a):
    """One table, one run: the decode loop under bare; nb default; nb
    NB_STACKS=all; nb NB_TORCH_ALLOCS=1 (against bare with the same
    cudaMallocAsync backend); CUPTI's activity alone (the floor of any
    CUPTI-based tracer); torch.profiler CUDA-only and CPU + CUDA; memory
    history stacks="python" and "all". Ratios from on/off pairs inside one
    process for each, ABBA; process pairs for nb default, the figure a user
    sees; and the launch-bound loop: nb's added ns per launch next to
    CUPTI alone's. Writes compare.md (the table with date, machine and
    command) into the output folder."""
    targets = {"default": "≤ 1.05", "stacksall": "≤ 1.20", "torchallocs": "≤ 1.20, below memory history all"}
    ctx.section("in-process pairs")
    rows = inprocess_runs(ctx, ["default", "stacksall", "torchallocs"] + PEERS, a.pairs)
    launch = {}
    if a.reps:
        ctx.section("launch-bound loop")
        launch = launch_runs(ctx, a.reps, 400, ["act"], ["default"])
    proc = None
    if a.process_pairs:
        ctx.section(f"process pairs of nb default, at most {a.process_pairs} rounds or {a.deadline:.0f} s")
        proc = process_pairs(ctx, ["default"], a.process_pairs, a.deadline).row("default")
    lines = [f"Measured {datetime.date.today()} on {machine(ctx)}:", "",
             f"    bench/nbbench compare --pairs {a.pairs} --process-pairs {a.process_pairs} --deadline "
             f"{a.deadline:.0f} --reps {a.reps}", "",
             "| mode | how paired | pairs | median vs bare | spread (min–max) | target |",
             "| --- | --- | --- | --- | --- | --- |"]
    for mode, r in rows.items():
        lines.append(f"| {MODE_NAMES.get(mode, PEER_NAMES.get(mode, mode))} | in one process | {r['pairs']} | "
                     f"**{r['median']:.3f}** | {r['min']:.3f}–{r['max']:.3f} | {targets.get(mode, '')} |")
    if proc and proc["pairs"]:
        lines.append(f"| {MODE_NAMES['default']} | process pairs | {proc['pairs']} | **{proc['median']:.3f}** | "
                     f"{proc['min']:.3f}–{proc['max']:.3f} | ≤ 1.10 |")
    for k, r in launch.items():
        lines.append(f"| launch-bound loop, {k} | in one process | {r['n']} processes | **+{r['median']:.0f} ns** "
                     f"per launch (of {r['off']:.0f}) | {r['min']:.0f}–{r['max']:.0f} ns | |")
    for line in lines:
        ctx.say(line)
    if not ctx.dry:
        with open(ctx.keep("compare.md"), "w") as f:
            f.write("\n".join(lines) + "\n")


def machine(ctx):
    gpu = ctx.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], log="machine")
    return f"{gpu.strip() if gpu.rc == 0 and gpu.strip() else 'no GPU'} ({os.cpu_count()} CPUs, {platform.node()})"
