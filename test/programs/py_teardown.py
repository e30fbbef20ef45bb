"""A Python program that leaks: each step keeps a 2 MiB device buffer in a
global list (the leak) and frees a 1 MiB one, then it ends normally, so that
interpreter teardown frees what the list held. Runs on the fake CUDA
runtime through ctypes; the leaking line carries the marker @leak."""
import ctypes

rt = ctypes.CDLL("libcudart.so.13")
leaked = []


class Buffer:
    def __init__(self, size):
        self.ptr = ctypes.c_void_p()
        assert rt.cudaMalloc(ctypes.byref(self.ptr), ctypes.c_size_t(size)) == 0

    def __del__(self):
        rt.cudaFree(self.ptr)


for step in range(24):
    leaked.append(Buffer(2 << 20))  # @leak
    scratch = Buffer(1 << 20)
    del scratch
    rt.cudaDeviceSynchronize()
