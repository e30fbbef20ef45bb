"""The three memory behaviours `nbprof report` tells apart, in Python on the
fake CUDA runtime (ctypes), for test/integration/test_report.cpp:

  mem_patterns.py leak           each step keeps one more buffer in a global
                                 list, which lives until the program ends
  mem_patterns.py sawtooth       each step allocates its buffers and frees
                                 them before it ends: a steady baseline
  mem_patterns.py fragmentation  steps draw from a memory pool that keeps
                                 what is freed; then a request larger than
                                 the device's free bytes fails (run it with
                                 FAKE_CUDA_MEM_BYTES=67108864, 64 MiB)

Every step ends with cudaDeviceSynchronize, so NB_STEP=sync cuts the run
into steps there. The model's weights are allocated before the first step.
Device memory the program keeps is held by objects that free it when they
go, as tensors do: what is still held when the program ends (the weights;
the kept buffers) is freed by the interpreter's teardown.
test/programs/mem_patterns.c does the same natively. Lines the test looks
for are marked with '# @name'."""
import ctypes
import sys

MiB = 1 << 20
STEPS = 8
WEIGHTS = 8 * MiB
ACTIVATIONS = 4 * MiB      # per step, freed before the step ends
LEAKED = 1 * MiB           # per step, kept (leak)
POOL_BLOCKS = 6            # per step, 4 MiB each, from the pool (fragmentation)
BIG_REQUEST = 60 * MiB     # fragmentation: more than the device's free bytes

cudart = ctypes.PyDLL("libcudart.so.13")
driver = ctypes.PyDLL("libcuda.so.1")
model = []  # the weights, held to the end
kept = []   # the leak: one buffer per step, never released by the program


class Owned:
    """Device memory freed when the object goes, as a tensor's is."""

    def __init__(self, ptr):
        self.ptr = ptr
        self.free = cudart.cudaFree  # kept: the module's names are gone at teardown

    def __del__(self):
        self.free(self.ptr)


def check(rc, expected=0):
    if rc != expected:
        sys.exit(f"mem_patterns.py: CUDA error {rc} (expected {expected})")


def end_step():
    check(cudart.cudaDeviceSynchronize())


def leak_step():
    act = ctypes.c_void_p()
    check(cudart.cudaMalloc(ctypes.byref(act), ctypes.c_size_t(ACTIVATIONS)))  # @activations
    buf = ctypes.c_void_p()
    check(cudart.cudaMalloc(ctypes.byref(buf), ctypes.c_size_t(LEAKED)))  # @leak
    kept.append(Owned(buf))
    check(cudart.cudaFree(act))


def sawtooth_step(step):
    bufs = []
    for i in range(3):
        p = ctypes.c_void_p()
        size = ACTIVATIONS + i * MiB
        check(cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(size)))  # @sawtooth
        bufs.append(p)
    for p in reversed(bufs):
        check(cudart.cudaFree(p))


def keep_freed_memory():
    """The device's default pool keeps every freed byte (release threshold
    at its maximum), as PyTorch's cudaMallocAsync backend sets it."""
    pool = ctypes.c_void_p()
    check(cudart.cudaDeviceGetDefaultMemPool(ctypes.byref(pool), 0))
    threshold = ctypes.c_uint64(2**64 - 1)
    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4
    check(driver.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, ctypes.byref(threshold)))


def pool_step():
    blocks = []
    for _ in range(POOL_BLOCKS):
        p = ctypes.c_void_p()
        check(cudart.cudaMallocAsync(ctypes.byref(p), ctypes.c_size_t(4 * MiB), None))  # @pool
        blocks.append(p)
    for p in blocks:
        check(cudart.cudaFreeAsync(p, None))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "sawtooth"
    if mode not in ("leak", "sawtooth", "fragmentation"):
        sys.exit("usage: mem_patterns.py leak|sawtooth|fragmentation")
    weights = ctypes.c_void_p()
    check(cudart.cudaMalloc(ctypes.byref(weights), ctypes.c_size_t(WEIGHTS)))  # @weights
    model.append(Owned(weights))
    if mode == "fragmentation":
        keep_freed_memory()
    for step in range(STEPS):
        if mode == "leak":
            leak_step()
        elif mode == "sawtooth":
            sawtooth_step(step)
        else:
            pool_step()
        end_step()
    if mode == "fragmentation":
        big = ctypes.c_void_p()
        CUDA_ERROR_OUT_OF_MEMORY = 2
        check(cudart.cudaMallocAsync(ctypes.byref(big), ctypes.c_size_t(BIG_REQUEST), None),  # @oom
              CUDA_ERROR_OUT_OF_MEMORY)
        end_step()
    # The program ends here; the weights (and, for leak, the kept buffers)
    # are still held, and go only when the interpreter tears down.


main()
