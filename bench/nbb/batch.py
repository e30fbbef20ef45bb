"""Running on the GPU machine: `carry` puts what it needs from a build here
into one git-ignored folder (the build tree's layout, plus the programs built
with nvcc), and `gpu-batch` runs the GPU scenarios that refresh the docs, in
parts that each fit one device command, each part's results in two files."""
import os
import shutil
import subprocess
import sys
import tarfile
import time
import traceback

from .registry import option, scenario
from .run import GPU_PROGRAMS, ROOT, WORKLOADS

# What the GPU machine needs from a build tree; paths that a build does not
# have are skipped (a build without tests has no fakes).
CARRIED = ["shim/libnb_shim.so", "shim/nb-libs", "collector/nb-options", "scripts/nbprof", "scripts/nb-demo",
           "scripts/nb-stats",
           "bench/nb-bench-launch", "bench/nb-bench-stack-sites", "bench/nb-bench-clock", "bench/nb-bench-order-join",
           "test/fake_cuda",
           "test/programs/libpy_frames_probe.so"]

# The batch: (scenario, its options, estimated seconds on the H200) by part.
# Each part is planned for under 7 minutes, so that one device command (10
# minutes at most) holds it. A part starts no scenario that its estimate says
# would end after PART_BUDGET_S, and stops any process still running at
# PART_DEADLINE_S, so that its results are packed and come back.
PARTS = [
    [("demo", [], 15), ("device-check", [], 100), ("window-check", [], 120), ("handover", [], 45),
     ("interrupt", [], 25), ("census", ["--programs", "bursts,generate,jax"], 100)],
    [("memory-check", [], 200), ("corr-order", [], 35), ("py-frames", ["--bench"], 15), ("stack-cold", [], 35),
     ("launch-cost", ["--pairs", "5"], 30), ("alloc-stack", ["--rounds", "3"], 20), ("stack-sites", ["--pairs", "3"], 10)],
    [("compare", ["--process-pairs", "0"], 200), ("launch-gpu", ["--cupti", "act+ts+cb+flush", "--reps", "2"], 50),
     ("launch-cost", ["--pairs", "5", "--dormant"], 30), ("clock", [], 5)],
    [("overhead", ["--modes", "nostacks,callback,nojoin"], 90),
     ("pairs", ["--modes", "nostacks,stacksall", "--rounds", "20", "--deadline", "180", "--report", "threads"], 210)],
]
PART_BUDGET_S = 480
PART_DEADLINE_S = 540


def build_gpu_programs(build_dir, only_missing=False):
    """Builds the nvcc programs (run.GPU_PROGRAMS) into BUILD/bench."""
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    bindir = os.path.join(build_dir, "bench")
    os.makedirs(bindir, exist_ok=True)
    for name, cmd in GPU_PROGRAMS.items():
        out = os.path.join(bindir, name)
        if only_missing and os.path.exists(out):
            continue
        cmd = [c.format(cuda=cuda, out=out, src=WORKLOADS) for c in cmd]
        print("building", name, flush=True)
        subprocess.run(cmd, check=True)


@scenario("carry", gpu=False, backs="how the GPU scenarios get nb's build onto the GPU machine",
          options=[option("--to", default=os.path.join(ROOT, ".carry")),
                   option("--no-nvcc", action="store_true", help="leave the nvcc programs to the GPU machine")])
def carry(ctx, a):
    """Copies what the GPU machine needs from the build (--build) into one
    git-ignored folder (default .carry, in the build tree's layout, so
    nbprof finds the shim next to it) and builds the programs that need
    nvcc there (cuBLAS, CUPTI, the launch-bound loop, the leak, threads,
    graphs). Name the folder in the device tool's `carry`, and give it to
    every scenario as --build."""
    dest = os.path.abspath(a.to)
    if ctx.dry:
        print(f"would copy {CARRIED} from {ctx.build.path} to {dest} and build {list(GPU_PROGRAMS)}")
        return
    shutil.rmtree(dest, ignore_errors=True)
    for rel in CARRIED:
        src = os.path.join(ctx.build.path, rel)
        if not os.path.exists(src):
            print("not in the build, not carried:", rel)
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        if os.path.isdir(src):  # of the fakes' folder, only the libraries
            shutil.copytree(src, os.path.join(dest, rel), symlinks=True, ignore=lambda d, names, rel=rel: [
                n for n in names if n.endswith(".p") or (rel == "test/fake_cuda" and not n.startswith("lib"))])
        else:
            shutil.copy2(src, os.path.join(dest, rel))
    if not a.no_nvcc:
        build_gpu_programs(dest)
    rev = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True)
    with open(os.path.join(dest, "COMMIT"), "w") as f:
        f.write(rev.stdout.strip() or "unknown")
    exclude = subprocess.run(["git", "-C", ROOT, "rev-parse", "--git-path", "info/exclude"], capture_output=True,
                             text=True).stdout.strip()
    line = "/" + os.path.relpath(dest, ROOT) + "/"
    if exclude and not line.startswith("/.."):
        path = os.path.join(ROOT, exclude) if not os.path.isabs(exclude) else exclude
        os.makedirs(os.path.dirname(path), exist_ok=True)
        known = open(path).read().split() if os.path.exists(path) else []
        if line not in known:
            with open(path, "a") as f:
                f.write(line + "\n")
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(dest) for n in names)
    print(f"{dest}: {size / 2**20:.1f} MiB (the device tool carries 64 MiB at most)")


