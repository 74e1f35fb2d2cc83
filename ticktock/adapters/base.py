"""The model adapter contract: the one seam every chunk-interleaved full-duplex model plugs into.

A session is one causal sequence. Every chunk of audio appends a *unit* (MiniCPM-o 4.5 / Gander layout)::

    <unit> [audio embeddings] [<tool_response> ... </tool_response>]   <- known inputs of the chunk
    <|listen|>                                                          <- listen unit
    <|speak|> t1 .. tK [<|turn_eos|>] <|chunk_eos|>                     <- speak unit (K <= max_text_tokens)
    <|backchannel|> t1 .. tK <|chunk_eos|>                              <- backchannel unit
    <|interrupt|>                                                       <- control-only unit
    <tool_call> {json} </tool_call> <|chunk_eos|>                       <- tool unit (no decision token)
    </unit>

The first generated token is the *decision*; a chunk's output ends with a terminator
(``<|listen|>``, ``<|interrupt|>`` or ``<|chunk_eos|>``). Convention used by every decoder: the last
committed token of a chunk and ``</unit>`` are fed at the start of the next chunk's prefill forward (as the
MiniCPM-o runtime defers them), so autoregressive decoding spends exactly one post-audio forward per
generated token (#MAT = 1.00).

Example of one AR chunk (cache holds everything before ``<|chunk_eos|>`` of the previous chunk)::

    forward([<|chunk_eos|>, </unit>, <unit>] + audio[10])  -> <|speak|>
    forward([<|speak|>])                                    -> "Paris"
    forward(["Paris"])                                      -> <|chunk_eos|>   (3 forwards, 3 tokens)
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Sequence

def hermes_call_text(name: str, arguments: dict) -> str:
    """The text inside ``<tool_call>`` in the Hermes / Qwen form (json.dumps default separators).

    Example::

        >>> hermes_call_text("f", {"x": 1})
        '{"name": "f", "arguments": {"x": 1}}'
    """
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


@dataclass(frozen=True)
class UnitProtocol:
    """Token ids and limits of the unit protocol, plus the decoding grammar shared by every decoder.

    ``allowed(prefix)`` gives the tokens the model may emit after ``prefix`` (the tokens already
    committed in this chunk): ``("only", ids)`` or ``("except", ids)``. The grammar is a pure function of
    the in-chunk prefix, so draft positions are masked exactly as AR positions are (lossless).

    Example::

        >>> p = UnitProtocol(unit_open=1, unit_close=2, listen=3, speak=4, chunk_eos=5, turn_eos=6,
        ...                  max_text_tokens=2)
        >>> p.allowed([])[0], sorted(p.allowed([])[1])
        ('only', [3, 4])
        >>> p.allowed([4, 10, 11])
        ('only', frozenset({5, 6}))
    """

    unit_open: int
    unit_close: int
    listen: int
    speak: int
    chunk_eos: int
    turn_eos: int
    backchannel: int | None = None
    interrupt: int | None = None
    tool_call_open: int | None = None
    tool_call_close: int | None = None
    tool_response_open: int | None = None
    tool_response_close: int | None = None
    max_text_tokens: int = 8  # K: lexical tokens per speak/backchannel unit
    max_tool_tokens: int = 96  # tokens in a tool unit, terminator included
    max_tool_calls: int = 4
    extra_forbidden: tuple[int, ...] = ()  # e.g. <|im_start|>, padding: never generated
    content_forbidden: frozenset[int] = frozenset()  # never in speak/backchannel/write text (MiniCPM-o bad_token_ids)
    tool_call_joiner: int | None = None  # a token between two calls of one tool unit (Gander: "\n")
    write: int | None = None  # LWS: a unit may open with a written-text segment, then speak
    max_write_tokens: int = 0  # lexical tokens of a write segment
    listen_closes_turn: bool = True  # False: no <|listen|> decision while the assistant's turn is open

    @property
    def decisions(self) -> tuple[int, ...]:
        ids = (self.listen, self.speak, self.backchannel, self.interrupt, self.write)
        return tuple(i for i in ids if i is not None)

    @property
    def terminators(self) -> frozenset[int]:
        return frozenset(i for i in (self.listen, self.interrupt, self.chunk_eos) if i is not None)

    @property
    def max_tokens_per_chunk(self) -> int:
        write = self.max_write_tokens + 1 if self.write is not None else 0
        return max(write + self.max_text_tokens + 3, self.max_tool_tokens)

    def unit_head(self, chunk_index: int) -> list[int]:
        """The tokens that open chunk ``chunk_index``'s unit, before its audio: ``</unit> <unit>`` (closing
        the previous chunk's unit), or ``<unit>`` alone for chunk 0. The one definition of the unit layout,
        used by the replay and by the embedded model's training data alike. (A replay feeds the previous
        chunk's last output token in front of it, in the same forward.)

        Example::

            >>> p = UnitProtocol(unit_open=1, unit_close=2, listen=3, speak=4, chunk_eos=5, turn_eos=6)
            >>> p.unit_head(0), p.unit_head(1)
            ([1], [2, 1])
        """
        return [self.unit_close, self.unit_open] if chunk_index else [self.unit_open]

    @cached_property
    def _structural(self) -> frozenset[int]:
        return self.structural()

    @cached_property
    def _text_forbidden(self) -> frozenset[int]:
        return self._structural | self.content_forbidden

    def structural(self) -> frozenset[int]:
        """Tokens that never appear inside a unit's content."""
        ids = (
            *self.decisions,
            self.unit_open,
            self.unit_close,
            self.tool_call_open,
            self.tool_call_close,
            self.tool_response_open,
            self.tool_response_close,
            *self.extra_forbidden,
        )
        return frozenset(i for i in ids if i is not None)

    def kind_of(self, tokens: Sequence[int]) -> str:
        """Chunk kind from its first output token."""
        if not tokens:
            return "other"
        first = tokens[0]
        names = {
            self.listen: "listen",
            self.speak: "speak",
            self.backchannel: "backchannel",
            self.interrupt: "interrupt",
            self.tool_call_open: "tool",
            self.write: "speak" if self.speak in tokens else "write",
        }
        names.pop(None, None)
        return names.get(first, "other")

    def turn_open_after(self, was_open: bool, tokens: Sequence[int]) -> bool:
        """Whether the assistant's turn is open after a chunk's output: speech opens it, ``<|turn_eos|>``, a tool
        unit or an interrupt closes it, listening and backchannels leave it as it was (MiniCPM-o's
        ``current_turn_ended``)."""
        if not tokens:
            return was_open
        if self.turn_eos in tokens or tokens[0] in (self.tool_call_open, self.interrupt):
            return False
        return True if self.speak in tokens else was_open

    def is_done(self, tokens: Sequence[int]) -> bool:
        """True when a chunk's committed output is complete."""
        return bool(tokens) and (tokens[-1] in self.terminators or len(tokens) >= self.max_tokens_per_chunk)

    def allowed(self, prefix: Sequence[int], tools_enabled: bool = True, turn_open: bool = False) -> tuple[str, frozenset[int]]:
        """``turn_open``: the assistant's turn is open at the chunk's start (``turn_open_after``); it matters
        only when ``listen_closes_turn`` is False."""
        if not prefix:
            return "only", self._first_tokens(tools_enabled, turn_open)
        if prefix[0] == self.tool_call_open:
            return self._allowed_in_tool_unit(prefix)
        if prefix[0] == self.write and self.write is not None:
            return self._allowed_in_write_unit(prefix)
        return self._allowed_in_text_unit(prefix)

    def _first_tokens(self, tools_enabled: bool, turn_open: bool) -> frozenset[int]:
        return self._first_choices[tools_enabled, turn_open and not self.listen_closes_turn]

    @cached_property
    def _first_choices(self) -> dict[tuple[bool, bool], frozenset[int]]:
        choices = {}
        for tools in (False, True):
            for no_listen in (False, True):
                first = set(self.decisions)
                if tools and self.tool_call_open is not None:
                    first.add(self.tool_call_open)
                if no_listen:
                    first.discard(self.listen)
                choices[tools, no_listen] = frozenset(first)
        return choices

    def _allowed_in_text_unit(self, prefix: Sequence[int]) -> tuple[str, frozenset[int]]:
        if self.turn_eos in prefix:
            return "only", frozenset({self.chunk_eos})
        if len(prefix) - 1 >= self.max_text_tokens:
            return "only", frozenset({self.turn_eos, self.chunk_eos})
        return "except", self._text_forbidden

    def _allowed_in_write_unit(self, prefix: Sequence[int]) -> tuple[str, frozenset[int]]:
        """``<|write|> w1 .. wJ [<|speak|> t1 .. tK [<|turn_eos|>]] <|chunk_eos|>`` (LWS: text written while
        listening, then optionally speech in the same unit)."""
        if self.speak in prefix:
            return self._allowed_in_text_unit(prefix[prefix.index(self.speak):])
        if len(prefix) - 1 >= self.max_write_tokens:
            return "only", frozenset({self.speak, self.chunk_eos})
        return "except", self._write_forbidden

    @cached_property
    def _call_forbidden(self) -> frozenset[int]:
        return (self._structural - {self.tool_call_close}) | {self.chunk_eos, self.turn_eos}

    @cached_property
    def _write_forbidden(self) -> frozenset[int]:
        return (self._text_forbidden - {self.speak}) | {self.turn_eos}

    def _allowed_in_tool_unit(self, prefix: Sequence[int]) -> tuple[str, frozenset[int]]:
        if len(prefix) >= self.max_tool_tokens - 1:
            return "only", frozenset({self.chunk_eos})
        calls_closed = sum(1 for t in prefix if t == self.tool_call_close)
        calls_open = sum(1 for t in prefix if t == self.tool_call_open)
        if calls_open > calls_closed:  # inside a call: JSON text, or the closing tag
            return "except", self._call_forbidden
        if self.tool_call_joiner is not None and prefix[-1] == self.tool_call_joiner:
            return "only", frozenset({self.tool_call_open})
        if calls_closed >= self.max_tool_calls:
            return "only", frozenset({self.chunk_eos})
        following = self.tool_call_open if self.tool_call_joiner is None else self.tool_call_joiner
        return "only", frozenset({self.chunk_eos, following})


