"""The seed's decode loop, step by step, for comparing nb with torch.profiler
(run in separate processes):

  LD_PRELOAD=.../libnb_shim.so NB_OUT=OUT/nb python3 decode_steps.py nb OUT
  python3 decode_steps.py torch OUT

Each step ends with a synchronize, and its wall-clock window (epoch ns) is
written to OUT/<mode>.steps.json; under torch.profiler the profiler's trace
goes to OUT/torch.trace.json. steps_compare.py counts kernels and device time
per step in both traces.
"""
import json
import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

mode, out = sys.argv[1], sys.argv[2]
STEPS = 8
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config()).cuda().half().eval()
prompt = torch.randint(0, 50257, (1, 128), device="cuda")


def run(steps):
    windows = []
    seq = prompt.clone()
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.time_ns()
        with torch.inference_mode():
            logits = model(input_ids=seq).logits
        next_id = logits[0, -1].argmax()
        seq = torch.cat([seq, next_id.view(1, 1)], dim=1)
        torch.cuda.synchronize()
        windows.append([t0, time.time_ns()])
    return windows


run(4)  # warm-up: handles, allocator, autotuning
if mode == "torch":
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        windows = run(STEPS)
    prof.export_chrome_trace(f"{out}/torch.trace.json")
else:
    windows = run(STEPS)
json.dump(windows, open(f"{out}/{mode}.steps.json", "w"))
print(mode, "steps", len(windows))