def plan(part):
    return [(i, p) for i, p in enumerate(PARTS, 1) if part in ("all", str(i))]


@scenario("gpu-batch", gpu=True,
          backs="every GPU figure of performance.md and every check of gpu-validation.md, refreshed in one batch",
          options=[option("--part", default="all", help=f"K/{len(PARTS)} (one part), or all"),
                   option("--list", action="store_true", help="print the plan and its time estimates")])
def gpu_batch(ctx, a):
    """Runs the GPU scenarios that refresh docs/performance.md and
    docs/gpu-validation.md, in parts of under 9 minutes each (one device
    command each). A part's results come back as two files in --out:
    partK-summary.txt (every scenario's summary, the machine, the build) and
    partK.tar.gz (each scenario's folder: summary, logs, tables; traces and
    snapshots over 4 MB left out)."""
    k = a.part.split("/")[0]
    if k != "all" and (not k.isdigit() or not 1 <= int(k) <= len(PARTS)):
        raise SystemExit(f"gpu-batch: --part is K/{len(PARTS)} with K from 1 to {len(PARTS)}, or all")
    todo = plan(k)
    if a.list or ctx.dry:
        for i, scenarios in todo:
            print(f"part {i}/{len(PARTS)}, about {sum(s for _, _, s in scenarios) / 60:.1f} min:")
            for name, opts, secs in scenarios:
                print(f"  bench/nbbench {name} {' '.join(opts)}    (~{secs} s)")
        print(f"in all about {sum(s for _, p in todo for _, _, s in p) / 60:.1f} min")
        if a.list:
            return
    from .cli import run_scenario  # noqa: E402  (cli imports this module)
    for i, scenarios in todo:
        part_dir = os.path.join(ctx.out, f"part{i}")
        summary = os.path.join(ctx.out, f"part{i}-summary.txt")
        started = time.time()
        os.environ["NBBENCH_DEADLINE"] = str(started + PART_DEADLINE_S)
        if not ctx.dry:
            os.makedirs(part_dir, exist_ok=True)
            with open(summary, "w") as f:
                f.write(environment(ctx))
            try:
                build_gpu_programs(ctx.build.path, only_missing=True)
            except (OSError, subprocess.CalledProcessError) as e:
                note(summary, f"building the nvcc programs failed ({e}); the scenarios that need them will fail")
        for n, (name, opts, secs) in enumerate(scenarios):
            out = os.path.join(part_dir, f"{n + 1}-{name}")
            if time.time() - started + secs > PART_BUDGET_S and not ctx.dry:
                note(summary, f"\n## {name} {' '.join(opts)}: skipped, it would end after the part's "
                              f"{PART_BUDGET_S} s")
                continue
            t0 = time.time()
            try:
                run_scenario(name, opts + ["--build", ctx.build.path, "--out", out, "--python", ctx.python]
                             + (["--dry-run"] if ctx.dry else []))
                status = "done"
            except (Exception, SystemExit) as e:  # one failing scenario does not stop the part
                status = "failed: " + (str(e).strip().splitlines() or [type(e).__name__])[0]
                if not ctx.dry:
                    with open(os.path.join(out, "error.txt"), "w") as f:
                        f.write(traceback.format_exc())
            if not ctx.dry:
                note(summary, f"\n## {name} {' '.join(opts)} ({status}, {time.time() - t0:.0f} s)")
                if os.path.exists(os.path.join(out, "summary.txt")):
                    with open(os.path.join(out, "summary.txt")) as s, open(summary, "a") as f:
                        f.write(s.read())
        if not ctx.dry:
            note(summary, f"\npart {i}: {time.time() - started:.0f} s")
            with tarfile.open(os.path.join(ctx.out, f"part{i}.tar.gz"), "w:gz") as t:
                t.add(part_dir, arcname=f"part{i}", filter=kept)
            shutil.rmtree(part_dir)
    if not ctx.dry and not os.listdir(ctx.work):
        os.rmdir(ctx.work)


def kept(member):
    """What of a scenario's folder comes back: its summary, logs and tables,
    and other files under 1 MB (not the traces and snapshots of whole runs:
    the device tool brings back 16 MiB a file at most)."""
    small = (".txt", ".log", ".md")
    return member if member.isdir() or member.name.endswith(small) or member.size < 1 << 20 else None


def note(path, line):
    print(line, flush=True)
    with open(path, "a") as f:
        f.write(line + "\n")


def environment(ctx):
    def out(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout.strip()
        except OSError:
            return "(not available)"

    commit = os.path.join(ctx.build.path, "COMMIT")
    return "\n".join([
        f"date {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"gpu {out(['nvidia-smi', '-L'])}",
        f"python {sys.version.split()[0]}; " + out([ctx.python, "-c", "import torch; print('torch', torch.__version__, "
                                                                    "'cuda', torch.version.cuda)"]),
        f"cpus {os.cpu_count()}",
        f"build {ctx.build.path} at {open(commit).read().strip() if os.path.exists(commit) else 'unknown commit'}",
        "", ""])