@dataclass(frozen=True)
class TreeLayout:
    """Attention layout of a forward's query tokens: each query sees the whole cache, itself and its
    ancestors (``parents[i]`` is the index of query i's parent within this forward, -1 for none).
    Position of query i = cache length + depth(i). A plain chain is ``parents = [-1, 0, 1, ...]``.

    Example: a prefill of 2 tokens followed by two one-token branches::

        >>> TreeLayout((-1, 0, 1, 1)).depths()
        [0, 1, 2, 2]
    """

    parents: tuple[int, ...]

    def __post_init__(self):
        for i, p in enumerate(self.parents):
            if not -1 <= p < i:
                raise ValueError(f"TreeLayout: parent of node {i} must come before it, got {p}")

    def __len__(self) -> int:
        return len(self.parents)

    def depths(self) -> list[int]:
        depths: list[int] = []
        for p in self.parents:
            depths.append(0 if p < 0 else depths[p] + 1)
        return depths

    def ancestors(self) -> list[list[int]]:
        """ancestors()[i] lists the nodes query i attends to within the forward (itself included)."""
        result: list[list[int]] = []
        for i, p in enumerate(self.parents):
            result.append(([] if p < 0 else result[p]) + [i])
        return result

    @staticmethod
    def chain(n: int) -> "TreeLayout":
        return TreeLayout(tuple(range(-1, n - 1)))


