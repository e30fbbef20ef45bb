"""Two (or more) ranks of a job on the GPU machine's one GPU, for the
multi-rank check in gpu-validation.md: each step runs fp16 matmuls on the
GPU, then a gloo all-reduce of a CUDA tensor between the ranks (gloo, as
NCCL needs a GPU per rank).

    nbprof -o out/%h-r%r -- python3 -m torch.distributed.run --nproc_per_node=2 dist_gloo.py [STEPS]

Prints each rank's all-reduced checksum, which must agree."""
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
torch.manual_seed(rank)
x = torch.randn(2048, 2048, device="cuda", dtype=torch.float16)
w = torch.randn(2048, 2048, device="cuda", dtype=torch.float16) * 0.02
for step in range(steps):
    for _ in range(8):
        x = torch.tanh(x @ w)
    t = x.float().sum(dim=0)
    dist.all_reduce(t)
    x = x + t.half().unsqueeze(0) * 1e-6
torch.cuda.synchronize()
print(f"rank {rank}/{world}: checksum {float(t.sum()):.4f}", flush=True)
dist.destroy_process_group()
