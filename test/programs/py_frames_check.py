"""Checks shim/python_frames.cpp from a real interpreter, through the probe
library (py_frames_probe.cpp): usage: py_frames_check.py LIBPROBE.so [--bench]

ctypes.PyDLL calls keep the GIL, ctypes.CDLL calls release it; each probe call
stands for a CUDA call made at that line. The two ways of capturing (the C API
with the GIL, the frame chain read in place without it) must give the same
stacks. Prints one line per check and the captured stack; exits 1 if a check
failed. Lines marked "# @name" are where the frames must point.
"""
import ctypes
import sys
import threading
import time
import types

LIB = sys.argv[1]
gil = ctypes.PyDLL(LIB)
nogil = ctypes.CDLL(LIB)
for lib in (gil, nogil):
    lib.nb_probe_capture.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.nb_probe_bench.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.nb_probe_bench.restype = ctypes.c_double
    lib.nb_probe_bench_cold.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.nb_probe_bench_cold.restype = ctypes.c_double
    lib.nb_probe_bench_native.argtypes = [ctypes.c_int]
    lib.nb_probe_bench_native.restype = ctypes.c_double
    lib.nb_probe_unknown_frames.restype = ctypes.c_ulonglong
    lib.nb_probe_line_at.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_long, ctypes.c_int, ctypes.c_int]
    lib.nb_probe_unwind_compare.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
BOTH = (("with the GIL", gil), ("without the GIL", nogil))

if sys.version_info < (3, 9):  # no PyFrame_GetBack: the capture must stay off
    n = gil.nb_probe_capture_count() + nogil.nb_probe_capture_count()
    print(f"python {sys.version.split()[0]}: " + ("PASS (nothing captured)" if n == 0 else f"FAIL {n} frames"))
    sys.exit(0 if n == 0 else 1)

with open(__file__) as f:
    SOURCE = f.read().splitlines()
failed = []


def line(tag):
    marker = "# @" + tag
    return next(i + 1 for i, text in enumerate(SOURCE) if text.rstrip().endswith(marker))


def check(name, ok, detail=None):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or detail is None else ": " + str(detail)))
    if not ok:
        failed.append(name)


def capture(lib):
    buf = ctypes.create_string_buffer(1 << 16)
    n = lib.nb_probe_capture(buf, len(buf))  # @capture
    frames = buf.value.decode().splitlines()
    assert n == len(frames)
    return frames


def level3(lib):
    return capture(lib)  # @level3


def level2(lib):
    return level3(lib)  # @level2


def level1(lib):
    return level2(lib)  # @level1


def recurse(depth, fn):
    if depth == 0:
        return fn()
    return recurse(depth - 1, fn)


def worker(out):
    out.append([capture(gil), capture(nogil)])  # @worker


def spin(stop):
    while not stop:
        pass


