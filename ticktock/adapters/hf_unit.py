"""Generic adapter for Hugging Face causal LMs that speak the MiniCPM-o unit protocol.

The LLM is any ``transformers`` causal LM that accepts ``inputs_embeds`` (Llama, Qwen3, ...). Audio goes
through a streaming front-end (``ticktock.adapters.frontends``) straight into ``inputs_embeds``; no
placeholder ids enter the cache, as in MiniCPM-o's streaming runtime. The KV cache is a plain
``DynamicCache``; positions are always passed explicitly (cache length + depth), so rollback is a crop.

Example::

    >>> from ticktock.adapters.fixture import build_fixture_adapter
    >>> adapter = build_fixture_adapter(seed=0)
    >>> prompt = adapter.start_session(None, [])                       # the prompt's token ids
    >>> audio = adapter.encode_audio(np.zeros(16000, dtype=np.float32))
    >>> logits = adapter.forward([[adapter.protocol.unit_open], audio])
    >>> logits.shape[0]                                              # 1 + 10 query positions
    11
"""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np
import torch

from ticktock.adapters.base import AdapterState, ModelAdapter, TreeLayout, UnitProtocol

# Special tokens of the unit protocol, by UnitProtocol field (MiniCPM-o 4.5 / Gander names).
PROTOCOL_TOKENS = {
    "unit_open": "<unit>",
    "unit_close": "</unit>",
    "listen": "<|listen|>",
    "speak": "<|speak|>",
    "backchannel": "<|backchannel|>",
    "interrupt": "<|interrupt|>",
    "chunk_eos": "<|chunk_eos|>",
    "turn_eos": "<|turn_eos|>",
    "tool_call_open": "<tool_call>",
    "tool_call_close": "</tool_call>",
    "tool_response_open": "<tool_response>",
    "tool_response_close": "</tool_response>",
}
DEFAULT_PROMPT_TEMPLATE = "<|im_start|>system\n{system}{tools}<|im_end|>\n"
DEFAULT_SYSTEM_PROMPT = "You are a helpful voice assistant. Listen, and answer when the user is done."


REQUIRED_TOKENS = ("unit_open", "unit_close", "listen", "speak", "chunk_eos", "turn_eos")


def protocol_from_tokenizer(tokenizer, names: dict | None = None, **limits) -> UnitProtocol:
    """Resolve the unit-protocol token ids from a tokenizer's added tokens.

    ``names``: UnitProtocol field -> token text, over ``PROTOCOL_TOKENS`` (e.g. ``{"write": "<|write|>"}``, or
    ``{"tool_call_open": "<delegate>"}``; None drops an optional token). Optional tokens (backchannel,
    interrupt, tool tokens, write) become None when the vocabulary lacks them; a named optional token the
    vocabulary lacks, or a missing required one, is an error.
    """
    from dataclasses import fields

    unknown = sorted(set(names or {}) - {f.name for f in fields(UnitProtocol)})
    if unknown:
        raise ValueError(f"protocol_tokens: {unknown} are not unit-protocol fields (e.g. {', '.join(PROTOCOL_TOKENS)}, write)")
    vocab = tokenizer.get_vocab()
    chosen = {**PROTOCOL_TOKENS, **(names or {})}
    ids = {field: vocab.get(token) if token else None for field, token in chosen.items()}
    missing = [chosen[f] for f in REQUIRED_TOKENS if ids[f] is None]
    missing += [token for field, token in (names or {}).items() if token and ids[field] is None]
    if missing:
        raise ValueError(f"tokenizer lacks the unit-protocol tokens {missing}")
    extra = tuple(vocab[t] for t in ("<|im_start|>", "<|im_end|>", "<|pad|>") if t in vocab)
    return UnitProtocol(**ids, extra_forbidden=extra, **limits)


DTYPES = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
          "float32": torch.float32, "fp32": torch.float32}


