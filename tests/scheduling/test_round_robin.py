from ticktock.scheduling.base import DraftCandidate
from ticktock.scheduling.round_robin import RoundRobin


def candidate(slot: int, order: int, closes: float = 1000.0, reply_open: bool = False) -> DraftCandidate:
    return DraftCandidate(slot, closes, 0, (), reply_open, -80.0, None, order)


def test_turns_go_round_the_slots_whatever_the_sessions_are_doing():
    policy = RoundRobin()
    waiting = [candidate(2, 1), candidate(0, 2, reply_open=True), candidate(3, 3, closes=10.0)]
    assert [policy.choose(waiting, 0.0).slot for _ in range(4)] == [0, 2, 3, 0]


def test_a_slot_that_stops_waiting_is_skipped():
    policy = RoundRobin()
    assert policy.choose([candidate(0, 1), candidate(1, 2)], 0.0).slot == 0
    assert policy.choose([candidate(0, 3), candidate(2, 4)], 0.0).slot == 2
    assert policy.choose([candidate(0, 5), candidate(1, 6)], 0.0).slot == 0


def test_round_robin_batches_every_draft_whose_window_allows_and_carries_none_on_post_audio_steps():
    from ticktock.scheduling.base import DraftCandidate
    from ticktock.scheduling.round_robin import RoundRobin

    c = lambda slot, closes: DraftCandidate(slot, closes, 0, (), False, -80.0, None, slot)  # noqa: E731
    step_ms = lambda joined: 50.0 + 10.0 * len(joined)  # noqa: E731
    joined = RoundRobin().join([c(3, 1000.0), c(1, 1000.0), c(2, 155.0)], 100.0, step_ms, post_audio=False)
    assert [x.slot for x in joined] == [1, 3]  # slot 2's window closes at 155 < 100 + 70
    assert RoundRobin().join([c(1, 1000.0)], 100.0, step_ms, post_audio=True) == []
    assert not RoundRobin().carries_drafts  # so no post-audio step lends its time to an idle encoding either
