"""PyTorch CUDA graphs under nb: a 2-layer GPT-2 (from config) warmed up on
a side stream, captured with torch.cuda.graph, replayed REPLAYS times, then
run EAGER times eagerly (the same kernels the capture recorded). Check the
trace with bench/gpu/capture_joined.py.
    python3 torch_graph.py [REPLAYS] [EAGER]"""
import sys
import torch
from transformers import GPT2Config, GPT2LMHeadModel

replays = int(sys.argv[1]) if len(sys.argv) > 1 else 5
eager = int(sys.argv[2]) if len(sys.argv) > 2 else 3
torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=768, n_head=12)
model = GPT2LMHeadModel(cfg).cuda().half().eval()
x = torch.randint(0, cfg.vocab_size, (1, 64), device="cuda")
with torch.no_grad():
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model(input_ids=x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = model(input_ids=x).logits
    for _ in range(replays):
        g.replay()
    for _ in range(eager):
        z = model(input_ids=x).logits
torch.cuda.synchronize()
print("torch_graph replays", replays, "eager", eager, "same", bool(torch.equal(y, z)), flush=True)
