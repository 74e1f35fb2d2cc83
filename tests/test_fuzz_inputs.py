"""Random and adversarial inputs through the loaders a run starts from: manifests (JSON lines) and cost profiles (YAML).

Each input either loads, and then every value is in its documented range, or is refused with one ``TickTockError``
line of the right exit code (3: a manifest, 2: a profile); never another exception, never a hang (each load runs in
a thread given ``SECONDS`` to end). Hypothesis (derandomized on CI) mutates a valid line or profile (wrong types, missing fields, NaN,
infinities, huge and negative numbers, absurd times, unknown keys, deep nesting) and also feeds raw bytes (bad
UTF-8, cut-off and deeply nested JSON or YAML)."""

import json
import math
import os
import re
import threading

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ticktock.clocks.modeled import MAX_COST_MS, MAX_TOKENS, CostProfile, ProfileError
from ticktock.errors import EXIT_CONFIG, EXIT_INPUT_DATA
from ticktock.sessions.manifest import MAX_CHUNK_S, MAX_CHUNKS, MAX_DURATION_S, MIN_CHUNK_S, ManifestError, load_manifest

SECONDS = 10.0
FUZZ = settings(max_examples=150, deadline=None, database=None, derandomize=os.environ.get("CI") == "true",
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

GOOD_LINE = {
    "schema_version": 1, "session_id": "s0", "task": "fdb_v3", "audio": "audio/s0.flac", "duration_s": 5.5,
    "chunk_s": 1.0, "first_chunk_s": None, "system_prompt": None,
    "tools": [{"name": "track_order", "description": "Track an order", "parameters": {"type": "object"}}],
    "turns": [{"speaker": "user", "role": "request", "text": "where is it", "start_s": 1.0, "end_s": 2.2,
               "expects_response": True,
               "words": [{"text": "where", "start_s": 1.0, "end_s": 1.4}, {"text": "is it", "start_s": 1.5, "end_s": 2.2}]}],
    "expected": {"reference_answer": "it", "answer_aliases": [], "tool_calls": [{"function": "f", "args": {}}]},
    "provenance": {"source": "fuzz"},
}
GOOD_PROFILE = {"name": "p", "encode_ms": 5.0, "encode_fixed_ms": 1.0, "query_tokens": [1, 4],
                "context_tokens": [0, 100], "forward_ms": [[1.0, 2.0], [3.0, 4.0]], "batch_sizes": [1, 2],
                "batch_factor": [1.0, 1.1]}

numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
    st.sampled_from([0, -1, 1e-7, 1e-5, 0.02, 60.0, 86_400.0, 1e9, 1e300, 10 ** 400, -0.0]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=20))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)


def nested(depth: int, opener: str = "[", closer: str = "]") -> str:
    return opener * depth + closer * depth


def within(seconds: float, load, *args):
    """``load(*args)`` in a thread of its own: (its result, None) or (None, the exception it raised); a load still
    running after ``seconds`` fails the test (a hang)."""
    outcome = {}

    def target():
        try:
            outcome["value"] = load(*args)
        except BaseException as err:  # handed back to the test, whatever it is
            outcome["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{load.__name__} did not end within {seconds} s")
    return outcome.get("value"), outcome.get("error")


def assert_one_line_error(error, kind, code):
    assert isinstance(error, kind), f"{type(error).__name__}: {error}"  # not a traceback-bearing exception
    assert error.exit_code == code and str(error).strip() and "\n" not in str(error)


# -------------------------------------------------------------------------------------------------- manifests


def key_paths(value, prefix=()) -> list[tuple]:
    """The path (keys and list indices) of every key of every object inside ``value``."""
    if isinstance(value, dict):
        return [path for key, inner in value.items() for path in [(*prefix, key), *key_paths(inner, (*prefix, key))]]
    if isinstance(value, list):
        return [path for i, inner in enumerate(value) for path in key_paths(inner, (*prefix, i))]
    return []


def container(value, path: tuple):
    """The object holding the last key of ``path``, or None when an earlier mutation took the way there."""
    for step in path[:-1]:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    return value if isinstance(value, dict) else None


@st.composite
def mutated(draw, good: dict, deepest: int) -> dict:
    """``good`` with one to four of its keys (at any depth) replaced, removed, pushed to absurd numbers or nested
    up to ``deepest`` levels."""
    data = json.loads(json.dumps(good))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(key_paths(good)))
        target = container(data, path)
        if target is None:
            continue
        action = draw(st.sampled_from(["replace", "remove", "number", "deep"]))
        if action == "remove":
            target.pop(path[-1], None)
        elif action == "number":
            target[path[-1]] = draw(numbers)
        elif action == "deep":
            target[path[-1]] = json.loads(nested(draw(st.integers(1, deepest))))
        else:
            target[path[-1]] = draw(json_values)
    return data


