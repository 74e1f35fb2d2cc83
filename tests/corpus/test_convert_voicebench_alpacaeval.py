"""VoiceBench AlpacaEval converter on tiny parquet files in the published layout (an Audio column + prompts), read
through ``datasets``; a Hub id offline and not cached is one line naming the command that fetches it."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import soundfile

from convert_helpers import assert_nothing_left, check_manifest, offline_hub
from helpers import speech_like
from ticktock.corpus.convert import ConvertError, convert
from ticktock.corpus.convert.__main__ import cli
from ticktock.corpus.convert.hub import SourceNotCached

PROMPTS = ["Give me three tips for staying healthy.", "Write a haiku about autumn.", "Explain photosynthesis."]


def wav_bytes(rate: int, seed: int) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, speech_like(2.5, [(0.4, 2.0)], seed=seed, rate=rate), rate, format="WAV")
    return buffer.getvalue()


def write_encoded(path, prompts=PROMPTS, rate=24_000):
    """A config's parquet file as the Hub holds it: an ``Audio`` column (stored as {bytes, path}) and the prompts."""
    from datasets import Audio, Dataset, Features, Value

    audio = [{"bytes": wav_bytes(rate, i), "path": f"alpacaeval_{i}.wav"} for i in range(len(prompts))]
    path.parent.mkdir(parents=True, exist_ok=True)
    stored = Features({"audio": {"bytes": Value("binary"), "path": Value("string")}, "prompt": Value("string")})
    rows = Dataset.from_dict({"audio": audio, "prompt": list(prompts)}, features=stored)
    rows.cast_column("audio", Audio()).to_parquet(str(path))  # the cast needs no torchcodec; encoding would
    return path


@pytest.fixture
def source(tmp_path):
    root = tmp_path / "voicebench"
    write_encoded(root / "alpacaeval" / "test-00000-of-00001.parquet")
    write_encoded(root / "alpacaeval_full" / "test-00000-of-00001.parquet", prompts=["Only in the full set."])
    return root


def test_converts_the_alpacaeval_config(source, tmp_path):
    out = tmp_path / "out"
    result = convert("voicebench_alpacaeval", source, out, warn=lambda line: None)
    sessions = check_manifest(out / "manifest.jsonl")
    assert [s.session_id for s in sessions] == ["alpacaeval-0000", "alpacaeval-0001", "alpacaeval-0002"]
    assert not result.warnings
    session = sessions[0]
    (turn,) = session.turns
    assert session.task == "alpaca_eval" and turn.text == PROMPTS[0] and turn.expects_response
    assert abs(turn.start_s - 1.4) < 0.06 and abs(turn.end_s - 3.0) < 0.06
    assert abs(session.duration_s - (turn.end_s + 8.0)) < 1e-3  # no reference reply: fixed 8 s of room
    assert session.expected["reference_answer"] is None and session.expected["script"] == []
    assert session.expected["behaviour"] == {"type": "instruction_following", "respond_after_s": [turn.end_s]}
    assert session.provenance["source_path"] == "alpacaeval/test#row=0"
    assert b"Audio" in pq.read_schema(source / "alpacaeval/test-00000-of-00001.parquet").metadata[b"huggingface"]
    assert session.provenance["audio_name"] == "alpacaeval_0.wav"
    assert session.provenance["layout"]["source_sample_rate"] == 24_000


def test_single_file_limit_subset_and_tail(source, tmp_path):
    result = convert("voicebench_alpacaeval", source / "alpacaeval" / "test-00000-of-00001.parquet", tmp_path / "a",
                     limit=2, tail_unknown_s=5.0, lead_s=0.0, warn=lambda line: None)
    assert len(result.sessions) == 2
    turn = result.sessions[0].turns[0]
    assert abs(turn.start_s - 0.4) < 0.06 and abs(result.sessions[0].duration_s - (turn.end_s + 5.0)) < 1e-3
    full = convert("voicebench_alpacaeval", source, tmp_path / "b", subsets=["alpacaeval_full"], warn=lambda line: None)
    assert [s.turns[0].text for s in full.sessions] == ["Only in the full set."]


def test_decoded_arrays_are_accepted(tmp_path):
    audio = [{"array": speech_like(2.0, [(0.5, 1.5)], seed=0, rate=8_000).tolist(), "sampling_rate": 8_000}]
    path = tmp_path / "decoded.parquet"
    pq.write_table(pa.table({"audio": audio, "prompt": ["Hello there."]}), path)
    result = convert("voicebench_alpacaeval", path, tmp_path / "out", warn=lambda line: None)
    session = check_manifest(result.manifest)[0]
    assert session.provenance["layout"]["source_sample_rate"] == 8_000
    assert abs(session.turns[0].start_s - 1.5) < 0.06


def test_bad_input_is_named(source, tmp_path):
    out = tmp_path / "out"
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"audio": [{"bytes": b"garbage" * 40, "path": "x.wav"}], "prompt": ["Hi."]}), bad)
    with pytest.raises(ConvertError, match=r"bad.parquet row 0: cannot read audio"):
        convert("voicebench_alpacaeval", bad, out)
    assert_nothing_left(out)
    pq.write_table(pa.table({"speech": [b"x"], "text": ["Hi."]}), bad)
    with pytest.raises(ConvertError, match=r"bad.parquet: missing column\(s\) audio, prompt"):
        convert("voicebench_alpacaeval", bad, out)
    bad.write_bytes(b"PAR1 broken")
    with pytest.raises(ConvertError, match=r"bad.parquet: cannot read parquet"):
        convert("voicebench_alpacaeval", bad, out)
    with pytest.raises(ConvertError, match=r"--column: voicebench_alpacaeval has no field role answer \(roles: audio, text\)"):
        convert("voicebench_alpacaeval", source, out, columns={"answer": "output"})
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConvertError, match=r"no parquet files"):
        convert("voicebench_alpacaeval", tmp_path / "empty", out)
    assert_nothing_left(out)


def test_a_plain_struct_audio_column_is_read_too(tmp_path):
    """A copy written without the Audio feature (a plain {bytes, path} struct) reads the same."""
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"audio": [{"bytes": wav_bytes(16_000, 0), "path": "a.wav"}], "prompt": ["Hi there."]}),
                   path)
    (session,) = convert("voicebench_alpacaeval", path, tmp_path / "out", warn=lambda line: None).sessions
    assert session.turns[0].text == "Hi there." and session.provenance["audio_name"] == "a.wav"


def test_a_hub_id_offline_and_not_cached_is_one_line(tmp_path, monkeypatch, capsys):
    offline_hub(monkeypatch, tmp_path / "caches")
    with pytest.raises(SourceNotCached, match=r"^hlt-lab/voicebench: voicebench_alpacaeval is not in the local "
                                              r"Hugging Face cache and offline mode is on; fetch it once online with: "
                                              r"ticktock bench fetch voicebench_alpacaeval$"):
        convert("voicebench_alpacaeval", "hlt-lab/voicebench", tmp_path / "out")
    from test_convert_fdb_v3 import command_exit

    assert command_exit(cli, ["voicebench_alpacaeval", "--src", "someone/voicebench-copy", "--out",
                              str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert err.endswith("fetch it once online with: ticktock bench fetch voicebench_alpacaeval "
                        "--src voicebench_alpacaeval=someone/voicebench-copy\n") and err.count("\n") == 1, err
    assert_nothing_left(tmp_path / "out")
