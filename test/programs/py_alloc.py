"""Allocates device memory on the fake CUDA runtime through ctypes, from known
Python lines, for the stack tests (test/integration/test_memory.cpp). PyDLL
keeps the GIL during the call; CDLL releases it, as PyTorch's operators do.
Lines the test looks for are marked with '# @name'."""
import ctypes
import sys

with_gil = ctypes.PyDLL("libcudart.so.13")
without_gil = ctypes.CDLL("libcudart.so.13")
kept = []


def allocate(lib, size):
    p = ctypes.c_void_p()
    rc = lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size))  # @alloc
    assert rc == 0, rc
    kept.append(p)


def model_step(lib, size):
    allocate(lib, size)  # @step


model_step(with_gil, 5 << 20)  # @main_gil
if len(sys.argv) > 1 and sys.argv[1] == "nogil":
    model_step(without_gil, 7 << 20)  # @main_nogil