def resolve_device(device: str | None, default: str = "cpu") -> torch.device:
    """The torch device of a ``device`` setting: None takes ``default``; ``auto`` is CUDA when present, else CPU.

    >>> resolve_device(None), resolve_device("cpu", default="auto")
    (device(type='cpu'), device(type='cpu'))
    """
    device = default if device is None else device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def runtime_settings(device: str | None, dtype: str, attn_implementation: str) -> tuple[torch.device, torch.dtype, str]:
    """(device, torch dtype, attention implementation) of a real model's settings, ``auto`` (and a device of None)
    resolved for this machine: CUDA when present with bf16 and sdpa, else the CPU with fp32 and eager attention.

    >>> runtime_settings("cpu", "auto", "auto")
    (device(type='cpu'), torch.float32, 'eager')
    """
    from ticktock.errors import ConfigError

    device = resolve_device(device, default="auto")
    cuda = device.type == "cuda"
    if dtype != "auto" and dtype not in DTYPES:
        raise ConfigError(f"model.dtype: {dtype!r} is not one of {sorted(['auto', *DTYPES])}")
    torch_dtype = (torch.bfloat16 if cuda else torch.float32) if dtype == "auto" else DTYPES[dtype]
    attn = ("sdpa" if cuda else "eager") if attn_implementation == "auto" else attn_implementation
    return device, torch_dtype, attn


def render_tools(tools: Sequence[dict]) -> str:
    """Tool schemas as Gander puts them in the system prompt: \\n\\n<tools>\\n[compact JSON]\\n</tools>."""
    if not tools:
        return ""
    return "\n\n<tools>\n" + json.dumps(list(tools), separators=(",", ":"), ensure_ascii=False) + "\n</tools>"


