"""Checks shim/python_frames.cpp from a real interpreter, through the probe
library (py_frames_probe.cpp): usage: py_frames_check.py LIBPROBE.so [--bench]

ctypes.PyDLL calls keep the GIL, ctypes.CDLL calls release it; each probe call
stands for a CUDA call made at that line. Prints one line per check and the
captured stack; exits 1 if a check failed. Lines marked "# @name" are where
the frames must point.
"""
import ctypes
import sys
import threading
import time

LIB = sys.argv[1]
gil = ctypes.PyDLL(LIB)
nogil = ctypes.CDLL(LIB)
for lib in (gil, nogil):
    lib.nb_probe_capture.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.nb_probe_bench.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.nb_probe_bench.restype = ctypes.c_double
    lib.nb_probe_unknown_frames.restype = ctypes.c_ulonglong

if sys.version_info < (3, 9):  # no PyFrame_GetBack: the capture must stay off
    n = gil.nb_probe_capture_count()
    print(f"python {sys.version.split()[0]}: " + ("PASS (nothing captured)" if n == 0 else f"FAIL {n} frames"))
    sys.exit(0 if n == 0 else 1)

with open(__file__) as f:
    SOURCE = f.read().splitlines()
failed = []


def line(tag):
    marker = "# @" + tag
    return next(i + 1 for i, text in enumerate(SOURCE) if text.rstrip().endswith(marker))


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else ": " + str(detail)))
    if not ok:
        failed.append(name)


def capture():
    buf = ctypes.create_string_buffer(1 << 16)
    n = gil.nb_probe_capture(buf, len(buf))  # @capture
    frames = buf.value.decode().splitlines()
    assert n == len(frames)
    return frames


def level3():
    return capture()  # @level3


def level2():
    return level3()  # @level2


def level1():
    return level2()  # @level1


def recurse(depth, fn):
    if depth == 0:
        return fn()
    return recurse(depth - 1, fn)


def worker(out):
    out.append(capture())  # @worker


def spin(stop):
    while not stop:
        pass


def main():
    me = capture.__code__.co_filename
    frames = level1()  # @main
    print("stack:\n  " + "\n  ".join(frames))
    expected = [f"{me}:{line('capture')}:capture", f"{me}:{line('level3')}:level3",
                f"{me}:{line('level2')}:level2", f"{me}:{line('level1')}:level1",
                f"{me}:{line('main')}:main", f"{me}:{line('module')}:<module>"]
    check("under the GIL: file:line:function, innermost first", frames == expected, frames)

    frames = level1()  # @main2
    expected[4] = f"{me}:{line('main2')}:main"
    check("the same stack again (cached code ids)", frames == expected, frames)

    out = []
    t = threading.Thread(target=worker, args=(out,))
    t.start()
    t.join()
    check("a Python thread captures its own stack",
          out and out[0][:2] == [f"{me}:{line('capture')}:capture", f"{me}:{line('worker')}:worker"], out)

    check("a call that released the GIL captures nothing", nogil.nb_probe_capture_count() == 0)
    check("a native thread captures nothing while the GIL is held elsewhere", gil.nb_probe_native_thread() == 0)
    check("a native thread captures nothing while the GIL is free", nogil.nb_probe_native_thread() == 0)

    stop = []
    spinner = threading.Thread(target=spin, args=(stop,))
    spinner.start()
    counts = [nogil.nb_probe_capture_count() for _ in range(2000)]
    stop.append(1)
    spinner.join()
    check("without the GIL while another Python thread runs: nothing", not any(counts))

    # Code objects that die are not confused with the ones that take their
    # addresses: each generated function must be named as itself.
    wrong = []
    for i in range(200):
        ns = {}
        exec(compile(f"def gen_{i}(cap):\n    return cap()\n", f"<gen{i}>", "exec"), ns)
        got = ns[f"gen_{i}"](capture)[1]
        if got != f"<gen{i}>:2:gen_{i}":
            wrong.append(got)
        del ns
    check("short-lived code objects keep their own names", not wrong, wrong[:3])

    check("deep stacks: all frames, or max", recurse(40, gil.nb_probe_capture_count) == 40 + 3
          and recurse(40, lambda: gil.nb_probe_capture_max(5)) == 5)
    check("native frames in the evaluation loop are recognized", level_eval() >= 1)
    check("other code is not in the evaluation loop", gil.nb_probe_main_pc_is_eval() == 0)
    check("no frame went unnamed", gil.nb_probe_unknown_frames() == 0)
    check("no garbage collection runs inside a capture", no_gc_inside_capture())

    if "--bench" in sys.argv:
        bench()
    sub_interpreters()  # last: it turns PyGILState_Check off for good


