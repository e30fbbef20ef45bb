"""A PyTorch loop that leaks: each step, inside an NVTX range "step", keeps
one 4 MiB tensor in a list (the line marked @leak allocates and keeps it)
and uses a 16 MiB scratch tensor it frees. Prints torch's own peak.

    torch_leak.py [STEPS]      default 32
"""
import sys

import torch


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    kept = []
    for _ in range(steps):
        torch.cuda.nvtx.range_push("step")
        kept.append(torch.ones(1 << 20, device="cuda"))  # @leak
        scratch = torch.empty(1 << 22, device="cuda")
        scratch.fill_(1.0)
        del scratch
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    print("max_memory_allocated", torch.cuda.max_memory_allocated(), "kept", len(kept), flush=True)


if __name__ == "__main__":
    main()
