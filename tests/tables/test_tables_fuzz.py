"""Fuzz: random and adversarial run.json files and reply texts through the loaders and the tables, on small real run
folders (the fixture model, modeled clock). Every example ends in correct output or in one line with the documented
exit code (``TablesError``: 2), never a traceback (any other exception fails the test) or a hang (``deadline``).

Bounded for CI (about 30 s in all); deterministic under CI=true (the same examples every run), random elsewhere.
"""

import copy
import json
import os
import shutil
from datetime import timedelta

import html5lib
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ticktock.results.runjson import FIELDS
from ticktock.runs import describe, format_rows, split_lines
from ticktock.tables import TablesError, build_tables, load_results
from ticktock.tables.build import headline_text
from ticktock.tables.report import html_report
from ticktock.tables.viewer import DATA_ID, embedded_json, viewer_data

FUZZ = settings(max_examples=20, deadline=timedelta(seconds=30), database=None, derandomize=os.environ.get("CI") == "true",
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory, small_manifest):
    """AR and PLD replays of 2 sessions x 2 chunks on the fixture model: real run folders."""
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    folder = tmp_path_factory.mktemp("fuzz_runs")
    for decoder in ("ar", "pld"):
        cfg = compose_run(decoder, "fixture", None, [f"task.manifest={small_manifest}", "task.tool_executor=null",
                                                     "limit.sessions=2", "limit.chunks=2"])
        run(cfg, folder / decoder)
    return folder


def key_paths(data, prefix="") -> list[str]:
    """Every dotted key path of a JSON object."""
    paths = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        paths.append(path)
        if isinstance(value, dict):
            paths += key_paths(value, f"{path}.")
    return paths


ODD = st.sampled_from([None, True, 0, -1, 2**64, 10**400, 1e308, float("nan"), float("inf"), -0.0, "", "x" * 500,
                       "\x00\n\u2028", "failed", [], {}, [1, [2, [3]]], {"name": 7}])
LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12))
JSON = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                           max_size=3), max_leaves=6)


def set_path(data: dict, path: str, value, delete: bool = False) -> None:
    """Set (or delete) a dotted key, making the objects above it where they are missing or not objects."""
    *parents, last = path.split(".")
    node = data
    for key in parents:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    if delete:
        node.pop(last, None)
    else:
        node[last] = value


@st.composite
def hostile_run_json(draw, meta: dict) -> bytes:
    """run.json bytes: the real one with one key replaced by an odd or random value, or deleted; or random JSON; or
    the real text cut short, or with a byte that is not UTF-8."""
    how = draw(st.sampled_from(["replace", "replace", "replace", "delete", "whole", "cut", "bad byte"]))
    text = json.dumps(meta)
    if how == "whole":
        return json.dumps(draw(JSON)).encode()
    if how == "cut":
        return text.encode()[: draw(st.integers(0, len(text) - 1))]
    if how == "bad byte":
        at = draw(st.integers(0, len(text)))
        return text.encode()[:at] + b"\xff" + text.encode()[at:]
    paths = sorted(set(key_paths(meta)) | {f.path for f in FIELDS})
    data = copy.deepcopy(meta)
    set_path(data, draw(st.sampled_from(paths)), draw(ODD | JSON), delete=how == "delete")
    return json.dumps(data).encode()


def check_one_line(err: TablesError) -> None:
    assert err.exit_code == 2 and "\n" not in str(err) and str(err).strip(), repr(err)


@FUZZ
@given(data=st.data())
def test_hostile_run_json_is_one_line_or_correct_tables(real_runs, tmp_path_factory, data):
    meta = json.loads((real_runs / "ar" / "run.json").read_text())
    folder = tmp_path_factory.mktemp("hostile") / "ar"
    shutil.copytree(real_runs / "ar", folder)
    (folder / "run.json").write_bytes(data.draw(hostile_run_json(meta)))

    row = describe(folder)  # python -m ticktock.runs: a row, "unreadable: ..." when run.json is not a run's
    assert format_rows([row]) and isinstance(split_lines([row]), list)
    assert "\n" not in row["status"]
    try:
        results = load_results([str(folder)])
    except TablesError as err:
        check_one_line(err)
        assert row["status"].startswith("unreadable") or "schema_version" in str(err) or "run" in str(err)
    else:
        try:
            built = build_tables(results, "ar")
        except TablesError as err:  # e.g. the decoder renamed: no 'ar' baseline
            check_one_line(err)
        else:
            assert headline_text(built.tables[:3]).count("### ") == 3
            assert html_report(built.tables, {}, results, viewer=viewer_data(results)).endswith("</html>\n")

    kept = load_results([str(folder), str(real_runs / "pld")], skip_bad_runs=True)  # --skip-bad-runs: left out, said
    assert len(kept.runs) + len(kept.skipped) == 2 and all("\n" not in s for s in kept.skipped)
    try:  # --allow-interrupted --allow-missing-shards: a stopped run's completed sessions, or one line
        load_results([str(folder)], allow_interrupted=True, allow_missing_shards=True)
    except TablesError as err:
        check_one_line(err)


FRAGMENTS = ["<", ">", "!", "-", "/", "&", ";", "'", '"', "\\", " ", "<!--", "<script>", "</script", "</SCRIPT >", "-->",
             "<!--<script>", "<!--<SCRIPT/", "<script ",
             "<![CDATA[", "]]>", "&amp;", "&#x3c;", "\u2028", "\u2029", "\x00", "é", "<|speak|>", "x"]
REPLY = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join) | st.text(max_size=40)


@pytest.fixture(scope="module")
def viewer_rows(real_runs):
    return viewer_data(load_results([str(real_runs / "ar")]))


@settings(FUZZ, max_examples=60)
@given(texts=st.lists(REPLY, min_size=1, max_size=4))
@example(texts=["hi <!--<script> there"])  # the reply that swallowed the viewer
def test_any_reply_text_round_trips_through_the_embedded_json_as_a_browser_parses_it(viewer_rows, texts):
    """The viewer's data element as the report writes it (``embedded_json``), then another script: a spec HTML5
    tokenizer (html5lib) must end the data element where it was written and read the texts back exactly. (The
    whole report, viewer code included, is parsed the same way in test_viewer.py.)"""
    data = copy.deepcopy(viewer_rows)
    rows = data["runs"][0]["sessions"][0]["chunks"]
    column = data["chunk_columns"].index("text")
    for row, text in zip(rows, texts):
        row[column] = text
    page = (f'<!DOCTYPE html><html><body><script type="application/json" id="{DATA_ID}">{embedded_json(data)}</script>'
            "<script>after()</script><p>end</p></body></html>")
    scripts = [(node.get("id"), node.text or "")
               for node in html5lib.parse(page, namespaceHTMLElements=False).iter("script")]
    assert [text for _, text in scripts[1:]] == ["after()"] and scripts[0][0] == DATA_ID
    assert [row[column] for row in json.loads(scripts[0][1])["runs"][0]["sessions"][0]["chunks"][:len(texts)]] == \
        texts[:len(rows)]
