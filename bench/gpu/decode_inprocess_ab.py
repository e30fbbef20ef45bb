"""nb's overhead on the seed's decode loop, measured inside one process: the
loop alternates between nb recording and nb dormant (NB_TRIGGER=signal,
toggled by SIGUSR2, no schedule: each signal opens or closes a window), in
ABBA order, so that the machine's process-to-process noise (±30% on the
GPU machine) drops out of every pair. Dormant costs about 7 ns per hooked
call (docs/performance.md), so "off" stands for bare.

    LD_PRELOAD=.../libnb_shim.so NB_TRIGGER=signal NB_OUT=/tmp/ab/x NB_PRINT_TABLE=0 \\
      python3 bench/gpu/decode_inprocess_ab.py bench/decode_loop.py [PAIRS]

The workload is decode_loop.py's own (its source up to its timing loop).
Each window's files are checked for, then removed. Prints one line per pair
and a summary line 'inprocess pairs N median on/off R ...'."""
import glob
import os
import signal
import statistics
import sys
import time

src = open(sys.argv[1]).read()
g = {"__name__": "__main__"}
exec(compile(src.split("ts = []")[0], sys.argv[1], "exec"), g)  # model, prompt, decode(), warm-up
decode, torch = g["decode"], g["torch"]
prefix = os.environ["NB_OUT"]
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
windows = 0


def timed(on):
    """One 32-step loop, recorded by nb (on) or with nb dormant (off)."""
    global windows
    if on:
        os.kill(os.getpid(), signal.SIGUSR2)
        torch.cuda.synchronize()  # the first CUDA call after the signal arms nb: before the clock starts
    t0 = time.perf_counter()
    decode(32)
    t = time.perf_counter() - t0
    if on:
        os.kill(os.getpid(), signal.SIGUSR2)  # closes the window; nb writes it on its own thread
        windows += 1
        table = f"{prefix}.w{windows}.table.txt"
        deadline = time.time() + 120
        while not (os.path.exists(table) and os.path.getsize(table) > 0):
            if time.time() > deadline:
                sys.exit(f"window {windows} was not written")
            time.sleep(0.01)
        with open(table) as tf:  # nb's own account of what the window's stacks cost
            for line in tf:
                if line.startswith(("Stacks taken", "Calls recorded without their stack")):
                    print(f"footer w{windows}", line.strip(), flush=True)
        for f in glob.glob(f"{prefix}.w{windows}.*"):
            os.remove(f)
    return t


timed(True)  # the first arming loads and starts CUPTI: not timed
timed(False)
ratios, ons, offs = [], [], []
for i in range(pairs):
    order = (False, True) if i % 2 == 0 else (True, False)
    t = {on: timed(on) for on in order}
    ons.append(t[True])
    offs.append(t[False])
    ratios.append(t[True] / t[False])
    print(f"pair {i} off {t[False]:.4f} on {t[True]:.4f} ratio {ratios[-1]:.3f}", flush=True)
print(f"inprocess pairs {pairs} median on/off {statistics.median(ratios):.3f} "
      f"ratios {' '.join(f'{r:.3f}' for r in ratios)} off_median {statistics.median(offs):.4f} "
      f"on_median {statistics.median(ons):.4f}", flush=True)
