"""Case studies (Figures 5-6): the timeline of a hand-computed run, the default picks, --case, and the placement of
every forward of real replays (fixture model) within its chunk's work and idle window."""

import pandas as pd
import pytest
from table_runs import chunk, write_run

from ticktock.tables import load_results
from ticktock.tables.__main__ import main
from ticktock.tables.cases import pick_cases, session_case, session_timeline
from ticktock.tables.load import TablesError

# Session "s", three 1 s chunks (hand-computed below):
# chunk 0: window 0-1000 ms, worked 50 ms (two drafts: 0-20, 20-50); work 1000-1300 (forwards 1020-1100, 1200-1300);
#          a reply onset at 1300 (300 ms)
# chunk 1: window opens at 1300 (700 ms), works 800 ms: 100 ms overrun carried; work 2100-3600 (one forward),
#          a tool call at 3600 (1600 ms): its deadline (3000) missed by 600 ms
# chunk 2: no window (lagging); work 3600-3700 (600 ms lag before + 100 ms); deadline 4000 (the last chunk: +1 s)
CHUNKS = [
    chunk("s", 0, start_s=0.0, arrival_s=1.0, kind="speak", is_onset=True, output_text="<|speak|>Hel<|chunk_eos|>",
          num_output_tokens=3, response_ms=300.0, post_audio_ms=300.0, window_budget_ms=1000.0, window_used_ms=50.0,
          window_forwards=2, user_speaking=True),
    chunk("s", 1, start_s=1.0, arrival_s=2.0, kind="tool", output_text='<tool_call>{"name": "f"}</tool_call>',
          carried_ms=100.0, response_ms=1600.0, post_audio_ms=1600.0, lag_ms=600.0, missed_deadline=True,
          window_budget_ms=700.0, window_used_ms=800.0, window_forwards=1, draft_source="silence"),
    chunk("s", 2, start_s=2.0, arrival_s=3.0, lag_before_ms=600.0, response_ms=700.0, post_audio_ms=100.0,
          window_budget_ms=0.0),
]
FORWARDS = [
    {"session_id": "s", "chunk_index": 0, "phase": "draft", "forward_index": 0, "end_ms": 20.0, "charged_ms": 20.0},
    {"session_id": "s", "chunk_index": 0, "phase": "draft", "forward_index": 1, "end_ms": 50.0, "charged_ms": 30.0},
    {"session_id": "s", "chunk_index": 0, "forward_index": 0, "end_ms": 100.0, "charged_ms": 80.0, "tokens_committed": 2},
    {"session_id": "s", "chunk_index": 0, "forward_index": 1, "end_ms": 300.0, "charged_ms": 100.0},
    {"session_id": "s", "chunk_index": 1, "phase": "draft", "forward_index": 0, "end_ms": 800.0, "charged_ms": 800.0},
    {"session_id": "s", "chunk_index": 1, "forward_index": 0, "end_ms": 1500.0, "charged_ms": 1500.0,
     "tokens_committed": 9, "tree": True},
    {"session_id": "s", "chunk_index": 2, "forward_index": 0, "end_ms": 100.0, "charged_ms": 100.0},
]


def hand_made(tmp_path):
    write_run(tmp_path / "ar", "ar", CHUNKS, forwards=FORWARDS)
    return load_results([str(tmp_path)])


def test_timeline_of_a_hand_computed_run(tmp_path):
    timeline = session_timeline(hand_made(tmp_path).runs[0], "s")
    chunks = timeline.chunks.set_index("chunk_index")
    assert chunks["arrival_ms"].tolist() == [1000.0, 2000.0, 3000.0]
    assert chunks["deadline_ms"].tolist() == [2000.0, 3000.0, 4000.0]
    assert chunks["work_start_ms"].tolist() == [1000.0, 2100.0, 3600.0]
    assert chunks["work_end_ms"].tolist() == [1300.0, 3600.0, 3700.0]
    assert chunks["window_open_ms"].tolist()[:2] == [0.0, 1300.0] and pd.isna(chunks.loc[2, "window_open_ms"])
    assert chunks["window_work_end_ms"].tolist()[:2] == [50.0, 2100.0]
    assert chunks["text"].tolist() == ["Hel", '{"name": "f"}', ""]
    spans = [(f.chunk_index, f.phase, f.start_ms, f.end_ms, f.tokens_committed)
             for f in timeline.forwards.itertuples(index=False)]
    assert spans == [(0, "draft", 0.0, 20.0, 1), (0, "draft", 20.0, 50.0, 1), (0, "post_audio", 1020.0, 1100.0, 2),
                     (0, "post_audio", 1200.0, 1300.0, 1), (1, "draft", 1300.0, 2100.0, 1),
                     (1, "post_audio", 2100.0, 3600.0, 9), (2, "post_audio", 3600.0, 3700.0, 1)]
    assert timeline.events.values.tolist() == [["onset", 0, 1300.0, 300.0], ["tool call", 1, 3600.0, 1600.0],
                                               ["deadline miss", 1, 3000.0, 600.0]]
    shown = timeline.between(1, 2)
    assert shown.chunks["chunk_index"].tolist() == [1, 2] and len(shown.forwards) == 3 and len(shown.events) == 2