@dataclass
class AdapterState:
    """What ``snapshot`` captured: the KV length and the streaming state beside it."""

    cache_length: int
    frontend_state: Any = None
    extra: dict = field(default_factory=dict)


Segment = Any  # list[int] of token ids, or an adapter-specific block of audio embeddings


class ModelAdapter(ABC):
    """A chunk-interleaved full-duplex speech LM behind one interface.

    Lifecycle per session: ``start_session`` once, then per chunk ``encode_audio`` (advances the streaming
    front-end) and any number of ``forward`` calls; ``snapshot``/``restore`` roll the whole model state
    (KV cache and front-end) back exactly; ``keep`` compacts the cache after a tree verification.

    Example (greedy AR on one chunk; see ``ticktock.decoders.ar`` for the real loop)::

        adapter.start_session(system_prompt=None, tools=[])
        audio = adapter.encode_audio(samples_16k)            # 1 s of audio -> e.g. 10 embeddings
        logits = adapter.forward([[p.unit_open], audio])     # [Q, V] for the query tokens
        first = int(logits[-1].argmax())
    """

    name: str = "adapter"
    protocol: UnitProtocol
    context_limit: int | None = None  # positions the model takes (None: unbounded)

    @abstractmethod
    def start_session(self, system_prompt: str | None, tools: Sequence[dict]) -> list[int]:
        """Reset all state and prefill the system prompt (and tool schemas); return the prompt's token ids."""

    @abstractmethod
    def encode_audio(self, samples) -> Segment:
        """Encode one chunk of 16 kHz float32 audio; advances the streaming front-end."""

    @abstractmethod
    def peek_audio(self, samples) -> Segment:
        """Encode as ``encode_audio`` would now, without advancing the front-end (for hypotheses)."""

    @abstractmethod
    def silence_audio(self, num_samples: int) -> Segment:
        """Embeddings of ``num_samples`` of digital silence after silence (computed once, then cached)."""

    @property
    def silence_depends_on_state(self) -> bool:
        """True when the embeddings of a silent chunk depend on the audio before it (a front-end with a
        dynamic normalisation floor, prefix frames or an encoder cache, such as MiniCPM-o's): a silence
        hypothesis must then be encoded from the current streaming state (``peek_audio``), never taken from
        ``silence_audio``. Speculative Listening reads this; no user setting is needed."""
        return False

    @property
    def causal_granularity_ms(self) -> int | None:
        """The front-end's causal step: an embedding is final once the ``causal_granularity_ms`` of audio it
        covers has arrived, and encoding a chunk piece by piece on these boundaries equals encoding it at once
        (the embedded model: 100 ms). None for a front-end that encodes a chunk as a whole (MiniCPM-o's
        bidirectional chunk encoder): nothing of a chunk is final before all of it has arrived. Early prefill
        (``IdleWindow.prefill_arrived``) reads this."""
        return None

    @abstractmethod
    def forward(self, segments: Sequence[Segment], tree: TreeLayout | None = None, logits_from: int = 0):
        """Append the segments to the cache in one forward; return float32 logits [Q - logits_from, V]."""

    @property
    @abstractmethod
    def cache_length(self) -> int:
        """Number of positions in the KV cache."""

    @abstractmethod
    def snapshot(self) -> AdapterState: ...

    @abstractmethod
    def restore(self, state: AdapterState) -> None:
        """Return to ``state`` exactly. Valid while the cache prefix up to its length is unchanged."""

    @abstractmethod
    def keep(self, start: int, indices: Sequence[int]) -> None:
        """Keep cache[:start] followed by cache[start + i] for i in indices (tree compaction)."""

    @abstractmethod
    def encode_text(self, text: str) -> list[int]: ...

    @abstractmethod
    def decode_tokens(self, ids: Sequence[int]) -> str: ...

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Number of rows of the output logits."""

    def segment_length(self, segment: Segment) -> int:
        return len(segment)

    def context_policy(self):
        """How this model keeps a long session within ``context_limit`` (see ``ticktock.adapters.context``).

        Default: no policy of its own (``StopAtLimit``): a session that would run past the limit stops with
        an error naming the session and chunk. An adapter that can evict (``evict``) returns ``EvictOldUnits``.
        """
        from ticktock.adapters.context import StopAtLimit

        return StopAtLimit(self.context_limit)

    def evict(self, start: int, end: int) -> None:
        """Remove cache positions [start, end); later entries move down so that position = cache length again
        (their content stays what it was computed with). Only called by a policy that evicts, at a chunk
        boundary, never inside a snapshot's lifetime."""
        raise NotImplementedError(f"model {self.name} cannot evict from its cache")

    def tool_response_tokens(self, text: str) -> list[int]:
        """Token ids of an injected tool response: <tool_response>\\n{text}\\n</tool_response>."""
        p = self.protocol
        if p.tool_response_open is None or p.tool_response_close is None:
            raise ValueError(f"model {self.name} has no tool-response tokens")
        return [p.tool_response_open, *self.encode_text("\n" + text + "\n"), p.tool_response_close]

    def tool_call_tokens(self, name: str, arguments: dict) -> list[int]:
        """Token ids of one call as the model writes it: ``<tool_call>{json}</tool_call>``.

        The default is the Hermes / Qwen form (``{"name": ..., "arguments": {...}}``, json.dumps default
        separators) that MiniCPM-o, Gander and the embedded model use; an adapter whose model writes calls
        another way overrides this. Decoders use it to draft calls from the session's tool schemas.
        """
        p = self.protocol
        if p.tool_call_open is None or p.tool_call_close is None:
            raise ValueError(f"model {self.name} has no tool-call tokens")
        return [p.tool_call_open, *self.encode_text(hermes_call_text(name, arguments)), p.tool_call_close]

    def tool_call_texts(self, tokens: Sequence[int]) -> list[str]:
        """The text inside each <tool_call> ... </tool_call> span of a chunk's output."""
        p = self.protocol
        texts, current = [], None
        for token in tokens:
            if token == p.tool_call_open:
                current = []
            elif token == p.tool_call_close and current is not None:
                texts.append(self.decode_tokens(current).strip())
                current = None
            elif current is not None:
                current.append(token)
        if current is not None:  # cut by the token cap
            texts.append(self.decode_tokens(current).strip())
        return texts

    def synchronize(self) -> None:
        """Wait for queued device work (CUDA); a no-op on CPU."""

    def replica(self) -> "ModelAdapter":
        """Another adapter on the same weights with a session state of its own (a KV cache and front-end
        state), for sessions that share a device (``concurrency.sessions``)."""
        raise NotImplementedError(f"model {self.name} cannot replay several sessions at once (no replica())")

    def forward_many(self, calls: Sequence[tuple]) -> list:
        """Forwards of several sessions in one device step: ``calls`` are (adapter, segments, tree, logits_from)
        with every adapter a replica of this one; returns each call's logits. Default: one after another (an
        adapter that can batch overrides this)."""
        return [adapter.forward(segments, tree, logits_from) for adapter, segments, tree, logits_from in calls]

    def encode_many(self, calls: Sequence[tuple]) -> list:
        """Audio encodings of several sessions in one device step, ``forward_many``'s counterpart for the front-end:
        ``calls`` are (adapter, samples, peek) with every adapter a replica of this one; returns each call's
        embeddings exactly as ``adapter.encode_audio(samples)`` (peek False: advances that adapter's front-end
        state) or ``adapter.peek_audio(samples)`` (peek True: leaves it as it was) would alone, in call order.
        Default: one after another (an adapter whose front-end can batch overrides this).

        Example (two sessions' 1 s chunks, and a hypothesis of the first one's next chunk)::

            a, b = adapter.replica(), adapter.replica()
            a.start_session(None, []); b.start_session(None, [])
            ea, eb = adapter.encode_many([(a, chunk_a, False), (b, chunk_b, False)])
            # ea == a.encode_audio(chunk_a) and eb == b.encode_audio(chunk_b) had they run alone
            [hypothesis] = adapter.encode_many([(a, silence, True)])   # a's front-end state unchanged
        """
        return [adapter.peek_audio(samples) if peek else adapter.encode_audio(samples) for adapter, samples, peek in calls]

    def describe(self) -> dict:
        """Facts for run.json: name, parameters, dtype, device, attention implementation. A
        ``weights_fingerprint`` entry, when present, joins the run's identity (no resume across weights)."""
        return {"name": self.name}


def spoken_tokens(tokens: Sequence[int], protocol) -> list[int]:
    """The tokens a talker speaks from a chunk's output: the lexical tokens after its speak (or backchannel)
    decision; none for a listen, tool or written-only chunk.

    >>> p = UnitProtocol(unit_open=1, unit_close=2, listen=3, speak=4, chunk_eos=5, turn_eos=6, backchannel=7)
    >>> spoken_tokens([4, 10, 11, 5], p), spoken_tokens([3], p), spoken_tokens([7, 12, 6], p)
    ([10, 11], [], [12])
    """
    voiced = {t for t in (protocol.speak, protocol.backchannel) if t is not None}
    start = next((i for i, t in enumerate(tokens) if t in voiced), None)
    if start is None:
        return []
    skip = protocol.structural() | {protocol.chunk_eos, protocol.turn_eos}
    return [int(t) for t in tokens[start + 1:] if t not in skip]


def spoken_text(tokens: Sequence[int], adapter) -> str:
    """The text a talker speaks for a chunk's output (``spoken_tokens`` decoded, spaces collapsed; "" for none)."""
    ids = spoken_tokens(tokens, adapter.protocol)
    return " ".join(adapter.decode_tokens(ids).split()) if ids else ""