def main():
    me = capture.__code__.co_filename
    frames = level1(gil)  # @main
    print("stack:\n  " + "\n  ".join(frames))
    expected = [f"{me}:{line('capture')}:capture", f"{me}:{line('level3')}:level3",
                f"{me}:{line('level2')}:level2", f"{me}:{line('level1')}:level1",
                f"{me}:{line('main')}:main", f"{me}:{line('module')}:<module>"]
    check("with the GIL: file:line:function, innermost first", frames == expected, frames)
    frames = level1(gil)  # @main2
    expected[4] = f"{me}:{line('main2')}:main"
    check("with the GIL, again (cached code ids)", frames == expected, frames)
    frames = level1(nogil)  # @main3
    expected[4] = f"{me}:{line('main3')}:main"
    check("without the GIL: the same frames", frames == expected, frames)
    frames = level1(nogil)  # @main4
    expected[4] = f"{me}:{line('main4')}:main"
    check("without the GIL, again (cached)", frames == expected, frames)

    out = []
    t = threading.Thread(target=worker, args=(out,))
    t.start()
    t.join()
    check("a Python thread captures its own stack",
          out and out[0][0][:2] == [f"{me}:{line('capture')}:capture", f"{me}:{line('worker')}:worker"], out)
    check("a Python thread without the GIL: the same stack", out and out[0][0] == out[0][1], out)

    check("a native thread captures nothing while the GIL is held elsewhere", gil.nb_probe_native_thread() == 0)
    check("a native thread captures nothing while the GIL is free", nogil.nb_probe_native_thread() == 0)

    # Another thread runs Python (and takes the GIL) while this one reads its
    # own frames in place.
    stop = []
    spinner = threading.Thread(target=spin, args=(stop,))
    spinner.start()
    counts = set()
    for _ in range(2000):
        counts.add(recurse(10, nogil.nb_probe_capture_count))  # recurse × 11, main, <module>
    stacks = []
    for _ in range(100):
        stacks.append(level1(nogil))  # @spin
    stop.append(1)
    spinner.join()
    expected[4] = f"{me}:{line('spin')}:main"
    wrong = [s for s in stacks if s != expected]
    check("without the GIL while another Python thread runs", counts == {13} and not wrong,
          (sorted(counts), wrong[:1]))

    short_lived_code()
    replaced_code()
    line_decoders()
    line_tables()
    concurrent_first_sights()
    non_ascii_names()

    for how, lib in BOTH:
        check(f"deep stacks {how}: all frames, or max", recurse(40, lib.nb_probe_capture_count) == 40 + 3
              and recurse(40, lambda: lib.nb_probe_capture_max(5)) == 5)
    native_unwinder()
    check("native frames in the evaluation loop are recognized", level_eval() >= 1)
    check("other code is not in the evaluation loop", gil.nb_probe_main_pc_is_eval() == 0)
    check("no frame went unnamed", gil.nb_probe_unknown_frames() == 0)
    # 3.12's flags and thread state are read from _PyRuntime (shim/python_frames_layouts.h); other
    # versions, and debug builds, ask the interpreter.
    in_place = sys.version_info[:2] == (3, 12) and not hasattr(sys, "gettotalrefcount")
    check(f"the interpreter's flags read in place: {bool(in_place)}", gil.nb_probe_flags_in_place() == int(in_place))
    check("no garbage collection runs inside a capture", no_gc_inside_capture())

    after_fork()
    if "--bench" in sys.argv:
        bench()
    sub_interpreters()  # last: it turns PyGILState_Check off for good


def short_lived_code():
    # Code objects die and others take their addresses (and their names'
    # and line tables' addresses): each must be named as itself. Without the
    # GIL no reference is kept, so addresses are reused at once.
    for how, lib in BOTH:
        wrong = []
        for i in range(300):
            # A new name, a new file with the same name, or the same file and
            # name on another line.
            name, file, skip = [(f"gen_{i}", "<gen>", 0), ("gen", f"<gen{i}>", 0), ("gen", "<gen>", i)][i % 3]
            ns = {}
            exec(compile("\n" * skip + f"def {name}(cap, lib):\n    return cap(lib)\n", file, "exec"), ns)
            got = ns[name](capture, lib)[1]
            if got != f"{file}:{skip + 2}:{name}":
                wrong.append((got, f"{file}:{skip + 2}:{name}"))
            del ns
        check(f"short-lived code objects keep their own names {how}", not wrong, wrong[:3])


