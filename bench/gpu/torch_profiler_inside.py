"""The seed's loop with torch.profiler run by the program itself around 8
of its steps, as many training scripts do: does torch.profiler still get
its kernels when nb is preloaded? Prints the kernel events of torch's own
trace and the steps it saw.

    python3 bench/gpu/torch_profiler_inside.py OUT_JSON
"""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12)
model = GPT2LMHeadModel(cfg).cuda().half().eval()
seq = torch.randint(0, cfg.vocab_size, (1, 128), device="cuda")


def step():
    global seq
    with torch.inference_mode():
        logits = model(input_ids=seq).logits
    seq = torch.cat([seq, logits[0, -1].argmax().view(1, 1)], dim=1)


for _ in range(4):
    step()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(8):
        step()
    torch.cuda.synchronize()
prof.export_chrome_trace(sys.argv[1])
for _ in range(4):
    step()
torch.cuda.synchronize()
ev = json.load(open(sys.argv[1]))["traceEvents"]
kernels = [e for e in ev if e.get("cat") == "kernel"]
print("torch.profiler kernels", len(kernels), "flows", sum(1 for e in ev if e.get("cat") == "ac2g"), flush=True)
