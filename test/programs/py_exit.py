"""Ends a Python program that used CUDA (the fake runtime, through ctypes)
the ways Python programs end, for test_reliability:

    py_exit.py return        falls off the end of the script
    py_exit.py sys_exit      sys.exit(3)
    py_exit.py interrupt     an uncaught KeyboardInterrupt (Ctrl-C in a loop):
                             Python finalizes, then kills itself with SIGINT
    py_exit.py sigint        SIGINT from outside, at Python's own handler
    py_exit.py sigterm       SIGTERM from outside (Python leaves it at default)
"""
import ctypes
import os
import signal
import sys
import time

cudart = ctypes.CDLL("libcudart.so.13")
kept = ctypes.c_void_p()
assert cudart.cudaMalloc(ctypes.byref(kept), ctypes.c_size_t(3 << 20)) == 0

mode = sys.argv[1]
if mode == "sys_exit":
    sys.exit(3)
if mode == "interrupt":
    raise KeyboardInterrupt
if mode in ("sigint", "sigterm"):
    os.kill(os.getpid(), signal.SIGINT if mode == "sigint" else signal.SIGTERM)
    time.sleep(10)
    sys.exit(4)  # never reached: the signal ends the program first
