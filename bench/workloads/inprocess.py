"""The decode loop (decode.py) timed in on/off pairs inside one process, for
nb and for its peers, so that the machine's process-to-process noise drops
out of every pair (bench/nbb/pairs.py: ABBA, ratios, medians).

    python3 bench/workloads/inprocess.py --modes nb,cupti,memhist-python,... [--pairs 10]

Modes, measured in this order whatever order they are given in (a mode
that starts a CUPTI client of its own comes after nb, which then leaves
CUPTI to it):
  nb              nb recording; the process must run under the shim with
                  NB_TRIGGER=signal and NB_OUT set: SIGUSR2 opens a window
                  (the next CUDA call arms nb, before the clock starts) and
                  SIGUSR2 closes it; the window's files are awaited off the
                  clock, its table's footer lines printed, the files removed.
                  Off is nb dormant (about 7 ns a hooked call): bare.
  cupti           CUPTI's kernel, copy and set activity alone, no nb: the
                  floor of any CUPTI-based tracer (workloads/cupti_floor.c,
                  path in NBB_CUPTI_FLOOR)
  memhist-python  torch.cuda.memory._record_memory_history(stacks="python")
  memhist-all     the same, stacks="all"
  prof-cuda       torch.profiler, CUDA activity only
  prof-cpu-cuda   torch.profiler, CPU + CUDA
Each switch on and off happens outside the timed loop, for every mode.
Prints one line per pair and per mode 'inprocess MODE pairs N median R ...'.
"""
import ctypes
import glob
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from nbb.footer import footer_lines  # noqa: E402
from nbb.pairs import in_process  # noqa: E402
from workloads.decode import Decoder  # noqa: E402

ORDER = ["nb", "cupti", "memhist-python", "memhist-all", "prof-cuda", "prof-cpu-cuda"]


class NbWindow:
    """nb armed and disarmed by SIGUSR2 (NB_TRIGGER=signal)."""

    def __init__(self, torch):
        self.torch = torch
        self.prefix = os.environ["NB_OUT"]
        self.windows = 0

    def __call__(self, on):
        os.kill(os.getpid(), signal.SIGUSR2)
        if on:
            self.torch.cuda.synchronize()  # the first CUDA call after the signal arms nb
            return
        self.windows += 1
        table = f"{self.prefix}.w{self.windows}.table.txt"
        deadline = time.time() + 120
        while not (os.path.exists(table) and os.path.getsize(table) > 0):
            if time.time() > deadline:
                sys.exit(f"inprocess: nb's window {self.windows} was not written")
            time.sleep(0.01)
        # The table is not nb's last file of a window (source lines and
        # folded stacks follow): wait until no file of it is being written
        # (nb's <name>.partial) twice in a row, then remove what is there.
        # One may still vanish in between (nb links a file in, then unlinks
        # its .partial).
        quiet = 0
        while quiet < 2 and time.time() < deadline:
            busy = glob.glob(f"{self.prefix}.w{self.windows}.*.partial*")
            quiet = 0 if busy else quiet + 1
            time.sleep(0.05)
        for line in footer_lines(table):  # nb's own account of its cost
            print(f"footer w{self.windows}", line, flush=True)
        for f in glob.glob(f"{self.prefix}.w{self.windows}.*"):
            try:
                os.remove(f)
            except FileNotFoundError:
                pass


class CuptiFloor:
    def __init__(self):
        self.lib = ctypes.CDLL(os.environ["NBB_CUPTI_FLOOR"])
        self.lib.nbb_cupti_on.argtypes = [ctypes.c_char_p]

    def __call__(self, on):
        rc = self.lib.nbb_cupti_on(b"act") if on else self.lib.nbb_cupti_off()
        if rc:
            sys.exit(f"inprocess: CUPTI returned {rc}")


class Profiler:
    def __init__(self, torch, cpu):
        from torch.profiler import ProfilerActivity
        self.profile = torch.profiler.profile
        self.acts = [ProfilerActivity.CUDA] + ([ProfilerActivity.CPU] if cpu else [])
        self.prof = None

    def __call__(self, on):
        if on:
            self.prof = self.profile(activities=self.acts)
            self.prof.__enter__()
        else:
            self.prof.__exit__(None, None, None)
            self.prof = None


class MemoryHistory:
    def __init__(self, torch, stacks):
        self.memory, self.stacks = torch.cuda.memory, stacks

    def __call__(self, on):
        if on:
            self.memory._record_memory_history(max_entries=1_000_000, stacks=self.stacks)
        else:
            self.memory._record_memory_history(enabled=None)


def switch_for(mode, torch):
    return {"nb": lambda: NbWindow(torch), "cupti": CuptiFloor,
            "memhist-python": lambda: MemoryHistory(torch, "python"),
            "memhist-all": lambda: MemoryHistory(torch, "all"),
            "prof-cuda": lambda: Profiler(torch, False),
            "prof-cpu-cuda": lambda: Profiler(torch, True)}[mode]()


def main(argv):
    modes = argv[argv.index("--modes") + 1].split(",") if "--modes" in argv else ["nb"]
    pairs = int(argv[argv.index("--pairs") + 1]) if "--pairs" in argv else 10
    unknown = [m for m in modes if m not in ORDER]
    if unknown:
        sys.exit(f"inprocess: unknown mode {unknown[0]}; modes: {', '.join(ORDER)}")
    d = Decoder()
    d.warm()
    for mode in sorted(modes, key=ORDER.index):
        def report(i, off, on, mode=mode):
            print(f"pair {mode} {i} off {off:.4f} on {on:.4f} ratio {on / off:.3f}", flush=True)

        p = in_process(pairs, d.timed, switch_for(mode, d.torch), label=mode, base="off", report=report)
        r = p.row(mode)
        print(f"inprocess {mode} pairs {r['pairs']} median {r['median']:.3f} min {r['min']:.3f} "
              f"max {r['max']:.3f} off_median {r['base_median_s']:.4f} on_median {r['median_s']:.4f} "
              f"ratios {' '.join(f'{x:.3f}' for x in r['ratios'])}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
