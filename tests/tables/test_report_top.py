"""The first lines of report.html: what the losslessness and greedy-quality checks did (and did not do), and the
clock every figure is on, per group of runs when they differ (issue 62, frictions 1 and 2)."""

from table_runs import MODELED, chunk, write_run

from ticktock.tables import build_tables, load_results
from ticktock.tables.report import html_report

WALL = {"name": "wall"}
DERIVED = {**MODELED, "profile_sources": {"forward_ms": {"derived": "a bandwidth model"},
                                          "encode_ms": {"assumed": "a guess"},
                                          "talkers.espeak": {"measured": "python -m ticktock.calibrate talker=espeak"}}}
MEASURED = {**MODELED, "profile": "calibrated", "profile_device": "Test GPU",
            "profile_provenance": "measured with python -m ticktock.calibrate",
            "profile_sources": {"forward_ms": {"measured": "python -m ticktock.calibrate"},
                                "encode_ms": {"measured": "python -m ticktock.calibrate"}}}


def rows(post_audio_ms: float = 400.0, tokens=(1, 2, 3, 4)) -> list[dict]:
    return [chunk("s", 0, kind="speak", post_audio_ms=post_audio_ms, num_output_tokens=len(tokens),
                  num_post_audio_forwards=len(tokens), is_onset=True, response_ms=post_audio_ms,
                  output_token_ids=list(tokens))]


def page_of(folder) -> str:
    results = load_results([str(folder)])
    return html_report(build_tables(results).tables, {}, results)


def top(page: str) -> str:
    """What a reader sees before the navigation: the title, the clock, the banner."""
    return page.split("<nav>")[0]


def banner(page: str) -> str:
    """The banner of the checks: from its first box to the navigation."""
    head = top(page)
    return head[head.index('<div class="banner'):]


def test_a_wall_clock_run_without_ar_beside_it_claims_no_check_passed(tmp_path):
    write_run(tmp_path / "speclisten", "speclisten", rows(100.0), clock=WALL)
    head = top(page_of(tmp_path))
    assert "passed" not in head
    assert "Losslessness not checked" in head and "no ar run" in head
    assert "Greedy quality not checked" in head


def test_the_banner_says_what_passed_and_what_was_not_checked(tmp_path):
    write_run(tmp_path / "modeled" / "ar", "ar", rows())
    write_run(tmp_path / "modeled" / "speclisten", "speclisten", rows(100.0))
    write_run(tmp_path / "wall" / "speclisten", "speclisten", rows(100.0), clock=WALL, run_id="wall-speclisten")
    passed, not_checked = banner(page_of(tmp_path)).split("Not checked")
    assert "Losslessness passed" in passed and "speclisten" in passed and "modeled:test-profile" in passed
    assert "wall" not in passed  # the wall-clock run had no ar run beside it: nothing passed there
    assert "Losslessness not checked" in not_checked and "/ wall /" in not_checked and "no ar run" in not_checked


def test_a_failure_is_never_reported_as_passed(tmp_path):
    write_run(tmp_path / "ar", "ar", rows())
    write_run(tmp_path / "speclisten", "speclisten", rows(100.0, tokens=(1, 2, 3, 5)))
    head = top(page_of(tmp_path))
    assert "FAILURE(S)" in head and "Losslessness passed" not in head


def test_only_the_baseline_run_leaves_nothing_to_compare(tmp_path):
    write_run(tmp_path / "ar", "ar", rows())
    head = top(page_of(tmp_path))
    assert "passed" not in head and "Losslessness not checked" in head and "no decoder other than ar" in head


def test_the_clock_is_said_before_anything_else(tmp_path):
    write_run(tmp_path / "ar", "ar", rows(), clock=DERIVED)
    head = top(page_of(tmp_path))
    clock = head.split('class="banner')[0]  # above the banner
    assert "modeled clock" in clock and "test-profile" in clock and "Test GPU (derived)" in clock
    assert "a derived profile, not measured" in clock and "forward_ms" in clock
    assert "talkers.espeak" not in clock  # the talker's cost is no cost of the figures without a talker


def test_a_measured_profile_is_not_called_derived(tmp_path):
    write_run(tmp_path / "ar", "ar", rows(), clock=MEASURED)
    clock = top(page_of(tmp_path)).split('class="banner')[0]
    assert "modeled clock" in clock and "calibrated" in clock and "measured" in clock and "derived" not in clock


def test_one_clock_line_per_group_of_runs_when_the_clocks_differ(tmp_path):
    write_run(tmp_path / "modeled" / "ar", "ar", rows(), clock=DERIVED)
    write_run(tmp_path / "wall" / "ar", "ar", rows(), clock=WALL, run_id="wall-ar")
    clock = top(page_of(tmp_path)).split('class="banner')[0]
    assert "modeled clock" in clock and "test-profile" in clock
    assert "wall clock" in clock and "measured on Test CPU" in clock
    assert clock.count("<li>") == 2
