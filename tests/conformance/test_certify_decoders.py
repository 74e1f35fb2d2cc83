"""``ticktock certify decoder=X``: every shipped decoder passes; a decoder that commits an unverified draft, one
that reads audio before it arrives and one that runs a forward outside the logged path are each caught, with the
first counter-example named.

The three faulty decoders below are real decoders run by the real replay machinery, selected with
``decoder._target_=test_certify_decoders.<Class>`` (this module, as pytest imports it).
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from ticktock.conformance.checks import FAIL, PASS, SKIP, all_passed, table
from ticktock.conformance.decoder import SETTINGS, certify_decoder
from ticktock.conformance.decoder_checks import CACHE, LOGGED, NO_PEEKING, PROPERTIES, TOKENS
from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.trees import DraftTree
from ticktock.plugins import shipped

# Small replays for the suite: two spoken sessions of four chunks on the fixture model (certify's own default is
# ten chunks; the embedded model replays one session with a tool call, below).
FIXTURE = {"models": ("fixture",), "sessions": 2, "chunks": 4}
# oracle_probe decodes every chunk to its end under silence in its idle window (an instrument for clock=free):
# on the modeled clock that work runs past the window and is carried into the chunk, which certify allows, so it
# passes like the others.
DECODERS = shipped("decoder")


@pytest.fixture(scope="module")
def references():
    """AR replays shared by every certify call of this module (same model, sessions and options)."""
    return {}


# ------------------------------------------------------------------------------------------ faulty decoders


class UnverifiedDraft(ARDecoder):
    """Lossy on purpose: in a speak chunk it offers ``<|speak|>`` as a draft after the decision and, when the
    target rejects it (always: the grammar forbids it inside speech), commits it anyway, unverified."""

    def decode_chunk(self, step) -> None:
        prefix = step.inputs.segments()
        while not step.done:
            speaking = step.output == [step.protocol.speak]
            draft = DraftTree()
            if speaking:
                draft.add_chain([step.protocol.speak])
            result = step.verify(prefix, draft)
            if speaking and not result.accepted_nodes and not step.done:
                step.commit([step.protocol.speak])
            prefix = [[step.output[-1]]]


class PeekingDecoder(ARDecoder):
    """Lossless, but in each idle window it drafts the next chunk under all of that chunk's audio, read from the
    session's audio file before it has arrived."""

    def start_session(self, session) -> None:
        from ticktock.sessions.audio import load_audio

        self.audio, self.spans = load_audio(session.audio_path), session.chunk_spans()

    def idle(self, window) -> None:
        from ticktock.sessions.audio import chunk_samples

        span = self.spans[window.chunk_index]
        future = chunk_samples(self.audio, span.start_s, span.end_s)
        before = window.adapter.snapshot()
        draft = window.decoding(selection="greedy")
        draft.verify(window.next_inputs.segments(window.encode(future, peek=True)), None)
        window.adapter.restore(before)


class HiddenForward(ARDecoder):
    """Lossless, but in each idle window it runs a silence draft straight on the adapter (not through the window):
    a forward the log never sees and the clock never charges."""

    def idle(self, window) -> None:
        before = window.adapter.snapshot()
        window.adapter.forward(window.next_inputs.segments(window.silence()))
        window.adapter.restore(before)


def faulty(name: str) -> tuple[str, ...]:
    return (f"decoder._target_={__name__}.{name}", f"decoder.name={name.lower()}")


def by_property(results, prop: str):
    return [c for c in results if c.prop == prop]


# ------------------------------------------------------------------------------------------ shipped decoders


@pytest.mark.parametrize("decoder", DECODERS)
def test_every_shipped_decoder_passes_on_the_fixture(decoder, references):
    results = certify_decoder(decoder, references=references, **FIXTURE)
    assert all_passed(results), table(results)
    assert len(results) == len(PROPERTIES) * len(SETTINGS)
    skipped = {c.setting for c in results if c.result == SKIP}
    assert all("2 sessions" in setting for setting in skipped), table(results)  # only a device it cannot share


@pytest.mark.parametrize("decoder", [d for d in DECODERS if d != "ar"])
def test_every_shipped_decoder_passes_on_the_embedded_model(decoder, references):
    """The embedded model's drafts are accepted (the fixture's rarely are): its tool-call session to the end of
    the call and the first spoken chunk after it, greedy. Sized for the suite: no cut-audio replay here (every
    decoder's is on the fixture model, above)."""
    results = certify_decoder(decoder, models=("embedded",), sessions=1, chunks=9, settings=SETTINGS[:1], cuts=0,
                              references=references)
    assert [c.result for c in results] == [SKIP if c.prop == NO_PEEKING else PASS for c in results], table(results)