# Shapes of code whose line tables hold more than one delta per line: long
# jumps, big gaps, loops (lines going back), handlers, multi-line calls,
# generators, coroutines, __init__ (3.12+ runs it through a shim frame once
# specialized), closures, comprehensions. Each calls cap() where a CUDA call
# would be; the stacks must be the same with and without the GIL.
SHAPES = '''
def straight(cap):
    out = [cap()]
    x = 1
''' + "    x = x + 1\n" * 400 + '''
    out.append(cap())
''' + "\n" * 3000 + '''
    out.append(cap())
    return out

def loops(cap):
    out = []
    for i in range(3):
        while True:
            out.append(cap())
            break
        else:
            pass
    return out

def handlers(cap):
    out = []
    try:
        raise ValueError
    except ValueError:
        out.append(cap())
    finally:
        out.append(cap())
    with open("/dev/null") as f:
        out.append(cap())
    return out

def multiline(cap):
    return [
        dict(a=1,
             b=cap(

             ))["b"],
        cap(),
    ]

def gen(cap):
    yield cap()
    yield cap()

def generator(cap):
    return [x for x in gen(cap)]

async def coro(cap):
    return cap()

def coroutine(cap):
    c = coro(cap)
    try:
        c.send(None)
    except StopIteration as e:
        return [e.value]

class Init:
    def __init__(self, cap):
        self.frames = cap()

def init(cap):
    return [Init(cap).frames for _ in range(20)]

def closure(cap):
    a = 1
    def inner():
        b = a
        return cap()
    return [inner()]

def comprehension(cap):
    return [cap() for _ in range(2)] + list({k: cap() for k in range(1)}.values())

def deco(fn):
    def wrapped(cap):
        return fn(cap)
    return wrapped

@deco
def decorated(cap):
    return [cap()]

def long_columns(cap):
    return [(''' + "0 + " * 300 + '''0, cap())[1]]
'''


def replaced_code():
    # code.replace() makes code objects that share the original's file name
    # and line table; from 3.12 on, each new one and its new name also take
    # the addresses of the ones just freed: only the name's contents differ.
    me = capture.__code__.co_filename

    def base(cap, lib):
        return cap(lib)  # @replaced

    for how, lib in BOTH:
        wrong = []
        for i in range(200):
            name = "".join(["gen_", str(1000 + i)])
            fn = types.FunctionType(base.__code__.replace(co_name=name), globals())
            got = fn(capture, lib)[1]
            if got != f"{me}:{line('replaced')}:{name}":
                wrong.append(got)
            del fn, name
        check(f"code objects at reused addresses keep their own names {how}", not wrong, wrong[:3])


def line_decoders():
    # nb's decoder of this version's line tables against the interpreter's own
    # (PyCode_Addr2Line), at every instruction of every code object of a few
    # large modules and of SHAPES.
    import argparse, ast, dataclasses, inspect, typing  # noqa: E401
    addr2line = ctypes.pythonapi.PyCode_Addr2Line
    addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
    addr2line.restype = ctypes.c_int
    todo = [compile(SHAPES, "<shapes>", "exec")]
    for module in (argparse, ast, dataclasses, inspect, typing, threading):
        with open(module.__file__) as f:
            todo.append(compile(f.read(), module.__file__, "exec"))
    minor = sys.version_info[1]
    codes = offsets = 0
    wrong = []
    while todo:
        code = todo.pop()
        todo.extend(c for c in code.co_consts if isinstance(c, type(code)))
        table = code.co_lnotab if minor == 9 else code.co_linetable
        codes += 1
        for addr in [-1] + list(range(0, len(code.co_code), 2)):
            offsets += 1
            want = addr2line(code, addr)
            got = gil.nb_probe_line_at(minor, table, len(table), code.co_firstlineno, addr)
            if got != want:
                wrong.append((code.co_filename, code.co_name, addr, want, got))
    check(f"line-table decoder: {offsets} offsets of {codes} code objects as PyCode_Addr2Line", not wrong,
          wrong[:3])


def line_tables():
    ns = {}
    exec(compile(SHAPES, "<shapes>", "exec"), ns)
    for name in ("straight", "loops", "handlers", "multiline", "generator", "coroutine", "init", "closure",
                 "comprehension", "decorated", "long_columns"):
        stacks = {how: ns[name](lambda: capture(lib)) for how, lib in BOTH}
        a, b = ([s[2:] for s in v] for v in stacks.values())  # without capture, <lambda>
        lines = [int(s[0].split(":")[1]) for s in a]
        check(f"line tables: {name} (the same stacks with and without the GIL)",
              a == b and all(n > 0 for n in lines), (a, b) if a != b else lines)
    # The one place the lines are known here.
    text = SHAPES[:SHAPES.index("def loops")].splitlines()
    want = [i + 1 for i, t in enumerate(text) if "cap()" in t]
    straight = [int(s[2].split(":")[1]) for s in ns["straight"](lambda: capture(nogil))]
    check("line tables: long jumps land on the right lines", straight == want, (straight, want))


