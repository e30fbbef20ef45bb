"""PyTorch allocations from known Python lines, to check on a GPU that nb's
snapshot gives them their Python frames (PyTorch's operators release the
GIL before allocating): every allocation in the snapshot must carry frames
of this file (bench/nbbench memory-check, with and without NB_TORCH_ALLOCS).
"""
import torch


def make(n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")  # @make


def layer(x):
    return x + 1  # @layer


def model(n):
    a = make(n)  # @model_make
    return layer(a)  # @model_layer


for _ in range(10000):
    y = model(4 << 20)  # @loop
torch.cuda.synchronize()
kept = make(2 << 20)  # @kept