def mutated_lines():
    """A valid manifest line with some fields replaced, removed or pushed to absurd values."""
    return mutated(GOOD_LINE, deepest=400).map(lambda line: json.dumps(line).encode())


raw_lines = st.one_of(
    st.binary(max_size=80),
    st.integers(1, 300_000).map(lambda depth: nested(depth).encode()),
    st.integers(1, 300_000).map(lambda depth: ('{"a": ' * depth).encode()),
    st.builds(lambda cut: json.dumps(GOOD_LINE).encode()[:cut], st.integers(0, 400)),
    st.builds(lambda byte, at: json.dumps(GOOD_LINE).encode()[:at] + bytes([byte]) + json.dumps(GOOD_LINE).encode()[at:],
              st.integers(0x80, 0xFF), st.integers(0, 400)),
)


def assert_session_in_range(session):
    assert MIN_CHUNK_S <= session.chunk_s <= MAX_CHUNK_S and 0 < session.duration_s <= MAX_DURATION_S
    assert session.first_chunk_s is None or session.chunk_s <= session.first_chunk_s <= MAX_CHUNK_S
    assert all(math.isfinite(v) for v in (session.duration_s, session.chunk_s))
    for turn in session.turns:
        assert 0 <= turn.start_s <= turn.end_s <= session.duration_s + 1e-6
        assert all(turn.start_s - 1e-6 <= w.start_s <= w.end_s <= turn.end_s + 1e-6 for w in turn.words)
    estimate = 1 + math.ceil(max(0.0, session.duration_s - (session.first_chunk_s or session.chunk_s)) / session.chunk_s)
    assert estimate <= MAX_CHUNKS
    if estimate <= 5_000:  # cutting a long session is covered in test_manifest.py
        spans = session.chunk_spans()
        assert spans[-1].end_s >= session.duration_s - 1e-6 and len(spans) <= estimate + 1


@FUZZ
@given(line=st.one_of(mutated_lines(), raw_lines))
@example(line=json.dumps({**GOOD_LINE, "chunk_s": 1e-7}).encode())  # was a MemoryError
@example(line=json.dumps({**GOOD_LINE, "first_chunk_s": 1e9}).encode())  # was "allocate 58.2 TiB"
@example(line=json.dumps({**GOOD_LINE, "duration_s": 10 ** 400}).encode())  # was an OverflowError
@example(line=nested(200_000).encode())  # was a RecursionError
@example(line=b'{"session_id": "caf\xe9"}')  # was a UnicodeDecodeError
def test_any_manifest_line_loads_in_range_or_is_one_line_exit_3(tmp_path_factory, line):
    path = tmp_path_factory.getbasetemp() / "fuzz-manifest.jsonl"
    path.write_bytes(line + b"\n")
    sessions, error = within(SECONDS, load_manifest, path)
    if error is not None:
        assert_one_line_error(error, ManifestError, EXIT_INPUT_DATA)
        named = re.match(rf"{re.escape(str(path))}:(\d+): ", str(error))  # names the file and the line (a line
        assert named and 1 <= int(named.group(1)) <= (line + b"\n").count(b"\n"), error  # with a newline is two)
        return
    for session in sessions:
        assert_session_in_range(session)


# ---------------------------------------------------------------------------------- session ids and dataset rows

BASE = "{BASE}"  # replaced, in the test, by a folder beside the audio cache root (a file the attack must not reach)
hostile_ids = st.one_of(
    st.text(max_size=200),
    st.text(alphabet="./\\-_ \x00aZ9\u00e9\u202e", max_size=40),
    st.sampled_from(["", ".", "..", "-", "-rf", ".hidden", "a/b", "a\\b", "../x", "/etc/x", "a\x00b", "x" * 129,
                     "x" * 128, "s0", "fdb_v3-eval-0-0008", "\u0430dmin", "a\nb", "con", "a:b"]),
    st.builds(lambda ups, tail: "../" * ups + BASE + "/" + tail, st.integers(0, 40),
              st.sampled_from(["victim", "victim/../victim", "./victim"])),
)


def files_outside(folder, root) -> dict:
    """Every file under ``folder`` but outside ``root``, with its bytes."""
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_relative_to(root)}


@FUZZ
@given(session_id=hostile_ids)
@example(session_id="../../../../../../../" + BASE + "/victim")  # issue 42: wrote BASE/victim.flac
def test_any_session_id_in_a_manifest_is_a_name_or_one_line_exit_3(tmp_path_factory, session_id):
    from ticktock.results.names import is_name

    base = tmp_path_factory.getbasetemp()
    path = base / "fuzz-ids.jsonl"
    path.write_text(json.dumps({**GOOD_LINE, "session_id": session_id.replace(BASE, str(base))}) + "\n")
    sessions, error = within(SECONDS, load_manifest, path)
    if error is not None:
        assert_one_line_error(error, ManifestError, EXIT_INPUT_DATA)
        assert str(error).startswith(f"{path}:1: field 'session_id': ")
        return
    assert [is_name(s.session_id) for s in sessions] == [True]