class HFUnitAdapter(ModelAdapter):
    """A transformers causal LM + streaming audio front-end + tokenizer, on one DynamicCache.

    ``weights_origin``: what the weights are, as a checkpoint loader found them (``checkpoint.weights_origin``:
    ``{"miniature": True, "random_weights": True}`` for a miniature), reported by ``describe()`` into run.json
    ``environment.model``; empty (nothing reported) for a model built in code.

    ``prompt_chunk_tokens``: ``start_session`` prefills the prompt in forwards of at most this many tokens (None: one
    forward, as the real runtimes do). Eager attention over a long prompt in one forward holds a score for every pair
    of its tokens; chunks hold a chunk's rows only. The prompt prefill is no decoder's work and no clock charges it.
    Chunks change the cache's last float bits on some models (the matmuls' shapes differ), not on the fixture
    (checked in tests/adapters/test_hf_unit.py).
    """

    def __init__(
        self,
        model,
        tokenizer,
        frontend,
        protocol: UnitProtocol,
        name: str,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        prompt_template: str = DEFAULT_PROMPT_TEMPLATE,
        tools_in_prompt: bool = True,
        context_limit: int | None = None,
        context_reserve: int = 512,
        context_evict_to: float = 0.75,
        weights_origin: dict | None = None,
        prompt_chunk_tokens: int | None = None,
    ):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.frontend = frontend.eval()
        self.protocol = protocol
        self.name = name
        self.system_prompt = system_prompt
        self.prompt_template = prompt_template
        self.tools_in_prompt = tools_in_prompt
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self._embed = model.get_input_embeddings()
        self.cache = None
        self.frontend_state = None
        self._silence: dict[int, torch.Tensor] = {}
        self._fingerprint: str | None = None
        self.context_limit = context_limit or getattr(model.config, "max_position_embeddings", None)
        self.context_reserve = context_reserve
        self.context_evict_to = context_evict_to
        self.weights_origin = dict(weights_origin or {})  # {"miniature", "random_weights"} from the checkpoint loader
        self.prompt_chunk_tokens = prompt_chunk_tokens

    # -------------------------------------------------------------------------------------- session

    def replica(self) -> "HFUnitAdapter":
        """The same model, tokenizer and front-end modules (shared, not copied), with no session state yet."""
        import copy

        twin = copy.copy(self)
        twin.cache, twin.frontend_state = None, None
        return twin

    def prompt_text(self, system_prompt: str | None, tools: Sequence[dict]) -> str:
        tools_text = render_tools(tools) if self.tools_in_prompt else ""
        return self.prompt_template.format(system=system_prompt or self.system_prompt, tools=tools_text)

    @torch.inference_mode()
    def start_session(self, system_prompt: str | None, tools: Sequence[dict]) -> list[int]:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.model.config)
        self.frontend_state = self.frontend.initial_state()
        prompt = self.encode_text(self.prompt_text(system_prompt, tools))
        step = self.prompt_chunk_tokens or max(len(prompt), 1)
        for start in range(0, len(prompt), step):
            part = prompt[start:start + step]
            self.forward([part], logits_from=len(part))
        return prompt

    # ---------------------------------------------------------------------------------------- audio

    @torch.inference_mode()
    def _encode(self, samples) -> tuple[torch.Tensor, object]:
        audio = torch.as_tensor(np.asarray(samples, dtype=np.float32))
        embeds, state = self.frontend.encode(audio, self.frontend_state)
        return embeds.to(device=self.device, dtype=self.dtype), state

    def encode_audio(self, samples) -> torch.Tensor:
        embeds, self.frontend_state = self._encode(samples)
        return embeds

    def peek_audio(self, samples) -> torch.Tensor:
        return self._encode(samples)[0]

    @torch.inference_mode()
    def encode_many(self, calls: Sequence[tuple]) -> list:
        """Several sessions' audio encodings as one call of the front-end (``frontend.encode_many``), each call's
        embeddings (on its adapter's device and dtype, as ``_encode`` gives them) and each non-peek adapter's
        front-end state ending as if it had been encoded alone (``ModelAdapter.encode_many``).

        Falls back to one encoding after another for a single call, for replicas of another front-end object,
        for a front-end without ``encode_many`` (MiniCPM-o's, Qwen-Omni's), and when a call would read a state
        that an earlier call of the same batch advances (a non-peek call of an adapter followed by another call
        of it).

        Example::

            ea, eb = adapter.encode_many([(a, chunk_a, False), (b, chunk_b, True)])  # a advanced, b not
        """
        if not self._encodings_batch(calls):
            return super().encode_many(calls)
        audio = [torch.as_tensor(np.asarray(samples, dtype=np.float32)) for _, samples, _ in calls]
        results = self.frontend.encode_many(audio, [adapter.frontend_state for adapter, _, _ in calls])
        embeddings = []
        for (adapter, _, peek), (embeds, state) in zip(calls, results):
            if not peek:
                adapter.frontend_state = state
            embeddings.append(embeds.to(device=adapter.device, dtype=adapter.dtype))
        return embeddings

    def _encodings_batch(self, calls: Sequence[tuple]) -> bool:
        """Whether ``encode_many`` may run ``calls`` as one front-end call: two or more, every adapter on this
        front-end object, which can batch, and no call after a non-peek call of the same adapter."""
        if len(calls) < 2 or not hasattr(self.frontend, "encode_many"):
            return False
        advanced = set()
        for adapter, _, peek in calls:
            if getattr(adapter, "frontend", None) is not self.frontend or id(adapter) in advanced:
                return False
            if not peek:
                advanced.add(id(adapter))
        return True

    @torch.inference_mode()
    def silence_audio(self, num_samples: int) -> torch.Tensor:
        if num_samples not in self._silence:
            zeros = torch.zeros(num_samples)
            embeds, _ = self.frontend.encode(zeros, self.frontend.initial_state())
            self._silence[num_samples] = embeds.to(device=self.device, dtype=self.dtype)
        return self._silence[num_samples]

    @property
    def silence_depends_on_state(self) -> bool:
        return bool(getattr(self.frontend, "silence_depends_on_state", False))

    @property
    def causal_granularity_ms(self) -> int | None:
        return getattr(self.frontend, "causal_granularity_ms", None)

    # ------------------------------------------------------------------------------------------ LLM

    def segment_length(self, segment) -> int:
        return int(segment.shape[0]) if isinstance(segment, torch.Tensor) else len(segment)

    def _embed_segments(self, segments) -> torch.Tensor:
        parts = []
        for segment in segments:
            if isinstance(segment, torch.Tensor):
                parts.append(segment)
            elif len(segment):
                ids = torch.as_tensor(list(segment), dtype=torch.long, device=self.device)
                parts.append(self._embed(ids))
        return torch.cat(parts, dim=0)

    def _tree_inputs(self, tree: TreeLayout | None, length: int, start: int):
        """Explicit position ids, and the 4D additive mask for trees (None = causal chain)."""
        if tree is None:
            positions = torch.arange(start, start + length, device=self.device)
            return positions[None], None
        if len(tree) != length:
            raise ValueError(f"tree has {len(tree)} nodes but the forward has {length} query tokens")
        positions = start + torch.as_tensor(tree.depths(), device=self.device)
        visible = torch.zeros(length, length, dtype=torch.bool)
        for i, nodes in enumerate(tree.ancestors()):
            visible[i, nodes] = True
        mask = torch.zeros(1, 1, length, start + length, dtype=self.dtype, device=self.device)
        mask[..., start:] = torch.where(visible, 0.0, torch.finfo(self.dtype).min).to(device=self.device, dtype=self.dtype)
        return positions[None], mask

    @torch.inference_mode()
    def forward(self, segments, tree: TreeLayout | None = None, logits_from: int = 0) -> torch.Tensor:
        embeds = self._embed_segments(segments)
        length = embeds.shape[0]
        positions, mask = self._tree_inputs(tree, length, self.cache_length)
        keep = max(length - logits_from, 1)
        out = self.model(
            inputs_embeds=embeds[None],
            cache=self.cache,
            position_ids=positions,
            attention_mask=mask,
            use_cache=True,
            logits_to_keep=keep,
        )
        return out.logits[0, -keep:].float() if logits_from < length else out.logits[0, :0].float()

    @torch.inference_mode()
    def forward_many(self, calls: Sequence[tuple]) -> list:
        """Several sessions' forwards as one call of the model (batch B = len(calls)), each session's cache and
        logits ending as if it had run alone (up to the last float bits of a batched matmul).

        Every session keeps a cache of its own (so snapshot, restore, keep and evict stay per session); the
        batch is padded per step. Session i has q_i query tokens and a cache of L_i positions; with
        Q = max q_i and P = max L_i, each layer's past is copied, left-aligned, into a zero [B, heads, P, dim]
        tensor, and the queries are right-padded to Q. The additive 4D mask [B, 1, Q, P + Q] lets query j of
        session i see its real past [0, L_i) and, in the query block, its ancestors (tree) or its
        predecessors (chain), itself included; padded past columns get ``finfo.min``, and a padded query row
        sees only itself, so no softmax row is empty (its output is dropped). Positions are L_i + depth, as in
        ``forward``. Afterwards only the q_i new keys/values (columns P .. P + q_i) are appended to session
        i's cache. The cost beyond the batched forward: copying every session's past KV into the padded
        tensors (B x P positions per layer, once per step) and the attention over the padding.

        Falls back to one forward after another for a single call, for replicas of another model, and for
        caches that are not plain full-attention ``DynamicLayer``s (sliding windows).
        """
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        adapters = [call[0] for call in calls]
        plain = all(a.model is self.model and a.cache is not None
                    and all(type(layer) is DynamicLayer for layer in a.cache.layers) for a in adapters)
        if len(calls) < 2 or not plain:
            return super().forward_many(calls)
        embeds = [a._embed_segments(segments) for a, segments, _, _ in calls]
        queries = [int(e.shape[0]) for e in embeds]
        pasts = [a.cache_length for a in adapters]
        batch, width, past_width = len(calls), max(queries), max(pasts)

        inputs = embeds[0].new_zeros(batch, width, embeds[0].shape[-1])
        positions = torch.zeros(batch, width, dtype=torch.long)
        visible = torch.zeros(batch, width, past_width + width, dtype=torch.bool)
        for i, ((_, _, tree, _), q, past) in enumerate(zip(calls, queries, pasts)):
            inputs[i, :q] = embeds[i]
            visible[i, :q, :past] = True
            if tree is None:
                positions[i, :q] = past + torch.arange(q)
                visible[i, :q, past_width:past_width + q] = torch.ones(q, q, dtype=torch.bool).tril()
            else:
                if len(tree) != q:
                    raise ValueError(f"tree has {len(tree)} nodes but the forward has {q} query tokens")
                positions[i, :q] = past + torch.as_tensor(tree.depths())
                for j, nodes in enumerate(tree.ancestors()):
                    visible[i, j, [past_width + n for n in nodes]] = True
            positions[i, q:] = past
            visible[i, torch.arange(q, width), past_width + torch.arange(q, width)] = True  # padded query: itself
        mask = torch.zeros(visible.shape, dtype=self.dtype).masked_fill_(~visible, torch.finfo(self.dtype).min)

        cache = DynamicCache(config=self.model.config)
        if past_width:
            for index, layer in enumerate(cache.layers):
                ref = next(a.cache.layers[index] for a, past in zip(adapters, pasts) if past)
                keys = ref.keys.new_zeros(batch, ref.keys.shape[1], past_width, ref.keys.shape[-1])
                values = ref.values.new_zeros(batch, ref.values.shape[1], past_width, ref.values.shape[-1])
                for i, (a, past) in enumerate(zip(adapters, pasts)):
                    if past:
                        keys[i, :, :past] = a.cache.layers[index].keys[0]
                        values[i, :, :past] = a.cache.layers[index].values[0]
                layer.update(keys, values)

        starts = [min(max(from_, 0), q) for (_, _, _, from_), q in zip(calls, queries)]
        keep = max(width - min(starts), 1)
        out = self.model(
            inputs_embeds=inputs,
            cache=cache,
            position_ids=positions.to(self.device),
            attention_mask=mask[:, None].to(self.device),
            use_cache=True,
            logits_to_keep=keep,
        )
        for index, layer in enumerate(cache.layers):
            for i, (a, q) in enumerate(zip(adapters, queries)):
                new = slice(past_width, past_width + q)
                a.cache.layers[index].update(layer.keys[i:i + 1, :, new], layer.values[i:i + 1, :, new])
        first = width - keep  # the row of out.logits[:, 0]
        return [out.logits[i, start - first:q - first].float() for i, (start, q) in enumerate(zip(starts, queries))]

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    @property
    def cache_length(self) -> int:
        return 0 if self.cache is None else self.cache.get_seq_length()

    def snapshot(self) -> AdapterState:
        return AdapterState(self.cache_length, self.frontend_state)

    def restore(self, state: AdapterState) -> None:
        self._truncate(state.cache_length)
        self.frontend_state = state.frontend_state

    def _truncate(self, length: int) -> None:
        extra = self.cache_length - length
        if extra < 0:
            raise ValueError(f"cannot restore a cache of length {length}: it now holds only {self.cache_length}")
        if extra:
            self.cache.crop(-extra)

    def keep(self, start: int, indices: Sequence[int]) -> None:
        indices = list(indices)
        if indices == list(range(len(indices))):
            self._truncate(start + len(indices))
            return
        index = start + torch.as_tensor(indices, device=self.device)
        for layer in self.cache.layers:
            layer.keys = torch.cat([layer.keys[..., :start, :], layer.keys.index_select(-2, index)], dim=-2)
            layer.values = torch.cat([layer.values[..., :start, :], layer.values.index_select(-2, index)], dim=-2)

    # -------------------------------------------------------------------------------------- context

    def context_policy(self):
        """Old whole units are evicted (``EvictOldUnits``) when the model's RoPE can re-position the kept
        keys exactly (plain rotary embeddings, no attention scaling); otherwise ``StopAtLimit``."""
        from ticktock.adapters.context import EvictOldUnits, StopAtLimit

        if self.context_limit is not None and self._rotary() is not None:
            return EvictOldUnits(self.context_limit, self.context_reserve, self.context_evict_to)
        return StopAtLimit(self.context_limit, self.context_reserve)

    def _rotary(self):
        rotary = getattr(getattr(self.model, "model", None), "rotary_emb", None)
        if rotary is None or getattr(rotary, "attention_scaling", 1.0) != 1.0 or getattr(rotary, "rope_type", "default") != "default":
            return None
        return rotary

    @torch.inference_mode()
    def evict(self, start: int, end: int) -> None:
        """Drop cache positions [start, end) and rotate every later key back by ``end - start`` positions
        (RoPE is a rotation: R(p - d) k = R(-d) R(p) k), so positions stay equal to the cache length."""
        rotary = self._rotary()
        if rotary is None:
            super().evict(start, end)
        if not 0 <= start <= end <= self.cache_length:
            raise ValueError(f"cannot evict [{start}, {end}) from a cache of {self.cache_length}")
        if start == end:
            return
        layers = self.cache.layers
        shift = torch.tensor([[end - start]], device=self.device)
        cos, sin = rotary(layers[0].keys, shift)  # [1, 1, head_dim]
        for layer in layers:
            later = layer.keys[..., end:, :]
            half = later.shape[-1] // 2
            rotated_half = torch.cat([-later[..., half:], later[..., :half]], dim=-1)
            back = later * cos[:, None] - rotated_half * sin[:, None]
            layer.keys = torch.cat([layer.keys[..., :start, :], back], dim=-2)
            layer.values = torch.cat([layer.values[..., :start, :], layer.values[..., end:, :]], dim=-2)

    # ----------------------------------------------------------------------------------------- text

    def encode_text(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode_tokens(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def describe(self) -> dict:
        config = self.model.config
        return {
            "name": self.name,
            "architecture": type(self.model).__name__,
            "parameters": sum(p.numel() for p in self.model.parameters())
            + sum(p.numel() for p in self.frontend.parameters()),
            "hidden_size": config.hidden_size,
            "num_layers": config.num_hidden_layers,
            "vocab_size": config.vocab_size,
            "dtype": str(self.dtype).replace("torch.", ""),
            "device": str(self.device),
            "attn_implementation": config._attn_implementation,
            "audio_embeds_per_second": self.frontend.embeds_per_second,
            "context": self.context_policy().describe(),
            "weights_fingerprint": self.weights_fingerprint(),
            **self.weights_origin,
        }

    def weights_fingerprint(self) -> str:
        """A short hash of every weight (model and front-end), so a run never resumes with other weights.

        Computed once, on the device and without copying a tensor: per tensor its name, shape, float64
        sum and its first 256 values, hashed in order.
        """
        if self._fingerprint is None:
            import hashlib

            digest = hashlib.sha256()
            with torch.no_grad():
                for module in (self.model, self.frontend):
                    for name, tensor in module.state_dict().items():
                        head = tensor.reshape(-1)[:256].float().cpu().numpy().tobytes()
                        digest.update(f"{name}:{tuple(tensor.shape)}:{float(tensor.sum(dtype=torch.float64)):.12e}:".encode() + head)
            self._fingerprint = digest.hexdigest()[:16]
        return self._fingerprint
