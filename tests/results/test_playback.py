"""The playback model, on timelines computed by hand."""

from ticktock.results.playback import MIN_STALL_MS, Piece, Placed, place, summarize


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


# ---------------------------------------------------------------------------------------------- the jitter buffer

def test_a_buffer_filled_by_two_pieces_starts_the_reply_later_and_removes_its_stall():
    # Piece 1: 0.5 s, ready 1000+200 = 1200. Piece 2: 1.0 s, ready 2000+100 = 2100. Without a buffer piece 1 plays
    # 1200-1700 and piece 2 stalls 400 ms. With 600 ms: 500 ms buffered at 1200, 1500 ms at 2100 -> the reply starts at
    # 2100 (1100 after its arrival), piece 2 follows at 2600 (600 after its arrival), no stall; piece 3 (ready 3000+50)
    # waits for piece 2's end at 3600.
    pieces = [Piece(1000.0, 200.0, 0.5, True), Piece(2000.0, 100.0, 1.0, False), Piece(3000.0, 50.0, 0.3, False)]
    plain, buffered = place(pieces), place(pieces, delay_ms=600.0)
    assert [(p.start_ms, p.stall_ms, p.onset_ms) for p in plain] == [(200.0, 0.0, 200.0), (100.0, 400.0, None),
                                                                     (100.0, 0.0, None)]
    assert [(p.start_ms, p.stall_ms, p.onset_ms) for p in buffered] == [(1100.0, 0.0, 1100.0), (600.0, 0.0, None),
                                                                        (600.0, 0.0, None)]
    before, after = summarize(pieces, plain), summarize(pieces, buffered)
    assert (before.first_audio_ms, before.num_stalls, before.stall_ms) == ([200.0], 1, 400.0)
    assert (after.first_audio_ms, after.num_stalls, after.stall_ms) == ([1100.0], 0, 0.0)
    assert after.speech_s == before.speech_s


def test_a_buffer_that_fills_partway_through_a_piece_waits_only_for_that_piece():
    # 300 ms buffered at 1100; the second piece brings it to 1100 ms at 1900 >= 800: the reply starts at 1900.
    pieces = [Piece(1000.0, 100.0, 0.3, True), Piece(1500.0, 400.0, 0.8, False)]
    placed = place(pieces, delay_ms=800.0)
    assert [(p.start_ms, p.stall_ms, p.onset_ms) for p in placed] == [(900.0, 0.0, 900.0), (700.0, 0.0, None)]
    # a buffer the first piece fills alone changes nothing
    assert place(pieces, delay_ms=300.0) == place(pieces)


def test_a_reply_shorter_than_the_buffer_plays_once_all_of_it_is_ready():
    # 0.4 s of audio in all, a 2 s buffer: the reply starts when its last piece is ready (2000+300), not never.
    pieces = [Piece(1000.0, 100.0, 0.2, True), Piece(2000.0, 300.0, 0.2, False), Piece(4000.0, 50.0, 1.0, True)]
    placed = place(pieces, delay_ms=2000.0)
    # the next reply (1.0 s, also short of the buffer) starts as soon as it is all ready: each reply has its own buffer
    assert [(p.start_ms, p.stall_ms, p.onset_ms) for p in placed] == [(1300.0, 0.0, 1300.0), (500.0, 0.0, None),
                                                                      (50.0, 0.0, 50.0)]


def test_the_buffer_never_starts_a_reply_before_its_first_piece_is_ready_and_skips_silent_pieces():
    # A decision alone opens the reply. Piece 3 (2.0 s) is ready at 2500, before piece 2 (0.1 s, ready at 2900), and
    # fills the buffer alone; but the reply's first sound is piece 2's, so it cannot start before 2900.
    pieces = [Piece(1000.0, 100.0, 0.0, True), Piece(2000.0, 900.0, 0.1, False), Piece(2100.0, 400.0, 2.0, False)]
    placed = place(pieces, delay_ms=1000.0)
    assert placed[0] == Placed(100.0, 0.0)
    assert (placed[1].start_ms, placed[1].onset_ms) == (900.0, 1900.0)  # onset from the reply's first chunk (1000)
    assert (placed[2].start_ms, placed[2].stall_ms) == (900.0, 0.0)  # follows piece 2's end at 3000


def test_delay_zero_is_exactly_the_unbuffered_playback():
    pieces = [Piece(1000.1, 300.7, 0.83, True), Piece(2000.3, 250.9, 1.71, False), Piece(3000.7, 900.1, 0.5, False),
              Piece(7000.9, 0.3, 0.0, True), Piece(8000.2, 123.4, 0.6, False), Piece(9000.0, 10.0, 0.1, True)]
    assert place(pieces, delay_ms=0.0) == place(pieces) == place(pieces, 0)
    assert [p.start_ms for p in place(pieces, 0.0) if p.onset_ms is not None] == [300.7, 123.4, 10.0]
