"""How a scenario runs things: where nb's build products are, the nb modes
(environments) it compares, running a process and keeping its output, and
the scenario's output folder."""
import collections
import itertools
import os
import shlex
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCH)
WORKLOADS = os.path.join(BENCH, "workloads")

# nb configurations by name. Every nb run also gets NB_OUT (a prefix in the
# scenario's work folder) and NB_PRINT_TABLE=0.
NB_MODES = {
    "default": {},  # as a user runs it: order join, stacks on memory calls
    "nostacks": {"NB_STACKS": "none"},  # order join, no stacks: the overhead target's figure
    "stacksall": {"NB_STACKS": "all"},
    "stacksall16": {"NB_STACKS": "all", "NB_STACK_DEPTH": "16"},
    "libunwind": {"NB_STACKS": "all", "NB_UNWIND": "libunwind"},
    "callback": {"NB_STACKS": "none", "NB_CUPTI_JOIN": "callback"},
    "nojoin": {"NB_STACKS": "none", "NB_CUPTI_JOIN": "none"},  # CUPTI activity, no join
    "host": {"NB_STACKS": "none", "NB_DEVICE": "0"},  # host calls only, no CUPTI
    "dormant": {"NB_TRIGGER": "signal"},  # never armed
    "torchallocs": {"NB_TORCH_ALLOCS": "1"},  # every tensor a CUDA call, stacks on them
}

# Programs built with nvcc for the GPU machine (`nbbench carry`), in BUILD/bench.
GPU_PROGRAMS = {
    "libnbb_cupti_floor.so": ["gcc", "-O2", "-shared", "-fPIC", "-I{cuda}/include", "-o", "{out}",
                              "{src}/cupti_floor.c", "-L{cuda}/lib64", "-lcupti", "-Wl,-rpath,{cuda}/lib64"],
    "launch_loop": ["nvcc", "-O2", "-arch=sm_90", "-o", "{out}", "{src}/launch_loop.cu"],
    "cublas_static": ["nvcc", "-O2", "-arch=sm_90", "-o", "{out}", "{src}/cublas_static.cu", "-lcublas"],
    "leak": ["nvcc", "-g", "-O1", "-arch=sm_90", "-o", "{out}", "{src}/leak.cu"],
    "threads_join": ["nvcc", "-O2", "-arch=sm_90", "-o", "{out}", "{src}/threads_join.cu"],
    "graph_join": ["nvcc", "-O2", "-arch=sm_90", "-o", "{out}", "{src}/graph_join.cu"],
}


class Missing(Exception):
    pass


class Build:
    """A build tree (or the carried copy of one, which has the same layout)."""

    def __init__(self, path, strict=True):
        self.path = os.path.abspath(path)
        self.strict = strict  # False (--dry-run): a missing file is noted, not fatal
        self.missing = []

    def file(self, *parts):
        p = os.path.join(self.path, *parts)
        if not os.path.exists(p) and not self.strict:
            self.missing.append(p)
        elif not os.path.exists(p):
            raise Missing(f"{p} is missing: build it (ninja -C BUILD), or on the GPU machine carry it "
                          f"(bench/nbbench carry --build BUILD)")
        return p

    shim = property(lambda self: self.file("shim", "libnb_shim.so"))
    nbprof = property(lambda self: self.file("scripts", "nbprof"))
    fake_dir = property(lambda self: self.file("test", "fake_cuda"))
    probe_lib = property(lambda self: self.file("test", "programs", "libpy_frames_probe.so"))
    libunwind = property(lambda self: self.file("shim", "nb-libs", "libunwind.so.8"))

    def bench(self, name):
        return self.file("bench", name)


