"""The playback model, on timelines computed by hand."""

from ticktock.results.playback import MIN_STALL_MS, Piece, place, summarize


def test_a_late_piece_stalls_and_an_early_one_waits_for_the_previous():
    # 1 s chunks. Piece 1: ready 1000+300, plays 1.0 s to 2300. Piece 2: ready 2000+500 = 2500 -> stall 200,
    # plays to 2500+1200 = 3700. Piece 3: ready 3000+100 = 3100 < 3700 -> waits, starts 700 ms after its arrival.
    pieces = [Piece(1000.0, 300.0, 1.0, True), Piece(2000.0, 500.0, 1.2, False), Piece(3000.0, 100.0, 0.4, False)]
    placed = place(pieces)
    assert [(p.start_ms, p.stall_ms, p.onset_ms) for p in placed] == [(300.0, 0.0, 300.0), (500.0, 200.0, None),
                                                                      (700.0, 0.0, None)]
    summary = summarize(pieces, placed)
    assert (summary.first_audio_ms, summary.num_stalls, summary.stall_ms) == ([300.0], 1, 200.0)
    assert summary.speech_s == 2.6 and abs(summary.stalls_per_minute - 60 / 2.6) < 1e-9


def test_a_new_reply_never_stalls_and_restarts_the_timeline():
    pieces = [Piece(1000.0, 200.0, 0.5, True), Piece(5000.0, 900.0, 0.5, True)]
    placed = place(pieces)
    assert [(p.start_ms, p.stall_ms, p.onset_ms) for p in placed] == [(200.0, 0.0, 200.0), (900.0, 0.0, 900.0)]
    assert summarize(pieces, placed).num_stalls == 0


def test_a_piece_without_audio_leaves_the_reply_as_it_was_and_the_onset_counts_from_the_reply_start():
    # The reply opens at 1000 with a decision alone (no text); its first sound is the next chunk's, ready 2000+400.
    pieces = [Piece(1000.0, 150.0, 0.0, True), Piece(2000.0, 400.0, 0.9, False), Piece(3000.0, 350.0, 1.0, False)]
    placed = place(pieces)
    assert placed[1].onset_ms == 1400.0 and placed[1].stall_ms == 0.0
    # piece 2 ends at 2400 + 900 = 3300; piece 3 is ready at 3350: a 50 ms stall
    assert (placed[2].start_ms, placed[2].stall_ms) == (350.0, 50.0)
    assert summarize(pieces, placed).first_audio_ms == [1400.0]


def test_gaps_up_to_the_threshold_are_not_counted_as_stalls():
    pieces = [Piece(0.0, 0.0, 1.0, True), Piece(1000.0, MIN_STALL_MS, 1.0, False), Piece(2000.0, 40.0, 1.0, False)]
    placed = place(pieces)
    assert [p.stall_ms for p in placed] == [0.0, MIN_STALL_MS, 30.0]
    summary = summarize(pieces, placed)
    assert (summary.num_stalls, summary.stall_ms) == (1, 30.0)


def test_no_speech_has_no_rate():
    summary = summarize([], [])
    assert summary.stalls_per_minute is None and summary.first_audio_ms == []
