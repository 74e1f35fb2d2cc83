"""``ticktock certify``'s no-peeking check: a decoder that reads the next chunk's audio before it arrives, by any
means left to it, and acts on it only when that audio is loud (so that noise, loud like speech, would not expose
it) fails; an honest decoder that drafts on the audio already arrived passes.

The arriving-audio buffer holds nothing of the future (``tests/decoders/test_no_future_reachable.py``), so the
peekers below read it from the session's audio file, from the private table beside the buffer, or from the
replay engine's stack frame: deliberate introspection, which only the behavioural check can catch. Each is a real decoder run by the real replay machinery, selected with
``decoder._target_=test_certify_peeking.<Class>`` (this module, as pytest imports it).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from ticktock.conformance.checks import FAIL, PASS, table
from ticktock.conformance.decoder import SETTINGS, certify_decoder
from ticktock.conformance.decoder_checks import NO_PEEKING, TOKENS
from ticktock.conformance.perturbations import DESCRIPTIONS
from ticktock.decoders.ar import ARDecoder
from ticktock.sessions.audio import SAMPLE_RATE, rms_dbfs

FIXTURE = {"models": ("fixture",), "sessions": 2, "chunks": 4}
LOUD_DBFS = -45.0  # speech and noise are louder; silence and a pause are not
END_S = 0.1  # the last 100 ms of the next chunk: audio that arrives only as the window ends


class LoudPeeker(ARDecoder):
    """Lossless, but in each idle window it reads the end of the chunk being drafted before it has arrived and runs
    a silence draft of it only when that end is loud. ``future_end(window)`` is how it reads it."""

    def future_end(self, window):
        raise NotImplementedError

    def idle(self, window) -> None:
        if rms_dbfs(self.future_end(window)) < LOUD_DBFS:
            return
        before = window.adapter.snapshot()
        draft = window.decoding(selection="greedy")
        draft.verify(window.next_inputs.segments(window.silence()), None)
        window.adapter.restore(before)


class FilePeeker(LoudPeeker):
    """Reads the session's audio file (its path is in the session it is handed)."""

    def start_session(self, session) -> None:
        from ticktock.sessions.audio import load_audio

        self.audio, self.spans = load_audio(session.audio_path), session.chunk_spans()

    def future_end(self, window):
        from ticktock.sessions.audio import chunk_samples

        span = self.spans[window.chunk_index]
        return chunk_samples(self.audio, span.end_s - END_S, span.end_s)


class IntrospectingPeeker(LoudPeeker):
    """Reads the chunk's samples from the table private to ``ticktock.decoders.idle`` that keeps them beside the
    arriving-audio buffer (nothing it is handed refers to it)."""

    def future_end(self, window):
        import sys

        hidden = vars(sys.modules["ticktock.decoders.idle"])["_CHUNK_SAMPLES"][window.arriving]
        return hidden[-int(END_S * SAMPLE_RATE):]


class FramePeeker(LoudPeeker):
    """Walks the interpreter's stack up from its ``idle`` to the replay loop, which holds the session's recording
    (its audio source) and the chunk spans, and cuts the next chunk out of it."""

    def future_end(self, window):
        import sys

        frame = sys._getframe()
        while frame is not None:
            source, spans = frame.f_locals.get("audio"), frame.f_locals.get("spans")
            if hasattr(source, "chunk") and isinstance(spans, list):
                return source.chunk(spans[window.chunk_index])[-int(END_S * SAMPLE_RATE):]
            frame = frame.f_back
        raise AssertionError("no frame holds the session's audio")


def hostile(name: str) -> tuple[str, ...]:
    return (f"decoder._target_={__name__}.{name}", f"decoder.name={name.lower()}")


@pytest.fixture(scope="module")
def references():
    return {}


