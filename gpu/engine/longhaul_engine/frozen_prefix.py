"""The frozen bottom of the model, run once per sample and reused within a step.

With the demo's recipe (the last 4 of SmolLM2's 30 decoder layers and the final norm trainable) every
forward pass spent 26/30 of its layer compute on layers whose output cannot change within a step, and
a forward with gradients enabled cost far more than one without (two sequences of 750 tokens, CPU:
33 s forward + backward through the whole model, against 10 s for the frozen 26 layers without a graph
plus 7 s for the top 4 with one). `FrozenPrefix` runs the leading decoder layers that hold no trainable
parameter once per sample, without a graph, keeps their output, and runs only the remaining layers,
the norm and the head on top of it for every later pass of the step: the proximal pass, each update
pass, each SFT epoch. The logits equal the full forward's (tests/test_frozen_prefix.py).

It works on the decoder stack of a Hugging Face causal LM (`model.model.embed_tokens`, `.layers`,
`.norm`) by running the inner model on a slice of its layer list: the mask and rotary embeddings are
built by the model's own code both times. Anything else (no such stack, trainable embeddings, LoRA or
full fine-tuning in the first layer) gets depth 0: the plain full forward.
"""

import contextlib

import torch

# Prefix outputs kept per step at most (float32 hidden states); past it, passes recompute them.
CACHE_LIMIT_BYTES = 2 * 1024**3


class FrozenPrefix:
    def __init__(self, model, cache_limit_bytes: int = CACHE_LIMIT_BYTES):
        self.model = model
        self.inner = getattr(model, "model", None)
        self.layers = getattr(self.inner, "layers", None)
        self.cache: dict = {}
        self.cache_bytes = 0
        self.cache_limit_bytes = cache_limit_bytes
        self.depth = 0
        embed = getattr(self.inner, "embed_tokens", None)
        if self.layers is None or embed is None or not hasattr(self.inner, "norm"):
            return
        if any(p.requires_grad for p in embed.parameters()):
            return
        for layer in self.layers:
            if any(p.requires_grad for p in layer.parameters()):
                break
            self.depth += 1

    @contextlib.contextmanager
    def _stack(self, layers, norm):
        saved_layers, saved_norm = self.inner.layers, self.inner.norm
        self.inner.layers, self.inner.norm = layers, norm
        try:
            yield
        finally:
            self.inner.layers, self.inner.norm = saved_layers, saved_norm

    def _prefix(self, token_rows: list) -> torch.Tensor:
        width = max(len(r) for r in token_rows)
        ids = torch.zeros((len(token_rows), width), dtype=torch.long)
        attention = torch.zeros((len(token_rows), width), dtype=torch.long)
        for i, row in enumerate(token_rows):
            ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
            attention[i, : len(row)] = 1
        with torch.no_grad(), self._stack(self.layers[: self.depth], torch.nn.Identity()):
            return self.inner(input_ids=ids, attention_mask=attention, use_cache=False).last_hidden_state

    def _hidden(self, samples: list, keys: list) -> torch.Tensor:
        missing = [(key, s) for key, s in zip(keys, samples) if key not in self.cache]
        computed = {}
        if missing:
            states = self._prefix([s.token_ids for _, s in missing])
            for row, (key, s) in enumerate(missing):
                state = states[row, : len(s.token_ids)].clone()
                computed[key] = state
                size = state.numel() * state.element_size()
                if self.cache_bytes + size <= self.cache_limit_bytes:
                    self.cache[key] = state
                    self.cache_bytes += size
        rows = [self.cache.get(key, computed.get(key)) for key in keys]
        width = max(r.shape[0] for r in rows)
        hidden = torch.zeros((len(rows), width, rows[0].shape[1]), dtype=rows[0].dtype)
        for i, r in enumerate(rows):
            hidden[i, : r.shape[0]] = r
        return hidden

    def logits(self, samples: list, keys: list, attention: torch.Tensor) -> torch.Tensor:
        """Logits of `samples` (right-padded like `attention`); `keys` name them within the step."""
        hidden = self._hidden(samples, keys)
        with self._stack(self.layers[self.depth :], self.inner.norm):
            return self.model(inputs_embeds=hidden, attention_mask=attention, use_cache=False).logits

    def final_hidden(self, samples: list, keys: list, attention: torch.Tensor) -> torch.Tensor:
        """The normed hidden states the head reads, [B, T, H]."""
        hidden = self._hidden(samples, keys)
        with self._stack(self.layers[self.depth :], self.inner.norm):
            return self.inner(inputs_embeds=hidden, attention_mask=attention, use_cache=False).last_hidden_state
