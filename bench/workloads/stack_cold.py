"""What a stack costs hot and cold on this machine, outside the shim: the
Python frames (the probe library's capture, without the GIL, as under a
PyTorch op) and the native frames (libunwind's unw_backtrace, then nb's own
unwinder, shim/native_unwind.cpp), from a stack of
20 different callable objects, with the caches cleared before each capture by
touching KIB KiB (each size given; default 0, 1024, 4096 and 32768), in a
process that imported torch (its ~400 libraries loaded) unless NO_TORCH is
set. Medians of 2,000 captures (300 above 4 MiB); the clock's cost is taken
off.

    python3 bench/workloads/stack_cold.py LIBPROBE.so LIBUNWIND.so [KIB ...]    (bench/nbbench stack-cold)
"""
import ctypes, os, sys

probe, unwind = sys.argv[1], sys.argv[2]
sizes = [int(k) for k in sys.argv[3:]] or [0, 1024, 4096, 32768]
if not os.environ.get("NO_TORCH"):
    import torch  # noqa: F401  (its libraries, as in the decode loop)
lib = ctypes.CDLL(probe)  # CDLL: the GIL is released, as under a PyTorch op
lib.nb_probe_bench_cold.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
lib.nb_probe_bench_cold.restype = ctypes.c_double
lib.nb_probe_bench_unwind.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_char_p,
                                      ctypes.POINTER(ctypes.c_int)]
lib.nb_probe_bench_unwind.restype = ctypes.c_double
lib.nb_probe_bench_nbunwind.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
lib.nb_probe_bench_nbunwind.restype = ctypes.c_double
ns = {}
# Callable objects, as PyTorch's modules are: each level also goes through
# the interpreter's C call path, so the native stack is as deep as a
# PyTorch op's (64 frames, NB_STACK_DEPTH's default, are taken).
src = "".join(f"class C{i}:\n    def __call__(self, f):\n        return C{i + 1}()(f)\n" for i in range(19))
exec(compile(src + "class C19:\n    def __call__(self, f):\n        return f()\n", "<chain>", "exec"), ns)
ns["chain0"] = lambda f: ns["C0"]()(f)
got = ctypes.c_int(0)
for kib in sizes:
    iters = 2000 if kib <= 4096 else 300
    py = ns["chain0"](lambda: lib.nb_probe_bench_cold(iters, 20, kib))
    nat = ns["chain0"](lambda: lib.nb_probe_bench_unwind(iters, 64, kib, unwind.encode(), ctypes.byref(got)))
    libunwind_frames = got.value
    own = ns["chain0"](lambda: lib.nb_probe_bench_nbunwind(iters, 64, kib, ctypes.byref(got)))
    print(f"cold {kib} KiB: python {py:.0f} ns per 20 frames; native {nat:.0f} ns per {libunwind_frames} frames "
          f"(libunwind), {own:.0f} ns per {got.value} frames (nb's unwinder; -1: gave up)", flush=True)
