"""The idle window and the audio that arrives during it.

After a chunk is done and before the next chunk's audio is complete, a decoder may work on the next chunk
(``Decoder.idle``): draft it under a hypothesis of its audio, feed arrived audio early, or wait for more.
``ArrivingAudio`` hands out only the samples that have arrived on the run's clock.
"""

from __future__ import annotations

import weakref
from typing import Sequence

from ticktock.clocks.base import Stopwatch, WindowClosed
from ticktock.decoders.counters import DRAFT, EARLY_PREFILL
from ticktock.decoders.step import ChunkInputs, ChunkStep, Phase


DRAFT_SELECTIONS = ("greedy", "independent", "shared")  # how a hypothesis chooses tokens under sampling


class ArrivingAudio:
    """The next chunk's audio as it streams in during the idle window before it: only what has arrived.

    The window opens ``budget_ms`` before the chunk's audio is complete, so at ``elapsed_ms`` into the window
    (on the run's clock: the modeled charges, or measured wall time) the chunk's first
    ``duration_ms - budget_ms + elapsed_ms`` of audio have arrived (all of it once the window is over).
    ``arrived`` returns a copy of the arrived samples, never a sample from later. The object holds none of the
    chunk's samples: they wait beside it, in a table private to this module (``_CHUNK_SAMPLES``), so that nothing
    reachable from what a decoder is handed (its attributes, closures, views) holds audio that has not arrived.
    Only deliberate introspection (importing that private name, walking the interpreter's frames or the garbage
    collector) reaches it, and ``ticktock certify`` catches a decoder that does by what it does (its no-peeking
    check replays the session with the future perturbed several ways).

    Example (a 1 s chunk, a window of 600 ms: 400 ms of its audio have already arrived when it opens)::

        >>> import numpy as np
        >>> audio = ArrivingAudio(np.arange(16000, dtype=np.float32), budget_ms=600.0)
        >>> audio.arrived_ms(0.0), audio.arrived_ms(250.0), len(audio.arrived(250.0)), audio.arrived_ms(900.0)
        (400.0, 650.0, 10400, 1000.0)
    """

    def __init__(self, samples, budget_ms: float, sample_rate: int = 16_000):
        import numpy as np

        chunk = np.array(samples, dtype=np.float32)  # a copy: no view of the caller's array
        _CHUNK_SAMPLES[self] = chunk
        self.sample_rate = sample_rate
        self.num_samples = len(chunk)
        self.duration_ms = 1000.0 * self.num_samples / sample_rate
        self.opened_at_ms = max(0.0, self.duration_ms - budget_ms)  # chunk time when the window opened

    def arrived_ms(self, elapsed_ms: float) -> float:
        return min(self.duration_ms, max(0.0, self.opened_at_ms + elapsed_ms))

    def samples_by(self, chunk_ms: float) -> int:
        """How many of the chunk's samples have arrived at ``chunk_ms`` into the chunk."""
        return min(self.num_samples, int(chunk_ms * self.sample_rate // 1000))

    def arrived(self, elapsed_ms: float, start: int = 0):
        """A copy of the arrived samples from ``start`` on, at ``elapsed_ms`` into the window."""
        return _CHUNK_SAMPLES[self][start: max(start, self.samples_by(self.arrived_ms(elapsed_ms)))].copy()


# Each ArrivingAudio's samples, kept beside it rather than in it (see ``ArrivingAudio``); an entry goes with its object.
_CHUNK_SAMPLES: "weakref.WeakKeyDictionary[ArrivingAudio, object]" = weakref.WeakKeyDictionary()


class IdleWindow(Phase):
    """The idle time after a chunk is done, before the next chunk's audio arrives; drafts that chunk.

    ``chunk_index`` is the chunk being drafted; ``next_inputs`` are its known inputs (no audio yet: the same
    object its post-audio step will get); ``next_samples`` its length in samples. Work past ``budget_ms`` is
    carried into that chunk's post-audio latency by the engine. On a device shared with other sessions a
    forward or encoding here may raise ``ticktock.clocks.base.WindowClosed`` instead of running (the chunk's
    audio arrived while it waited); the engine rolls the model state back if the decoder does not catch it.

    The chunk's audio streams in while the window runs (``arriving``, an ``ArrivingAudio``): ``arrived_audio``
    is what has arrived by now on the run's clock, ``wait_for_audio`` lets time pass until more has, and
    ``prefill_arrived`` feeds its final embeddings into the cache (early prefill).
    """

    phase_name = DRAFT

    def __init__(self, state, chunk_index: int, stopwatch: Stopwatch, budget_ms: float, next_samples: int,
                 arriving: ArrivingAudio | None = None):
        super().__init__(state, chunk_index, stopwatch)
        self.budget_ms = budget_ms
        self.next_samples = next_samples
        self.arriving = arriving

    @property
    def next_inputs(self) -> ChunkInputs:
        return self.inputs

    def remaining_ms(self) -> float:
        return self.budget_ms - self.elapsed_ms()

    # ---------------------------------------------------------------------------- arriving audio

    def arrived_ms(self) -> float:
        """Milliseconds of the next chunk's audio that have arrived by now (0 when the window has no audio)."""
        return self.arriving.arrived_ms(self.elapsed_ms()) if self.arriving is not None else 0.0

    def arrived_audio(self, start: int = 0):
        """The samples of the next chunk that have arrived by now, from sample ``start`` on (a copy)."""
        if self.arriving is None:
            raise ValueError("this idle window has no arriving audio")
        return self.arriving.arrived(self.elapsed_ms(), start)

    def wait_for_audio(self, chunk_ms: float, reserve_ms: float = 0.0) -> bool:
        """Let time pass with no work until ``chunk_ms`` of the next chunk's audio have arrived, keeping
        ``reserve_ms`` of the window for the work to follow; False (and no wait) when that does not fit before
        the window's end."""
        needed = max(0.0, chunk_ms - self.arrived_ms())
        if needed + reserve_ms >= self.remaining_ms():
            return False
        self.stopwatch.wait(needed)
        return True

    def follow_audio(self, every_ms: float, step) -> int:
        """Call ``step()`` each time another ``every_ms`` of the next chunk's audio has arrived, while the window
        lasts; time passes with no work in between. A step starts only when one as costly as the last one still
        ends before the window does (nothing is carried into the chunk's latency by waiting). Returns the steps run.

        Example: early prefill every 200 ms of audio (``Decoder.idle``)::

            window.follow_audio(200.0, window.prefill_arrived)
        """
        steps, cost = 0, 0.0
        mark = self.arrived_ms()
        while self.wait_for_audio(mark + every_ms, reserve_ms=cost):
            began, mark = self.elapsed_ms(), self.arrived_ms()
            step()
            cost, steps = self.elapsed_ms() - began, steps + 1
        return steps

    @property
    def unfed_samples(self) -> int:
        """Samples of the next chunk not in the cache yet (all of them unless early prefill fed some)."""
        return self.next_samples - self.inputs.prefilled_samples

    def prefill_arrived(self) -> int:
        """Early prefill: feed the next chunk's embeddings that are final by now into the cache, committed (they
        are what its post-audio pass would feed), with the chunk's head first if not fed yet. Only for an adapter
        whose front-end is causal at ``causal_granularity_ms``; the chunk's last piece is always left to the
        post-audio pass (it completes when the window ends). One encoding (charged by its share of the chunk)
        and one forward, logged as ``early_prefill``; returns the samples fed (0: nothing new was final)."""
        granularity = self.adapter.causal_granularity_ms
        if not granularity or self.arriving is None:
            return 0
        inputs = self.inputs
        final = min(int(self.arrived_ms() // granularity), int(self.arriving.duration_ms // granularity) - 1)
        upto = self.arriving.samples_by(final * granularity)
        if upto <= inputs.prefilled_samples:
            return 0
        samples = self.arrived_audio(inputs.prefilled_samples)[: upto - inputs.prefilled_samples]
        start, before = self.adapter.cache_length, self.adapter.snapshot()
        try:
            embeds = self.encode(samples, fraction=len(samples) / self.next_samples, early_prefill=True)
            segments = [inputs.head, embeds] if inputs.head_fed_at is None else [embeds]
            length = sum(self.adapter.segment_length(s) for s in segments)
            self.forward(segments, logits_from=length, phase=EARLY_PREFILL)
        except WindowClosed:  # a shared device: the chunk's audio arrived first; the post-audio pass feeds it all
            self.adapter.restore(before)  # the front-end may have encoded the piece already
            return 0
        if inputs.head_fed_at is None:
            inputs.head_fed_at = start
        inputs.prefilled_samples = upto
        return len(samples)

    def silence(self, fresh: bool = False):
        """Embeddings of a chunk of silence for the next chunk.

        Default: the front-end applied to zeros after zeros, computed once per adapter and cached (no
        cost). ``fresh``, and always for an adapter whose silence embeddings depend on its streaming state
        (``ModelAdapter.silence_depends_on_state``: MiniCPM-o's dynamic mel floor, prefix frames and encoder
        KV): the front-end applied to zeros from the current streaming state, then rolled back (the exact
        "next second is silent" counterfactual; charged to this window as one audio encoding), unless the engine
        encoded just that in the previous chunk's audio encoding step (``Decoder.silence_first``: then it is
        taken as it is, at no cost here).
        """
        import numpy as np

        unfed = self.unfed_samples  # all of the chunk, unless early prefill fed its first part
        prepared = self.state.prepared_silence(self.chunk_index, unfed)
        if prepared is not None:
            return prepared
        if fresh or self.adapter.silence_depends_on_state or unfed < self.next_samples:
            return self.encode(np.zeros(unfed, dtype=np.float32), peek=True, fraction=unfed / self.next_samples)
        return self.adapter.silence_audio(self.next_samples)

    def partial_audio(self):
        """Embeddings of the "arrived audio + silence" hypothesis of the next chunk's part not in the cache yet:
        its samples that have arrived, then zeros to the chunk's end, encoded from the current streaming state and
        rolled back (one encoding, charged to this window); and the milliseconds of audio it holds."""
        import numpy as np

        arrived = self.arrived_audio(self.inputs.prefilled_samples)
        unfed = self.unfed_samples
        hypothesis = np.zeros(unfed, dtype=np.float32)
        hypothesis[: len(arrived)] = arrived
        return self.encode(hypothesis, peek=True, fraction=unfed / self.next_samples), self.arrived_ms()

    # ---------------------------------------------------------------------------- speech ahead

    def speak_ahead(self, tokens: Sequence[int]) -> bool:
        """Speculative synthesis: synthesize the spoken text of a draft of the next chunk (its complete output
        ``tokens``) now, charged to this window, so that its audio is ready at once if the chunk's committed text is
        the same (``ticktock.replay.speech_out``). Nothing happens (False) without a talker, for a talker whose audio
        does not depend on the text alone, for a draft that speaks nothing, or for a text already synthesized; on a
        shared device it may raise ``WindowClosed`` like any work here."""
        from ticktock.adapters.base import spoken_text

        speech = self.state.speech
        if speech is None or not speech.talker.text_only:
            return False
        text = spoken_text(tokens, self.adapter)
        prepared = self.state.prepared_speech(self.chunk_index)
        if not text or text in prepared:
            return False
        samples, _ = speech.synthesize(self.stopwatch, self.adapter, text)
        prepared[text] = samples
        return True

    def decoding(self, output: Sequence[int] = (), selection: str = "shared") -> ChunkStep:
        """A hypothesis decoding of the next chunk in this window (forwards logged as ``draft``).

        ``output`` pre-commits tokens without a forward (e.g. a forced runner-up first token). ``selection``: how
        it chooses tokens under sampling (``TokenSelector.for_drafts``); ``shared``, the default, chooses as the
        post-audio step will (the oracle probe's comparison), ``greedy`` as a deterministic drafter.
        """
        step = ChunkStep(self.state, self.chunk_index, self.stopwatch, phase_name=self.phase_name, output=output)
        step.selector = self.selector.for_drafts(selection)
        return step
