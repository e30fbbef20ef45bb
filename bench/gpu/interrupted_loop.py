"""The seed's loop, ended by an uncaught KeyboardInterrupt after 8 steps (as
Ctrl-C would): Python finalizes, then kills itself with SIGINT. With nb
preloaded the files must still be written and the process must still die of
SIGINT (shell status 130), or end with whatever status Python gives without
nb (1 on the GPU machine, with and without nb: something this script loads
changes how an uncaught KeyboardInterrupt ends; docs/gpu-validation.md,
2026-12-01).

    python3 bench/gpu/interrupted_loop.py
"""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12)
model = GPT2LMHeadModel(cfg).cuda().half().eval()
seq = torch.randint(0, cfg.vocab_size, (1, 128), device="cuda")
for i in range(8):
    with torch.inference_mode():
        logits = model(input_ids=seq).logits
    seq = torch.cat([seq, logits[0, -1].argmax().view(1, 1)], dim=1)
raise KeyboardInterrupt