def sub_interpreters():
    # Once a sub-interpreter exists PyGILState_Check answers 1 on every
    # thread; the capture must still see who holds the GIL, and leave the
    # sub-interpreter's own frames alone (the code table belongs to the main
    # interpreter's GIL).
    try:
        import _xxsubinterpreters as interpreters
    except ImportError:
        try:
            import _interpreters as interpreters
        except ImportError:
            print("skip sub-interpreters: no module")
            return
    sub = interpreters.create()
    check("sub-interpreter exists: a call without the GIL captures nothing", nogil.nb_probe_capture_count() == 0)
    check("sub-interpreter exists: a native thread captures nothing", gil.nb_probe_native_thread() == 0)
    check("sub-interpreter exists: the main interpreter still captures", len(level1()) >= 6)
    gil.nb_probe_last_count(1)
    try:
        interpreters.run_string(sub, f"import ctypes\nctypes.PyDLL({LIB!r}).nb_probe_capture_count()\n")
    except Exception as e:  # noqa: BLE001 (ctypes may not load in an isolated interpreter)
        print(f"skip capture inside a sub-interpreter: {type(e).__name__}: {e}")
    else:
        got = gil.nb_probe_last_count(0)
        check("inside a sub-interpreter: nothing captured", got == 0, got)
    interpreters.destroy(sub)


class Cycle:
    def __init__(self):
        self.me = self


def no_gc_inside_capture():
    # 3.11 makes frame objects for the walk and may collect garbage right
    # there; with a threshold of 1 it would, were the collector not off.
    import gc
    seen = []

    def note(phase, info):
        if phase == "start":
            seen.append(gil.nb_probe_in_capture())

    threshold = gc.get_threshold()
    gc.callbacks.append(note)
    gc.set_threshold(1)
    try:
        for _ in range(200):
            Cycle()
            recurse(20, gil.nb_probe_capture_count)
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(note)
    return bool(seen) and not any(seen)


def level_eval():
    return gil.nb_probe_eval_pcs()


def bench():
    # <module> → main → bench → <genexpr> → recurse × 18 → <lambda>: 23
    # frames, the innermost 20 captured.
    iters = 200000
    ns_cached = min(recurse(17, lambda: gil.nb_probe_bench(iters, 20)) for _ in range(5))
    print(f"bench: {ns_cached:.0f} ns per capture of 20 frames (same stack each time)")
    ns_nogil = min(recurse(17, lambda: nogil.nb_probe_bench(iters, 20)) for _ in range(5))
    print(f"bench: {ns_nogil:.1f} ns per call without the GIL (nothing captured)")
    # Fresh frames each time, as in a loop that calls into CUDA from new calls:
    # the difference between calling a no-op and a capture through
    # <module> → main → bench → timed → recurse × 18 (22 frames).
    n = 20000

    def timed(fn):
        t0 = time.perf_counter()
        for _ in range(n):
            recurse(17, fn)
        return time.perf_counter() - t0

    base = min(timed(gil.nb_probe_noop) for _ in range(5))
    cap = min(timed(gil.nb_probe_capture_count) for _ in range(5))
    print(f"bench: {(cap - base) / n * 1e9:.0f} ns per capture of 22 frames (18 new each time)")


main()  # @module
print(f"python {sys.version.split()[0]}: " + ("FAIL " + ", ".join(failed) if failed else "PASS"))
sys.exit(1 if failed else 0)