_AUDIO = {}


def silent_flac(seconds: float) -> bytes:
    """``seconds`` of 16 kHz silence as FLAC bytes (made once)."""
    import io

    import numpy as np
    import soundfile

    if seconds not in _AUDIO:
        out = io.BytesIO()
        soundfile.write(out, np.zeros(int(seconds * 16_000), dtype="float32"), 16_000, format="FLAC")
        _AUDIO[seconds] = out.getvalue()
    return _AUDIO[seconds]


@FUZZ
@given(session_id=hostile_ids, audio_file=st.one_of(hostile_ids, st.sampled_from(["audio/s0.flac", "/abs/x.flac",
                                                                                  "../up.flac", "", ".", "a/"])))
@example(session_id="../../../../../../../" + BASE + "/victim", audio_file="/abs/x.flac")  # issue 42
def test_any_dataset_row_gives_a_session_or_one_line_exit_3_and_writes_only_under_the_cache(tmp_path_factory,
                                                                                          session_id, audio_file):
    from ticktock.sessions.dataset_rows import session_row
    from ticktock.sessions.dataset_task import DatasetError, row_session

    base = tmp_path_factory.getbasetemp() / "rows"
    root = base / "cache" / "key"
    root.mkdir(parents=True, exist_ok=True)
    (base / "victim.flac").write_bytes(b"the user's own file")
    line = {**GOOD_LINE, "session_id": session_id.replace(BASE, str(base)),
            "audio": audio_file.replace(BASE, str(base))}
    try:
        row = session_row(line, silent_flac(GOOD_LINE["duration_s"]))
    except (TypeError, ValueError):
        return  # not a row the dataset form can hold (e.g. a surrogate the column cannot encode)
    before = files_outside(base, root)
    session, error = within(SECONDS, row_session, row, "ds: config fdb_v3, split test, row 0", root)
    assert files_outside(base, root) == before  # nothing written, nothing replaced outside the cache root
    if error is not None:
        assert_one_line_error(error, (DatasetError, ManifestError), EXIT_INPUT_DATA)
        assert str(error).startswith("ds: config fdb_v3, split test, row 0: field '")
        return
    assert session.audio_path.resolve().is_relative_to(root.resolve()) and session.audio_path.is_file()
    assert session.audio_path.read_bytes() == silent_flac(GOOD_LINE["duration_s"])


# --------------------------------------------------------------------------------------------- cost profiles


@st.composite
def mutated_profiles(draw) -> str:
    """A valid profile with fields replaced, removed, nested deeply, or added under unknown and near-miss names."""
    profile = draw(mutated(GOOD_PROFILE, deepest=60))
    if draw(st.booleans()):
        unknown = draw(st.sampled_from(["encode_fixd_ms", "forward_m", "batch", "x"]) | st.text(max_size=10))
        profile[unknown] = draw(scalars)
    return yaml.safe_dump(profile, allow_unicode=True)


raw_profiles = st.one_of(
    st.binary(max_size=120),
    st.integers(1, 100_000).map(lambda depth: b"forward_ms: " + nested(depth).encode()),
    st.integers(1, 2_000).map(lambda depth: b"".join(b"  " * i + b"a:\n" for i in range(depth))),
    st.builds(lambda cut: yaml.safe_dump(GOOD_PROFILE).encode()[:cut], st.integers(0, 200)),
)


def assert_profile_in_range(profile: CostProfile):
    costs = [profile.encode_ms, *(v for row in profile.forward_table for v in row)]
    assert all(math.isfinite(v) and 0 <= v <= MAX_COST_MS for v in costs)
    assert all(1 <= q <= MAX_TOKENS for q in profile.query_tokens)
    assert all(0 <= c <= MAX_TOKENS for c in profile.context_tokens)
    assert 0 <= profile.forward_ms(7, 50) <= 2 * MAX_COST_MS + 1  # a charge between grid points is a number
    assert isinstance(profile.name, str)


@FUZZ
@given(text=st.one_of(mutated_profiles().map(str.encode), raw_profiles))
@example(text=yaml.safe_dump({**GOOD_PROFILE, "encode_fixd_ms": 2.0}).encode())  # was silently ignored
@example(text=yaml.safe_dump({**GOOD_PROFILE, "encode_ms": float("nan")}).encode())
@example(text=b"forward_ms: " + nested(100_000).encode())  # was a RecursionError
def test_any_cost_profile_loads_in_range_or_is_one_line_exit_2(tmp_path_factory, text):
    path = tmp_path_factory.getbasetemp() / "fuzz-profile.yaml"
    path.write_bytes(text)
    profile, error = within(SECONDS, CostProfile.load, path)
    if error is not None:
        assert_one_line_error(error, ProfileError, EXIT_CONFIG)
        assert str(error).startswith(str(path))  # names the file (and the line where it can)
        return
    assert_profile_in_range(profile)