# ------------------------------------------------------------------------------------------ faulty decoders


def test_an_unverified_draft_token_is_caught_at_the_first_bad_chunk(tmp_path):
    results = certify_decoder("ar", overrides=faulty("UnverifiedDraft"), out=tmp_path, settings=SETTINGS[:1],
                              **FIXTURE)  # its own AR replay, written into tmp_path
    tokens = by_property(results, TOKENS)[0]
    assert tokens.result == FAIL
    assert tokens.where == first_speak_chunk_of_three_tokens(tmp_path / "fixture" / "ar-greedy")
    assert by_property(results, CACHE)[0].result == FAIL  # its cache holds the target's token, not the one committed


def first_speak_chunk_of_three_tokens(ar_run) -> str:
    """Where ``UnverifiedDraft`` first differs from AR: token 2 of the first chunk AR speaks at least three tokens in
    (AR's token 2 there is never ``<|speak|>``)."""
    from ticktock.adapters.fixture import build_char_tokenizer

    speak = build_char_tokenizer().convert_tokens_to_ids("<|speak|>")
    sessions = [row["session_id"] for row in pq.read_table(ar_run / "sessions.parquet").to_pylist()]
    chunks = pq.read_table(ar_run / "chunks.parquet").to_pylist()
    for session_id in sessions:
        for row in sorted((r for r in chunks if r["session_id"] == session_id), key=lambda r: r["chunk_index"]):
            tokens = row["output_token_ids"]
            if tokens[0] == speak and len(tokens) >= 3:
                return f"session {session_id}, chunk {row['chunk_index']}, token 2"
    raise AssertionError("no chunk of three tokens or more")


def test_a_decoder_reading_audio_before_it_arrives_is_caught(references):
    """Caught replayed alone and on a shared device (where the cut is one time of the device for every session)."""
    results = certify_decoder("ar", overrides=faulty("PeekingDecoder"), settings=(SETTINGS[0], SETTINGS[2]),
                              references=references, **FIXTURE)
    for peeking in by_property(results, NO_PEEKING):
        assert peeking.result == FAIL, table(results)
        assert "(draft)" in peeking.where and "its inputs changed" in peeking.detail
    assert all(c.result == PASS for c in results if c.prop != NO_PEEKING), table(results)  # lossless otherwise


def test_a_forward_outside_the_logged_path_is_caught(references):
    results = certify_decoder("ar", overrides=faulty("HiddenForward"), settings=SETTINGS[:1], references=references,
                              **FIXTURE)
    logged = by_property(results, LOGGED)[0]
    assert logged.result == FAIL, table(results)
    assert logged.where.endswith("chunk 0, idle window")  # the window before the first chunk
    assert logged.detail == "the model ran 1 forward(s), forwards.parquet logs 0"
    assert by_property(results, TOKENS)[0].result == PASS


# ------------------------------------------------------------------------------------------ the command


def test_the_command_prints_the_table_and_exits_1_on_a_failure(capsys):
    from ticktock.certify import main

    code = main(["decoder=ar", *faulty("HiddenForward"), "--quick", "--settings", "greedy", "--chunks", "3"])
    out = capsys.readouterr().out
    assert code == 1
    assert "forwards charged and logged      fixture, greedy  FAIL" in out
    assert out.strip().splitlines()[-1].startswith(f"certify decoder=ar {' '.join(faulty('HiddenForward'))}: FAILED: "
                                                   "6 checks, 5 passed, 1 failed")  # the class certified is named


@pytest.mark.parametrize("argv, message", [
    (["decoder=nope", "--quick"], "decoder=nope"),
    (["decoder=ar", "--settings", "hot"], "--settings: unknown setting 'hot'"),
    (["decoder=ar", "limit.chunks=0", "--quick", "--settings", "greedy"], "limit.chunks: must be"),
    (["decoder=ar", "clock=wall", "--quick"], "clock=wall: certify replays on the modeled clock"),
    (["--quick"], "nothing to certify"),
    (["decoder=ar", "--quick", "--sessions", "1"], "--sessions 1: the settings greedy-2-sessions"),
])
def test_a_bad_configuration_exits_2_with_one_line(argv, message, capsys):
    from ticktock.certify import main

    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_certify_is_a_subcommand():
    from ticktock.cli import COMMANDS

    assert COMMANDS["certify"][0] == "ticktock.certify"
