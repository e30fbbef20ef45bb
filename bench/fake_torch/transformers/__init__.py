"""transformers of the torch stand-in (see ../torch/__init__.py): a model
whose forward pass is one fake kernel launch and a millisecond's wait, so
that steps come at a steady pace."""
import time
import types

import torch


class GPT2Config:
    def __init__(self, n_layer=12, n_embd=768, n_head=12):
        self.n_layer, self.n_embd, self.n_head, self.vocab_size = n_layer, n_embd, n_head, 50257


class GPT2LMHeadModel:
    def __init__(self, cfg):
        self.cfg = cfg

    def half(self):
        return self

    def eval(self):
        return self

    def __call__(self, input_ids=None):
        torch._launch("fake_forward")
        time.sleep(0.001)
        return types.SimpleNamespace(logits=torch.Tensor())

    def generate(self, ids, max_new_tokens=1, **kw):
        for _ in range(max_new_tokens):
            self(input_ids=ids)
        return ids
