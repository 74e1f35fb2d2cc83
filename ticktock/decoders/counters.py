"""What is counted for a chunk: the forward log's rows and the chunk's counters.

Everything a decoder's work adds to the results goes through two records: one ``ForwardRecord`` per target
forward (a row of forwards.parquet) and one ``ChunkCounters`` per chunk (the chunk row's counters). Decoders
never write them directly: ``Phase.forward`` and ``ChunkStep.verify`` (``ticktock.decoders.step``) do.

Example::

    >>> counters = ChunkCounters()
    >>> counters.count_forward(POST_AUDIO, query_tokens=12, waited_ms=0.0)
    >>> counters.post_audio_forwards
    1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ticktock.decoders.trees import DraftTree


@dataclass
class ForwardRecord:
    """One target forward, as written to forwards.parquet."""

    chunk_index: int
    phase: str  # "post_audio" or "draft"
    query_tokens: int
    context_tokens: int
    wall_ms: float
    charged_ms: float
    tokens_committed: int = 0
    draft_tokens: int = 0
    tree: bool = False
    batch_size: int = 1  # sessions whose forwards ran in the same device step (concurrency.batching)
    device_wait_ms: float = 0.0  # time it waited for the device while other sessions' work ran
    end_ms: float = 0.0  # the phase's clock time when it finished (from the phase's start: ``Stopwatch.elapsed_ms``)



POST_AUDIO = "post_audio"
DRAFT = "draft"
EARLY_PREFILL = "early_prefill"  # the forward log's label of an idle window's feed of arrived audio


@dataclass
class ChunkCounters:
    """Everything counted for one chunk, in one place: the result row's counters come only from here.

    Post-audio forwards (after the chunk's audio arrived): ``post_audio_forwards``; ``draft_tokens``
    offered in them and ``accepted_draft_tokens``; ``lookup_hits``: forwards after the chunk's first (the
    audio pass) that accepted at least one draft token (the same meaning for every decoder);
    ``draft_source``: the source of the draft tokens accepted in the audio pass (``"none"`` when a draft
    was offered there and nothing was accepted; None when no draft was offered).

    The idle window that drafted this chunk (before its audio arrived): ``window_budget_ms`` on the run's
    clock, ``window_used_ms`` charged in it, ``window_wall_ms`` measured, ``window_forwards`` and the
    ``window_query_tokens`` they fed.

    Sharing a device (``concurrency.sessions`` > 1): ``device_wait_ms``, the time the chunk's post-audio work
    waited for the device while other sessions' work ran (0 for a session alone).

    Context: ``context_tokens`` in the cache when the chunk's post-audio work began; ``evicted_tokens`` removed
    from it just before the chunk by the model's context policy (``ticktock.adapters.context``).

    Silence-draft outcome (``record_silence_draft``; SL and the oracle probe): ``draft_full_match`` (the
    draft was complete and equals the output) and ``first_token_changed``; None for other decoders.

    The chunk's audio arriving during its idle window: ``window_waited_ms`` (time let pass with no work, waiting
    for it), ``prefilled_ms`` (its audio fed into the cache early); SL's ``hypotheses_drafted`` and
    ``draft_arrived_fraction`` (real audio in the hypothesis whose draft the audio pass accepted).

    Example::

        >>> c = ChunkCounters(); c.record_silence_draft([3, 9, 4], complete=True, output=[3, 9, 4]); c.draft_full_match
        True
    """

    post_audio_forwards: int = 0
    draft_tokens: int = 0
    accepted_draft_tokens: int = 0
    lookup_hits: int = 0
    draft_source: str | None = None
    draft_full_match: bool | None = None
    first_token_changed: bool | None = None
    window_budget_ms: float = 0.0
    window_used_ms: float = 0.0
    window_wall_ms: float = 0.0
    window_forwards: int = 0
    window_query_tokens: int = 0
    context_tokens: int = 0
    evicted_tokens: int = 0
    device_wait_ms: float = 0.0
    window_waited_ms: float = 0.0
    prefilled_ms: float = 0.0
    hypotheses_drafted: int | None = None
    draft_arrived_fraction: float | None = None

    def count_forward(self, phase: str, query_tokens: int, waited_ms: float = 0.0) -> None:
        if phase == POST_AUDIO:
            self.post_audio_forwards += 1
            self.device_wait_ms += waited_ms
        else:
            self.window_forwards += 1
            self.window_query_tokens += query_tokens

    def count_verification(self, draft: "DraftTree", accepted_nodes: list[int]) -> None:
        """A post-audio verify forward: what it offered, what it accepted, and from which source."""
        self.draft_tokens += draft.num_verifiable()
        self.accepted_draft_tokens += len(accepted_nodes)
        if self.post_audio_forwards == 1:  # the audio pass
            if len(draft):
                self.draft_source = draft.sources[accepted_nodes[0]] if accepted_nodes else "none"
        elif accepted_nodes:
            self.lookup_hits += 1

    def record_silence_draft(self, draft: Sequence[int], complete: bool, output: Sequence[int]) -> None:
        self.draft_full_match = bool(complete) and list(draft) == list(output)
        self.first_token_changed = list(draft[:1]) != list(output[:1])
