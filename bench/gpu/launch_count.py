"""Counts device work two ways in one region of one process, to check that
the shim sees every launch: torch.profiler (CUPTI) lists the kernels, memsets
and copies the device ran; the shim's trace lists the host calls that caused
them. Run under the shim:

  LD_PRELOAD=.../libnb_shim.so NB_OUT=OUT/decode python3 launch_count.py OUT

Writes OUT/region.json (epoch ns of the region) and OUT/profiler.json (the
profiler's Chrome trace); compare_counts.py does the counting afterwards.
"""
import json
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import GPT2Config, GPT2LMHeadModel

out = sys.argv[1]
torch.manual_seed(0)
cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12)
model = GPT2LMHeadModel(cfg).cuda().half().eval()
prompt = torch.randint(0, cfg.vocab_size, (1, 128), device="cuda")


def decode(steps):
    seq = prompt.clone()
    for _ in range(steps):
        with torch.inference_mode():
            logits = model(input_ids=seq).logits
        next_id = logits[0, -1].argmax()
        seq = torch.cat([seq, next_id.view(1, 1)], dim=1)
    torch.cuda.synchronize()


decode(4)  # warm-up: cuBLAS/cuDNN handles, caching allocator
torch.cuda.synchronize()
time.sleep(0.05)
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    t0 = time.time_ns()
    decode(8)
    t1 = time.time_ns()
time.sleep(0.05)
prof.export_chrome_trace(f"{out}/profiler.json")
json.dump({"start_ns": t0, "end_ns": t1}, open(f"{out}/region.json", "w"))
print("region_s", (t1 - t0) / 1e9)
