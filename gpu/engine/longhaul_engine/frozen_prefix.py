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

    def _hidden(self, keys: list, ids: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        """The frozen layers' output for the rows of `ids` (right-padded like `attention`), cached per key."""
        missing = [row for row, key in enumerate(keys) if key not in self.cache]
        computed = {}
        if missing:
            with torch.no_grad(), self._stack(self.layers[: self.depth], torch.nn.Identity()):
                states = self.inner(input_ids=ids[missing], attention_mask=attention[missing], use_cache=False).last_hidden_state
            for state, row in zip(states, missing):
                state = state[: int(attention[row].sum())].clone()
                computed[keys[row]] = state
                size = state.numel() * state.element_size()
                if self.cache_bytes + size <= self.cache_limit_bytes:
                    self.cache[keys[row]] = state
                    self.cache_bytes += size
        rows = [self.cache.get(key, computed.get(key)) for key in keys]
        hidden = torch.zeros((len(rows), ids.shape[1], rows[0].shape[1]), dtype=rows[0].dtype)
        for i, r in enumerate(rows):
            hidden[i, : r.shape[0]] = r
        return hidden

    def final_hidden(self, keys: list, ids: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        """The normed hidden states the head reads, [B, T, H]; `keys` name the rows within the step."""
        hidden = self._hidden(keys, ids, attention)
        with self._stack(self.layers[self.depth :], self.inner.norm):
            return self.inner(inputs_embeds=hidden, attention_mask=attention, use_cache=False).last_hidden_state
