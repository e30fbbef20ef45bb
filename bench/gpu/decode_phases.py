"""bench/decode_loop.py in phases, each timed (wall and this thread's CPU):
importing torch and transformers, building the model on the CPU, moving it
to the GPU, the warm-up decodes, and the seven timed ones. For where a
profiled process spends the seconds its main thread uses beyond a bare
one's (docs/performance.md "Ninth session": 4-11 s more CPU with
NB_STACKS=all, against some 0.2 s of stacks).

    [LD_PRELOAD=libnb_shim.so NB_STACKS=all] python3 bench/gpu/decode_phases.py
"""
import statistics, time

marks = []


def mark(name):
    marks.append((name, time.perf_counter(), time.thread_time()))


mark("start")
import torch  # noqa: E402
mark("import torch")
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402
mark("import transformers")
torch.manual_seed(0)
cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12)
model = GPT2LMHeadModel(cfg)
mark("model on the CPU")
model = model.cuda().half().eval()
prompt = torch.randint(0, cfg.vocab_size, (1, 128), device="cuda")
torch.cuda.synchronize()
mark("model to the GPU")


def decode(steps):
    seq = prompt.clone()
    for _ in range(steps):
        with torch.inference_mode():
            logits = model(input_ids=seq).logits
        next_id = logits[0, -1].argmax()
        seq = torch.cat([seq, next_id.view(1, 1)], dim=1)
    torch.cuda.synchronize()


decode(8)
decode(32)
mark("warm-up decodes")
ts = []
for _ in range(7):
    t0 = time.perf_counter()
    decode(32)
    ts.append(time.perf_counter() - t0)
mark("7 timed decodes")
for (_, w0, c0), (name, w1, c1) in zip(marks, marks[1:]):
    print(f"phase {name:20s} wall {w1 - w0:7.3f} s  main-thread CPU {c1 - c0:7.3f} s", flush=True)
print("decode_s", statistics.median(ts), flush=True)
