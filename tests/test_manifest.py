import json

import pytest

from ticktock.sessions.manifest import ManifestError, load_manifest, write_manifest


def good_line(**overrides):
    line = {
        "schema_version": 1,
        "session_id": "a",
        "task": "fdb_v3",
        "audio": "audio/a.flac",
        "duration_s": 5.5,
        "turns": [
            {"speaker": "user", "role": "request", "text": "hi there", "start_s": 1.0, "end_s": 2.2,
             "words": [{"text": "hi", "start_s": 1.0, "end_s": 1.4}, {"text": "there", "start_s": 1.5, "end_s": 2.2}]}
        ],
        "expected": {"reference_answer": "hello", "tool_calls": [{"function": "f", "args": {}}]},
    }
    line.update(overrides)
    return line


def write(tmp_path, *lines):
    path = tmp_path / "m.jsonl"
    path.write_text("".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines))
    return path


def test_loads_and_cuts_chunks_with_user_speaking(tmp_path):
    (session,) = load_manifest(write(tmp_path, good_line()))
    spans = session.chunk_spans()
    assert [(s.start_s, s.end_s) for s in spans][-1] == (5.0, 6.0)  # final partial chunk kept
    assert [s.user_speaking for s in spans] == [False, True, True, False, False, False]
    assert session.audio_path == tmp_path / "audio/a.flac"


def test_first_chunk_duration(tmp_path):
    (session,) = load_manifest(write(tmp_path, good_line(first_chunk_s=1.035)))
    assert [round(s.end_s, 3) for s in session.chunk_spans()][:3] == [1.035, 2.035, 3.035]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"session_id": None}, r"m.jsonl:2: field 'session_id': missing"),
        ({"duration_s": "long"}, r"m.jsonl:2: field 'duration_s': expected float"),
        ({"duration_s": -1}, r"field 'duration_s': must be > 0"),
        ({"schema_version": 7}, r"field 'schema_version': unsupported version 7"),
        ({"first_chunk_s": 0.5}, r"field 'first_chunk_s'"),
        ({"turns": [{"speaker": "robot", "start_s": 0, "end_s": 1}]}, r"field 'turns\[0\].speaker'"),
        ({"turns": [{"speaker": "user", "start_s": 2, "end_s": 9}]}, r"turns\[0\].start_s/end_s"),
        ({"turns": [{"speaker": "user", "start_s": 1, "end_s": 3, "words": [
            {"text": "b", "start_s": 2.0, "end_s": 2.5}, {"text": "a", "start_s": 1.0, "end_s": 1.5}]}]},
         r"turns\[0\].words\[1\].*not monotonic"),
        ({"expected": {"tool_calls": [{"name": "f"}]}}, r"expected.tool_calls\[0\]"),
        ({"tools": [{"description": "no name"}]}, r"field 'tools\[0\]'"),
        ({"expected": {"script": [{"turn": 0, "action": "speak", "text": "Hi.", "variants": "Hello."}]}},
         r"m.jsonl:2: field 'expected.script\[0\].variants': expected a list of non-empty strings"),
        ({"expected": {"script": [{"turn": 0, "action": "speak", "text": "Hi.", "variants": ["Hello.", " "]}]}},
         r"field 'expected.script\[0\].variants'"),
    ],
)
def test_bad_fields_are_named_with_file_and_line(tmp_path, change, message):
    line = good_line(session_id="first")
    bad = good_line(**change)
    if change.get("session_id", "") is None:
        bad.pop("session_id")
    with pytest.raises(ManifestError, match=message):
        load_manifest(write(tmp_path, line, bad))


def test_reply_actions_may_carry_variants(tmp_path):
    script = [{"turn": 0, "action": "speak", "text": "Hi.", "variants": ["Hello.", "Hey there."]},
              {"turn": 0, "action": "backchannel", "text": "mm-hmm", "at_s": 1.2, "variants": []}]
    (session,) = load_manifest(write(tmp_path, good_line(expected={"script": script})))
    assert session.expected["script"] == script


def test_invalid_json_and_duplicates(tmp_path):
    with pytest.raises(ManifestError, match=r"m.jsonl:2: not valid JSON"):
        load_manifest(write(tmp_path, good_line(), "{oops"))
    with pytest.raises(ManifestError, match=r"m.jsonl:2: field 'session_id': duplicate id 'a' \(first on line 1\)"):
        load_manifest(write(tmp_path, good_line(), good_line()))
    with pytest.raises(ManifestError, match="manifest not found"):
        load_manifest(tmp_path / "missing.jsonl")


def test_task_filter_and_round_trip(tmp_path):
    path = write(tmp_path, good_line(), good_line(session_id="b", task="trivia_qa"))
    assert [s.session_id for s in load_manifest(path, tasks=["trivia_qa"])] == ["b"]
    sessions = load_manifest(path)
    copy = write_manifest(tmp_path / "copy" / "m.jsonl", sessions)
    again = load_manifest(copy)
    assert [s.audio_path.resolve() for s in again] == [s.audio_path.resolve() for s in sessions]
    assert [s.turns for s in again] == [s.turns for s in sessions]


def with_durations(tmp_path, durations: dict):
    """A manifest of two sessions over 6.4 s audio files whose duration_s values are replaced by ``durations``."""
    from helpers import write_sessions

    manifest = write_sessions(tmp_path / "m", count=2)
    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    for line in lines:
        line["duration_s"] = durations.get(line["session_id"], line["duration_s"])
    return write(manifest.parent, *lines)