def concurrent_first_sights():
    # New code objects seen at the same time with the GIL (another thread)
    # and without it (this one): each named as itself.
    wrong = []

    def make(tag, i):
        ns = {}
        exec(compile(f"def {tag}_{i}(cap, lib):\n    return cap(lib)\n", f"<{tag}{i}>", "exec"), ns)
        return ns[f"{tag}_{i}"]

    def with_gil():
        for i in range(300):
            got = make("g", i)(capture, gil)[1]
            if got != f"<g{i}>:2:g_{i}":
                wrong.append(got)

    t = threading.Thread(target=with_gil)
    t.start()
    for i in range(300):
        got = make("n", i)(capture, nogil)[1]
        if got != f"<n{i}>:2:n_{i}":
            wrong.append(got)
    t.join()
    check("code objects first seen with and without the GIL at once", not wrong, wrong[:3])


def non_ascii_names():
    # Without the GIL a non-ASCII name is read only if its UTF-8 form was
    # already made; otherwise "<?>". With it, always.
    ns = {}
    exec(compile("def fünf(cap, lib):\n    return cap(lib)\n", "/tmp/ßpäth.py", "exec"), ns)
    got = ns["fünf"](capture, nogil)[1]
    check("without the GIL: a non-ASCII name, or <?>", got in ("/tmp/ßpäth.py:2:fünf", "<?>:2:<?>",
                                                              "/tmp/ßpäth.py:2:<?>", "<?>:2:fünf"), got)
    got = ns["fünf"](capture, gil)[1]
    check("with the GIL: a non-ASCII name", got == "/tmp/ßpäth.py:2:fünf", got)


def after_fork():
    # A forked child makes its thread states again (3.12: its key for them
    # too, maybe another): its frames, with and without the GIL, on its main
    # thread and on a new one, are the parent's way of capturing them.
    import os
    if not hasattr(os, "fork"):
        return
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            got = [level1(gil), level1(nogil)]  # @fork
            t = threading.Thread(target=lambda: got.append(level1(nogil)))
            t.start()
            t.join()
            code = 0 if (got[0] == got[1] and got[0][4].endswith(f":{line('fork')}:after_fork")
                         and got[2][:4] == got[0][:4] and got[2][4].endswith(":<lambda>")) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    check("after fork: the child's frames, with and without the GIL, and on its new thread",
          os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status)


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
    a, b = level1(gil), level1(nogil)  # @sub
    check("sub-interpreter exists: the main interpreter still captures, with and without the GIL",
          len(a) >= 6 and a == b, (a, b))
    check("sub-interpreter exists: a native thread captures nothing", gil.nb_probe_native_thread() == 0)
    for how, lib in (("PyDLL", "PyDLL"), ("CDLL", "CDLL")):
        gil.nb_probe_last_count(1)
        try:
            interpreters.run_string(sub, f"import ctypes\nctypes.{lib}({LIB!r}).nb_probe_capture_count()\n")  # @run
        except Exception as e:  # noqa: BLE001 (ctypes may not load in an isolated interpreter)
            print(f"skip capture inside a sub-interpreter ({how}): {type(e).__name__}: {e}")
            continue
        got = gil.nb_probe_last_count(0)
        if how == "PyDLL":
            check("inside a sub-interpreter, with its GIL: nothing captured", got == 0, got)
        else:
            # Its own frames are never read. Up to 3.11 this thread's state
            # (PyGILState_GetThisThreadState) stays the main interpreter's,
            # whose frames below are read: sub_interpreters, main, <module>;
            # in 3.13 it is the sub-interpreter's while there: nothing. (3.12
            # does not get here: ctypes does not load in its sub-interpreters.)
            want = 3 if sys.version_info < (3, 12) else 0
            check("inside a sub-interpreter, without the GIL: none of its frames", got == want, got)
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