def _two_sessions(tmp_path):
    """ar and speclisten on sessions "a" (onset: 400 vs 100 ms) and "b" (onset 300 vs 250 ms; tool call 2500 ms,
    missed, vs 900 ms)."""
    def rows(onset_a, onset_b, tool_b, missed):
        return [chunk("a", 0, kind="speak", is_onset=True, response_ms=onset_a),
                chunk("b", 0, task="fdb_v3", kind="speak", is_onset=True, response_ms=onset_b),
                chunk("b", 1, task="fdb_v3", start_s=1.0, arrival_s=2.0, kind="tool", response_ms=tool_b,
                      missed_deadline=missed, lag_ms=max(0.0, tool_b - 1000.0))]
    write_run(tmp_path / "ar", "ar", rows(400.0, 300.0, 2500.0, True))
    write_run(tmp_path / "sl", "speclisten", rows(100.0, 250.0, 900.0, False))
    write_run(tmp_path / "pld", "pld", rows(390.0, 300.0, 2400.0, True))
    return load_results([str(tmp_path)])


def test_default_picks_an_onset_and_a_tool_call_against_speclisten(tmp_path):
    onset, tool = pick_cases(_two_sessions(tmp_path), "ar")
    assert (onset.key, onset.session_id, onset.decoders) == ("fig5_onset", "a", ("ar", "speclisten"))
    assert (tool.key, tool.session_id, tool.first, tool.last) == ("fig6_tool_call", "b", 0, 1)
    assert "+1600 ms at chunk 1" in tool.why and "ar missed its deadline there" in tool.why


def test_named_case_and_its_errors(tmp_path):
    results = _two_sessions(tmp_path)
    case = session_case(results, "b", "ar", ("ar", "pld", "speclisten"))
    assert (case.key, case.decoders, case.first, case.last) == ("case_b", ("ar", "pld", "speclisten"), 0, 1)
    assert "first tool call (chunk 1)" in case.why
    with pytest.raises(TablesError, match=r"--case nope: no run holds this session \(sessions: a, b\)"):
        session_case(results, "nope")
    with pytest.raises(TablesError, match=r"--case a: no lookahead run holds it .*decoders there: ar, pld, speclisten"):
        session_case(results, "a", "ar", ("ar", "lookahead"))


def test_no_comparison_decoder_means_no_default_case(tmp_path):
    assert pick_cases(hand_made(tmp_path), "ar") == []


def test_cli_writes_the_case_figures_and_their_data(tmp_path, capsys):
    _two_sessions(tmp_path / "runs")
    out = tmp_path / "out"
    assert main([str(tmp_path / "runs"), "--out", str(out), "--case", "a", "--case-decoders", "ar,pld"]) == 0
    for stem in ("fig5_onset", "fig6_tool_call", "case_a"):
        assert (out / f"{stem}.png").stat().st_size > 10_000
    data = pd.read_csv(out / "case_a.csv")
    assert data["decoder"].tolist() == ["ar", "pld"] and data["response_ms"].tolist() == [400.0, 390.0]
    page = (out / "report.html").read_text()
    assert page.count('<h3 id="fig5_onset">') == 1 and '<h3 id="case_a">' in page and '<section id="viewer">' in page


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory, small_manifest):
    """AR, Speculative Listening and its streaming variant on the fixture model (modeled clock), 2 sessions."""
    from ticktock.replay.config import compose_run
    from ticktock.replay.runner import run

    folder = tmp_path_factory.mktemp("case_runs")
    for decoder in ("ar", "speclisten", "speclisten_stream"):
        cfg = compose_run(decoder, "fixture", None, [f"task.manifest={small_manifest}", "task.tool_executor=null",
                                                     "limit.sessions=2", "progress=false"])
        run(cfg, folder / decoder)
    return load_results([str(folder)])


def test_every_forward_of_a_real_replay_lies_in_its_chunks_work_or_window(real_runs):
    tolerance = 1e-6
    for run in real_runs.runs:
        for session_id in run.sessions["session_id"]:
            timeline = session_timeline(run, session_id)
            chunks = timeline.chunks.set_index("chunk_index")
            assert len(timeline.forwards) == len(run.forwards(session_id)) > 0
            for f in timeline.forwards.itertuples(index=False):
                c = chunks.loc[f.chunk_index]
                if f.phase == "post_audio":
                    assert c.work_start_ms - tolerance <= f.start_ms <= f.end_ms <= c.work_end_ms + tolerance
                else:
                    assert c.window_open_ms - tolerance <= f.start_ms <= f.end_ms <= c.window_work_end_ms + tolerance
            post = timeline.forwards[timeline.forwards["phase"] == "post_audio"]
            assert post.groupby("chunk_index").size().to_dict() == chunks["post_audio_forwards"].to_dict()
            ends = chunks["work_end_ms"].tolist()
            assert all(a <= b + tolerance for a, b in zip(ends, chunks["work_start_ms"].tolist()[1:]))
