"""The seed's decode loop as a program nb must cut into steps itself: GPT-2
from config, fp16, STEPS steps of one token each, no warm-up, no profiler
calls. With "nvtx" each step is an NVTX range named "step" (as programs that
emit NVTX do); with "pause=S" each step sleeps S seconds (a slow server, to
arm nb by signal mid-run). Prints the epoch ns at which it ended.

    python3 bench/gpu/seed_loop.py STEPS [nvtx] [pause=S]
"""
import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

steps = int(sys.argv[1])
nvtx = "nvtx" in sys.argv[2:]
pause = next((float(a[6:]) for a in sys.argv[2:] if a.startswith("pause=")), 0.0)
torch.manual_seed(0)
cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12)
model = GPT2LMHeadModel(cfg).cuda().half().eval()
seq = torch.randint(0, cfg.vocab_size, (1, 128), device="cuda")
for _ in range(steps):
    if nvtx:
        torch.cuda.nvtx.range_push("step")
    with torch.inference_mode():
        logits = model(input_ids=seq).logits
    next_id = logits[0, -1].argmax()
    seq = torch.cat([seq, next_id.view(1, 1)], dim=1)
    if nvtx:
        torch.cuda.nvtx.range_pop()
    if pause:
        time.sleep(pause)
torch.cuda.synchronize()
print("end_ns", time.time_ns(), flush=True)