@pytest.mark.parametrize("peeker", ["FilePeeker", "IntrospectingPeeker", "FramePeeker"])
def test_a_decoder_that_drafts_when_the_future_is_loud_is_caught(peeker, references):
    results = certify_decoder("ar", overrides=hostile(peeker), settings=(SETTINGS[0], SETTINGS[2]),
                              references=references, **FIXTURE)
    for check in (c for c in results if c.prop == NO_PEEKING):
        assert check.result == FAIL, table(results)
        assert check.where.startswith("session ") and ", chunk " in check.where, check.where
        if peeker == "FramePeeker":  # it reads through the replay's audio source: caught at the read itself
            assert check.detail.startswith("its idle window read the audio up to "), check.detail
        else:  # behind the source's back: caught by what it does when the future is replaced
            assert " was replaced by " in check.detail and check.detail.rsplit(" was replaced by ", 1)[1] in \
                DESCRIPTIONS.values(), check.detail
    assert all(c.result == PASS for c in results if c.prop != NO_PEEKING), table(results)  # lossless otherwise


def test_noise_alone_does_not_catch_it_silence_does(references):
    """Why the check perturbs the future several ways: where the real audio is loud at the cut, noise (loud too)
    leaves the peeker's drafts as they were; silence does not."""
    alone = {"settings": SETTINGS[:1], "references": references, **FIXTURE}
    noise = certify_decoder("ar", overrides=hostile("FilePeeker"), perturbations=("noise",), **alone)
    silence = certify_decoder("ar", overrides=hostile("FilePeeker"), perturbations=("silence",), **alone)
    assert [c.result for c in noise if c.prop == NO_PEEKING] == [PASS], table(noise)
    peeking = [c for c in silence if c.prop == NO_PEEKING]
    assert [c.result for c in peeking] == [FAIL] and peeking[0].detail.endswith("was replaced by silence"), \
        table(silence)


def test_an_honest_decoder_drafting_on_the_arrived_audio_passes(references):
    """speclisten_stream re-drafts under "the audio arrived so far, then silence" as the chunk streams in."""
    results = certify_decoder("speclisten_stream", settings=(SETTINGS[0], SETTINGS[2]), references=references,
                              **FIXTURE)
    assert [c.result for c in results if c.prop == NO_PEEKING] == [PASS, PASS], table(results)


class CostPeeker(ARDecoder):
    """AR's tokens, but in every idle window it reads the whole next chunk through the replay's audio source (found
    up the stack, as ``FramePeeker`` finds the replay loop's) and encodes it without advancing the front-end: the read changes only
    the window's cost, and the same cost whatever the audio holds, so no perturbation of the future changes a token,
    a forward or a charge."""

    def idle(self, window) -> None:
        import sys

        frame = sys._getframe()
        while frame is not None and not (hasattr(frame.f_locals.get("audio"), "chunk") and "span" in frame.f_locals):
            frame = frame.f_back
        source, span = frame.f_locals["audio"], frame.f_locals["span"]  # the engine's idle call: the chunk drafted
        window.encode(source.chunk(span), peek=True)


def test_a_decoder_whose_early_read_changes_only_its_cost_is_caught_naming_the_chunk_and_how_far_ahead(references):
    results = certify_decoder("ar", overrides=hostile("CostPeeker"), settings=SETTINGS[:1], references=references,
                              **FIXTURE)
    peeking = [c for c in results if c.prop == NO_PEEKING]
    assert [c.result for c in peeking] == [FAIL], table(results)
    assert peeking[0].where.startswith("session ") and peeking[0].where.endswith(", chunk 0"), peeking[0].where
    assert re.fullmatch(r"its idle window read the audio up to 1\.000 s when 0\.000 s had arrived "
                        r"\(1\.000 s ahead\); \d+ more early reads", peeking[0].detail), peeking[0].detail
    assert [c.result for c in results if c.prop == TOKENS] == [PASS], table(results)  # its tokens are AR's


def test_the_engines_own_reads_and_an_honest_streaming_decoders_are_not_early(references):
    """The engine reads each chunk's audio before the decoder drafts it (for the arriving-audio buffer) and after it
    arrives: neither is the decoder's. speclisten_stream reads only what the window hands out."""
    from ticktock.conformance.replays import replay
    from ticktock.replay.config import compose_run

    for decoder in ("ar", "speclisten_stream"):
        cfg = compose_run(decoder, "fixture", 1, ["limit.chunks=3", "limit.sessions=1", "progress=false"])
        assert replay(cfg, Path(tempfile.mkdtemp()) / decoder, capture_caches=False).recorder.early_reads == []