def native_unwinder():
    # nb's own unwinder (shim/native_unwind.cpp) must give what libunwind
    # gives through the interpreter's C frames: plain calls, callable
    # objects (tp_call), a generator, a thread, deep and cut at a depth.
    class Obj:
        def __call__(self, f, depth):
            return Obj()(f, depth - 1) if depth else f()

    def gen(f):
        yield f()

    got = ctypes.c_int(0)
    for how, lib in BOTH:
        def cmp(max_frames=256):
            return lib.nb_probe_unwind_compare(max_frames, ctypes.byref(got)), got.value
        cases = {"plain": recurse(5, cmp), "deep": recurse(60, cmp), "objects": Obj()(cmp, 20),
                 "generator": next(gen(cmp)), "cut at 16": recurse(30, lambda: cmp(16))}
        out = []
        t = threading.Thread(target=lambda: out.append(recurse(8, cmp)))
        t.start()
        t.join()
        cases["thread"] = out[0]
        if any(r == -2 for r, _ in cases.values()):
            print(f"skip native unwinder {how}: no libunwind.so.8 beside the probe or on the system")
            continue
        print(f"native unwinder {how}: {cases}")
        check(f"native unwinder {how}: libunwind's return addresses", all(r == 0 and n > 5 for r, n in cases.values()),
              cases)


def level_eval():
    return gil.nb_probe_eval_pcs()


def bench():
    # <module> → main → bench → <genexpr> → recurse × 18 → <lambda>: 23
    # frames, the innermost 20 captured (each capture must get all 20).
    iters = 200000
    for how, lib in BOTH:
        ns = min(recurse(17, lambda: lib.nb_probe_bench(iters, 20)) for _ in range(5))
        print(f"bench: {ns:.0f} ns per capture of 20 frames {how} (same stack each time)")
    print(f"bench: {gil.nb_probe_bench_native(iters):.1f} ns per capture on a thread Python never saw (nothing)")
    # Fresh frames each time, as in a loop that calls into CUDA from new calls:
    # the difference between calling a no-op and a capture through
    # <module> → main → bench → timed → recurse × 18 (22 frames).
    n = 20000

    def timed(fn):
        t0 = time.perf_counter()
        for _ in range(n):
            recurse(17, fn)
        return time.perf_counter() - t0

    # A stack of 20 different functions (each its own code object, names and
    # line table), captured with the caches cleared before each capture, as
    # between two CUDA calls of a real program (PyTorch's, say).
    ns = {}
    src = "".join(f"def chain{i}(lib, f):\n    return chain{i + 1}(lib, f)\n" for i in range(19))
    exec(compile(src + "def chain19(lib, f):\n    return f()\n", "<chain>", "exec"), ns)
    for how, lib in BOTH:
        for kib in (0, 1024, 4096, 32768):
            iters = 2000 if kib <= 4096 else 300  # 32 MiB touched takes some ms each time
            cold = ns["chain0"](lib, lambda: lib.nb_probe_bench_cold(iters, 20, kib))
            if cold < 0:
                check(f"cold bench {how}, {kib} KiB: every capture got 20 frames", False, cold)
                continue
            print(f"bench: {cold:.0f} ns per capture of 20 frames of 20 functions {how}, "
                  + (f"{kib // 1024} MiB touched before each" if kib else "nothing touched before each") + " (median)")
    for how, lib in BOTH:
        base = min(timed(lib.nb_probe_noop) for _ in range(5))
        cap = min(timed(lib.nb_probe_capture_count) for _ in range(5))
        print(f"bench: {(cap - base) / n * 1e9:.0f} ns per capture of 22 frames {how} (18 new each time)")


main()  # @module
print(f"python {sys.version.split()[0]}: " + ("FAIL " + ", ".join(failed) if failed else "PASS"))
sys.exit(1 if failed else 0)
