"""Launches kernels on the fake CUDA runtime through ctypes from two Python
functions, three from attention() for each one from mlp(), for the source
table test (test/integration/test_regions.cpp). Lines the test looks for are
marked with '# @name'."""
import ctypes
import sys

rt = ctypes.PyDLL("libcudart.so.13")


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
stub = ctypes.create_string_buffer(16)  # any address stands for the kernel's host stub
assert rt.fakeRegisterKernel(ctypes.cast(stub, ctypes.c_void_p), b"py_kernel") == 0


def attention():
    for _ in range(3):
        assert rt.cudaLaunchKernel(ctypes.cast(stub, ctypes.c_void_p), Dim3(1, 1, 1), Dim3(32, 1, 1), None, 0, None) == 0  # @attention


def mlp():
    assert rt.cudaLaunchKernel(ctypes.cast(stub, ctypes.c_void_p), Dim3(1, 1, 1), Dim3(32, 1, 1), None, 0, None) == 0  # @mlp


def step():
    attention()  # @step_attention
    mlp()  # @step_mlp


for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 10):
    step()  # @loop
assert rt.cudaDeviceSynchronize() == 0