@pytest.mark.parametrize("declared, side, difference", [(30.0, "longer", "23.6"), (3.0, "shorter", "3.4")])
def test_a_duration_that_disagrees_with_its_audio_names_file_line_session_and_both_durations(tmp_path, declared, side,
                                                                                               difference):
    from ticktock.sessions.manifest import check_audio_durations

    path = with_durations(tmp_path, {"s1": declared})
    sessions = load_manifest(path)
    with pytest.raises(ManifestError) as failure:
        check_audio_durations(sessions)
    assert str(failure.value) == (
        f"{path}:2: session 's1': duration_s is {declared:g} s but its audio {sessions[1].audio_path} lasts 6.400 s "
        f"({difference} s {side} than the audio; tolerance 0.1 s); fix duration_s or run with audio_duration=trust_audio")
    trusted = check_audio_durations(sessions, "trust_audio")
    assert [round(s.duration_s, 3) for s in trusted] == [6.4, 6.4] and len(trusted[1].chunk_spans()) == 7


def test_durations_within_the_tolerance_pass_unchanged_and_unreadable_audio_can_be_left_to_the_run(tmp_path):
    from ticktock.sessions.audio import AudioError
    from ticktock.sessions.manifest import check_audio_durations

    sessions = load_manifest(with_durations(tmp_path, {"s0": 6.45, "s1": 6.32}))
    assert check_audio_durations(sessions) == sessions
    sessions[1].audio_path.write_bytes(b"not audio")
    with pytest.raises(AudioError, match=r"s1.flac: cannot read audio header"):
        check_audio_durations(sessions)
    assert check_audio_durations(sessions, skip_unreadable=True) == sessions


@pytest.mark.parametrize("change, message", [
    ({"chunk_s": 1e-7}, r"m.jsonl:2: field 'chunk_s': must be from 0.02 to 60 s, got 1e-07"),  # was a MemoryError
    ({"chunk_s": 1e-5}, r"m.jsonl:2: field 'chunk_s': must be from 0.02 to 60 s, got 1e-05"),  # was accepted
    ({"chunk_s": 600.0}, r"m.jsonl:2: field 'chunk_s': must be from 0.02 to 60 s, got 600.0"),
    ({"first_chunk_s": 1e9}, r"m.jsonl:2: field 'first_chunk_s': must be from chunk_s \(1.0\) to 60 s, got 1000000000.0"),
    ({"duration_s": 1e9}, r"m.jsonl:2: field 'duration_s': must be > 0 and at most 86400 s \(24 h\), got 1000000000.0"),
    ({"duration_s": 10 ** 400}, r"m.jsonl:2: field 'duration_s': not a finite number: an integer beyond 1e300"),
    ({"duration_s": 80_000.0, "chunk_s": 0.02},
     r"m.jsonl:2: field 'duration_s': 80000.0 s in chunks of 0.02 s is 4000000 chunks; at most 200000 per session"),
    ({"audio": ""}, r"m.jsonl:2: field 'audio': must be a file path, got ''"),
    ({"audio": "a\u0000.flac"}, r"m.jsonl:2: field 'audio': must be a file path"),
    ({"turns": [{"speaker": "user", "start_s": 0, "end_s": 1, "words": [{"text": "a", "start_s": 10 ** 400, "end_s": 1}]}]},
     r"m.jsonl:2: field 'turns\[0\].words\[0\]': needs text, start_s, end_s"),
])
def test_absurd_values_are_refused_naming_file_line_and_field(tmp_path, change, message):
    with pytest.raises(ManifestError, match=message):
        load_manifest(write(tmp_path, good_line(session_id="first"), good_line(**change)))


def test_the_range_edges_load(tmp_path):
    short, long, most = load_manifest(write(
        tmp_path, good_line(chunk_s=0.02, duration_s=0.1, turns=[]), good_line(session_id="b", chunk_s=60.0, first_chunk_s=60.0,
                                                                     duration_s=86_400.0),
        good_line(session_id="c", chunk_s=0.03125, duration_s=6250.0)))  # 200000 chunks of 1/32 s
    assert len(short.chunk_spans()) == 5 and len(long.chunk_spans()) == 1440
    with pytest.raises(ManifestError, match="is 200001 chunks; at most 200000 per session"):
        load_manifest(write(tmp_path, good_line(chunk_s=0.03125, duration_s=6250.01)))


@pytest.mark.parametrize("raw, message", [
    (b'{"session_id": "caf\xe9"}', r"m.jsonl:2: not UTF-8 text \(byte 0xe9 at column 20\)"),
    (b"[" * 200_000 + b"]" * 200_000, r"m.jsonl:2: not a session \(JSON nested too deeply\)"),
    (b'{"duration_s": ' + b"9" * 5000 + b"}", r"m.jsonl:2: not valid JSON \(Exceeds the limit"),
    (b"[1, 2]", r"m.jsonl:2: expected a JSON object, got list"),
])
def test_unreadable_lines_are_one_error_naming_file_and_line(tmp_path, raw, message):
    path = tmp_path / "m.jsonl"
    path.write_bytes(json.dumps(good_line()).encode() + b"\n" + raw + b"\n")
    with pytest.raises(ManifestError, match=message):
        load_manifest(path)


def test_user_speaking_chunks_of_a_long_session_with_many_words_are_found_in_one_pass(tmp_path):
    words = [{"text": "w", "start_s": 0.2 + 4.0 * i, "end_s": 1.5 + 4.0 * i} for i in range(10_000)]
    turn = {"speaker": "user", "role": "statement", "text": "", "start_s": 0.2, "end_s": 39_997.5, "words": words}
    (session,) = load_manifest(write(tmp_path, good_line(duration_s=40_000.0, turns=[turn])))
    spans = session.chunk_spans()  # 40k chunks x 10k words: the pairwise check took minutes
    assert len(spans) == 40_000 and [s.user_speaking for s in spans[:5]] == [True, True, False, False, True]
    assert sum(s.user_speaking for s in spans) == 20_000
