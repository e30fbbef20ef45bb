"""A stand-in for PyTorch, just enough of it for bench/workloads/decode.py
and inprocess.py to run on a machine without a GPU (bench/test_nbbench.py):
a decode step's forward pass, argmax and cat are three kernels launched on
the fake CUDA runtime of test/fake_cuda (its path in NBB_FAKE_CUDART), so
that nb, preloaded, records, arms and finds steps as it would on a real one.
Tensors are opaque, nothing is computed; `empty` allocates on the fake
device with cudaMallocAsync, as PyTorch does with NB_TORCH_ALLOCS=1."""
import contextlib
import ctypes
import os

from . import cuda, profiler  # noqa: F401

__version__ = "0-fake"
version = type("version", (), {"cuda": "fake"})


class dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


_rt = ctypes.CDLL(os.environ["NBB_FAKE_CUDART"])
_rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, dim3, dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_rt.cudaMallocAsync.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_void_p]
_rt.cudaFreeAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
uint8 = "uint8"
_kernels = {}  # name -> a buffer whose address stands for the kernel's stub


def _launch(name):
    if name not in _kernels:
        _kernels[name] = ctypes.create_string_buffer(1)
        if _rt.fakeRegisterKernel(_kernels[name], name.encode()):
            raise RuntimeError("fakeRegisterKernel failed")
    if _rt.cudaLaunchKernel(_kernels[name], dim3(1, 1, 1), dim3(32, 1, 1), None, 0, None):
        raise RuntimeError("cudaLaunchKernel failed")


class Tensor:
    def __init__(self, nbytes=0):
        self.nbytes, self.ptr = nbytes, ctypes.c_void_p()
        if nbytes and _rt.cudaMallocAsync(ctypes.byref(self.ptr), nbytes, None):
            raise RuntimeError("cudaMallocAsync failed")

    def __del__(self):
        if self.ptr.value:
            _rt.cudaFreeAsync(self.ptr, None)

    def __add__(self, other):
        _launch("fake_add")
        return Tensor(self.nbytes)

    def clone(self):
        return Tensor()

    def __getitem__(self, key):
        return Tensor()

    def argmax(self):
        _launch("fake_argmax")
        return Tensor()

    def view(self, *shape):
        return self


def manual_seed(seed):
    pass


def device(name):
    return contextlib.nullcontext()


def randint(low, high, size, device=None):
    return Tensor()


def empty(n, dtype=None, device=None):
    return Tensor(n)


def cat(tensors, dim=0):
    _launch("fake_cat")
    return Tensor()


def equal(a, b):
    return True


def inference_mode():
    return contextlib.nullcontext()


def no_grad():
    return contextlib.nullcontext()
