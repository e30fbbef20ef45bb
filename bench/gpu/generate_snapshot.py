"""The seed's memory example: two model.generate() calls, GPT-2 from config,
unmodified. Run under the shim; prints torch's own peak for comparison."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12)
model = GPT2LMHeadModel(cfg).cuda().half().eval()
input_ids = torch.randint(0, cfg.vocab_size, (1, 32), device="cuda")
model.generate(input_ids, max_new_tokens=64, do_sample=False, pad_token_id=0)
model.generate(input_ids, max_new_tokens=64, do_sample=False, pad_token_id=0)
print("max_memory_allocated", torch.cuda.max_memory_allocated(), "max_memory_reserved",
      torch.cuda.max_memory_reserved())