class Context:
    """One scenario's run: its options, its output folder, its work folder,
    and how it runs processes (for real, or printed with --dry-run)."""

    def __init__(self, name, build, out, dry_run=False, python=None):
        self.name = name
        self.build = Build(build, strict=not dry_run)
        self.out = os.path.abspath(out)
        self.dry = dry_run
        self.python = python or sys.executable or "python3"
        self.work = os.path.join(self.out, "work")
        self.started = time.time()
        if not self.dry:
            os.makedirs(self.work, exist_ok=True)

    # --- output -----------------------------------------------------------------
    def say(self, *words):
        """A line for the summary: printed, and kept in OUT/summary.txt
        (nothing with --dry-run, where there is nothing to say)."""
        if self.dry or not words:
            return
        line = " ".join(str(w) for w in words)
        print(line, flush=True)
        with open(os.path.join(self.out, "summary.txt"), "a") as f:
            f.write(line + "\n")

    def section(self, title):
        if self.dry:
            print(f"== {self.name}: {title}")
        self.say(f"== {self.name}: {title}")

    def path(self, name):
        return os.path.join(self.work, name)

    def keep(self, name):
        """A file of the scenario's output folder (not its work folder)."""
        return os.path.join(self.out, name)

    # --- environments --------------------------------------------------------------
    def nb_env(self, mode, tag, **extra):
        """The environment of an nb run in `mode` (NB_MODES), or {} for bare."""
        if mode == "bare":
            return dict(extra)
        env = {"LD_PRELOAD": self.build.shim, "NB_OUT": self.path(tag), "NB_PRINT_TABLE": "0"}
        env.update(NB_MODES[mode])
        env.update(extra)
        return env

    def gpu_env(self):
        """What every process on the GPU machine gets: CUPTI on the loader's
        path (NBB_CUDA_LIB, default /usr/local/cuda/lib64)."""
        lib = os.environ.get("NBB_CUDA_LIB", "/usr/local/cuda/lib64")
        old = os.environ.get("LD_LIBRARY_PATH", "")
        return {"LD_LIBRARY_PATH": lib + (":" + old if old else ""), "PYTHONUNBUFFERED": "1"}

    def workload(self, name):
        return os.path.join(WORKLOADS, name)

    def decode(self, *args):
        return [self.python, self.workload("decode.py"), *map(str, args)]

    # --- running --------------------------------------------------------------------
    def run(self, cmd, env=None, log=None, timeout=600, background=False):
        """Runs cmd with os.environ + env; its stdout and stderr are kept in
        OUT/work/<log>.log (default: the program's name) and returned as one
        text (stdout first). With --dry-run, prints the command and returns ''."""
        env = {k: str(v) for k, v in (env or {}).items()}
        shown = self.shown(cmd, env)
        if self.dry:
            print("would run:", shown)
            return Result("", 0)
        timeout = self.time_left(timeout)
        full = dict(os.environ, **env)
        log_path = self.path((log or os.path.basename(str(cmd[1] if cmd[0] == self.python else cmd[0]))) + ".log")
        with open(log_path, "a") as f:
            f.write(f"$ {shown}\n")
        if background:
            return subprocess.Popen([str(c) for c in cmd], env=full, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        try:
            p = subprocess.run([str(c) for c in cmd], env=full, capture_output=True, text=True, timeout=timeout)
            text, rc = p.stdout + p.stderr, p.returncode
        except OSError as e:  # no such program here (nvidia-smi, nsys)
            text, rc = f"cannot run {cmd[0]}: {e}\n", 127
        except subprocess.TimeoutExpired as e:
            text = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            text += f"\n[timed out after {timeout} s]\n"
            rc = 124
        with open(log_path, "a") as f:
            f.write(text + f"[exit {rc}]\n")
        return Result(text, rc)

    def run_ahead(self, jobs, ahead=2, stop=None):
        """Runs `jobs` ((cmd, env, log) each, a workload built on
        decode.Decoder) one at a time, each started `ahead` runs early and
        held after its imports until its turn (decode.wait_for_go), so that
        only its GPU work and exit are on the clock of the run. Yields each
        job's Result in order. `stop()`, asked before each job from the
        second on, ends the run: what was started ahead is killed."""
        started = collections.deque()
        jobs = iter(jobs)
        n = 0
        try:
            while True:
                while len(started) <= ahead:
                    job = next(jobs, None)
                    if job is None:
                        break
                    started.append(Held(self, *job))
                if not started:
                    return
                if n and stop is not None and stop():
                    return
                yield started.popleft().result()
                n += 1
        finally:
            for h in started:
                h.cancel()

    @staticmethod
    def shown(cmd, env):
        """cmd with its environment in front, as a shell takes it."""
        words = [f"{k}={shlex.quote(str(v))}" for k, v in env.items()] + [shlex.quote(str(c)) for c in cmd]
        return " ".join(words)

    def check(self, fn, *args):
        """Runs an analysis (nbb/checks.py) on files a run wrote; with
        --dry-run, only says which."""
        if self.dry:
            print(f"would check: {fn.__name__}{args}")
            return True
        try:
            lines, ok = fn(*args)
        except (OSError, ValueError, KeyError) as e:
            lines, ok = [f"{fn.__name__}: cannot read: {e}"], False
        for line in lines:
            self.say("  " + line)
        self.say("PASS" if ok else "FAIL", fn.__doc__.strip().splitlines()[0])
        return ok

    def elapsed(self):
        return time.time() - self.started

    def time_left(self, seconds):
        """`seconds`, or less where a batch set a deadline for its part
        (NBBENCH_DEADLINE, epoch seconds): a process still running then is
        stopped, so that the part's results still come back."""
        deadline = float(os.environ.get("NBBENCH_DEADLINE", 0))
        return max(5, min(seconds, deadline - time.time())) if deadline else seconds


class Held:
    """A process started before its turn (Context.run_ahead): NBB_GO names
    the file it waits for after its imports; its output goes to a file of
    the work folder (a pipe could fill while it is held)."""

    count = itertools.count()

    def __init__(self, ctx, cmd, env, log):
        self.ctx = ctx
        self.env = {k: str(v) for k, v in (env or {}).items()}
        self.cmd = [str(c) for c in cmd]
        self.log = log
        if ctx.dry:
            return
        self.go = os.path.join(ctx.work, f"go-{next(Held.count)}")
        self.env["NBB_GO"] = self.go
        self.out = tempfile.TemporaryFile(mode="w+", dir=ctx.work)
        self.proc = subprocess.Popen(self.cmd, env=dict(os.environ, **self.env), stdout=self.out,
                                     stderr=subprocess.STDOUT, text=True)

    def result(self, timeout=600):
        if self.ctx.dry:
            return self.ctx.run(self.cmd, env=self.env, log=self.log)
        log_path = self.ctx.path((self.log or "held") + ".log")
        with open(log_path, "a") as f:
            f.write(f"$ {self.ctx.shown(self.cmd, self.env)}\n")
        open(self.go, "w").close()
        try:
            rc = self.proc.wait(timeout=self.ctx.time_left(timeout))
            tail = ""
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            tail = f"\n[timed out after {timeout} s]\n"
        self.out.seek(0)
        text = self.out.read() + tail
        self.out.close()
        os.remove(self.go)
        with open(log_path, "a") as f:
            f.write(text + f"[exit {rc}]\n")
        return Result(text, 124 if tail else rc)

    def cancel(self):
        if self.ctx.dry:
            return
        self.proc.kill()
        self.proc.wait()
        self.out.close()


class Result(str):
    """A run's output (stdout then stderr) with its exit status."""

    def __new__(cls, text, rc):
        r = super().__new__(cls, text)
        r.rc = rc
        return r

    def value(self, key, index=1, cast=float):
        """The word `index` places after the first word `key` of the output,
        or None."""
        for line in self.splitlines():
            words = line.split()
            if key in words:
                i = words.index(key) + index
                if i < len(words):
                    try:
                        return cast(words[i].rstrip(","))
                    except ValueError:
                        return None
        return None

    def lines(self, *prefixes):
        return [line for line in self.splitlines() if line.startswith(prefixes)]
