"""Added cost of a stack (native + Python) per device allocation: cudaMalloc +
cudaFree on the fake runtime (test/fake_cuda) through ctypes.PyDLL, which keeps
the GIL, from a Python stack DEPTH frames deep, in bursts with pauses so the
collector drains between them. Prints ns per call (median of the bursts).

SHAPE "functions" (the default): DEPTH nested Python functions, which the
interpreter runs in one C frame, so the native stack stays shallow.
"objects": DEPTH nested callable objects, as PyTorch's module calls are:
each one also goes through the interpreter's C call path (about 5 native
frames a level; DEPTH 12 fills NB_STACK_DEPTH's 64). With stacks, nb's
table footer says what the stacks themselves cost.

    LD_LIBRARY_PATH=build/test/fake_cuda [LD_PRELOAD=build/shim/libnb_shim.so NB_STACKS=...] \\
        python3 bench/workloads/alloc_stack.py [DEPTH] [BURSTS] [functions|objects] [PAUSE_MS] [gil|released]

(bench/nbbench alloc-stack runs it bare and under nb, in alternating rounds.)

PAUSE_MS (default 5) between bursts; 0 makes a flood, which the collector
must keep up with (the table's footer counts what it could not keep).
"""
import ctypes, statistics, sys, time

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 20
BURSTS = int(sys.argv[2]) if len(sys.argv) > 2 else 40
PER_BURST = 256
# "gil" (the default): ctypes.PyDLL keeps the GIL during the call, so nb reads
# the Python frames through the C API; "released": ctypes.CDLL releases it,
# as every PyTorch op does, so nb reads them in place (python_frames_released.cpp).
GIL = sys.argv[5] if len(sys.argv) > 5 else "gil"
if GIL not in ("gil", "released"):
    sys.exit(f"alloc_stack.py: the fifth argument is gil or released, not {GIL!r}")
rt = (ctypes.PyDLL if GIL == "gil" else ctypes.CDLL)("libcudart.so.13")
malloc, free = rt.cudaMalloc, rt.cudaFree
malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
free.argtypes = [ctypes.c_void_p]


def burst():
    p = ctypes.c_void_p()
    ref = ctypes.byref(p)
    t0 = time.perf_counter_ns()
    for _ in range(PER_BURST):
        malloc(ref, 1 << 20)
        free(p)
    return (time.perf_counter_ns() - t0) / (2 * PER_BURST)


def at_depth(n):
    if n > 0:
        return at_depth(n - 1)
    times = []
    for _ in range(BURSTS):
        if PAUSE_S:
            time.sleep(PAUSE_S)
        times.append(burst())
    return times


class Level:
    def __init__(self, n):
        self.n = n

    def __call__(self):
        return Level(self.n - 1)() if self.n > 0 else at_depth(0)


SHAPE = sys.argv[3] if len(sys.argv) > 3 else "functions"
PAUSE_S = (float(sys.argv[4]) if len(sys.argv) > 4 else 5.0) / 1000
times = Level(DEPTH)() if SHAPE == "objects" else at_depth(DEPTH)
print(f"ns_per_call {statistics.median(times):.0f}")
