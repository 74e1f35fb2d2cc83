"""One scheduler for replay and serving: ``ticktock serve``'s device is the replay's ``SharedDevice`` under real time.

On a scripted arrival trace the served device (wall clock, real arrivals) makes the choices the modeled replay makes,
and a drafting session never holds another session's post-audio work longer than one forward; a client that sends
ahead of real time gains no place in the order; served sessions batch their forwards and encodings with tokens equal
to each session alone (embedded model, fp32, eager attention, greedy); and the faults: a session closed while its
forward is batched, a session whose work raises inside a batched step, a decoder that asks for idle work for ever."""

import time

import numpy as np
import pytest

from ticktock.clocks.base import FORWARD, DeviceWork, WindowClosed
from ticktock.clocks.modeled import CostProfile, ModeledClock
from ticktock.clocks.wall import WallClock
from ticktock.decoders.ar import ARDecoder
from ticktock.replay.config import build, compose_run
from ticktock.replay.device import SessionLane, SharedDevice
from ticktock.world.injection import ToolCallInjector
from ticktock.shipped import resource_path
from ticktock.scheduling.round_robin import RoundRobin
from ticktock.serve.live import LiveAudio, ServedDevice
from ticktock.sessions.audio import load_audio
from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor

from helpers import NoBarrier, outputs
from helpers import replay as replay_alone
import served
from served import stream_in_step

COST_MS = 60.0  # every scripted forward
STARTS_MS = (0.0, 530.0)  # B starts while A drafts: every arrival and window close is >= 40 ms after a step's start
UNITS = 4


def scripted(lane, log, sleep_s: float, units: int = 2, forwards: int = 2, drafts: int = 30) -> None:
    """A session of 1 s units: ``forwards`` post-audio forwards per unit, and before each unit after the first an idle
    window that asks for up to ``drafts`` draft forwards until the unit's audio arrives. ``log`` gets (slot, what) as
    the device runs each piece (``sleep_s``: its real cost on a served device)."""

    def work(what: str) -> DeviceWork:
        def run():
            time.sleep(sleep_s)
            log.append((lane.slot, what, lane.device.now - lane.start_ms))
        return DeviceWork(FORWARD, run, NoBarrier(), query_tokens=1, context_tokens=1)

    for unit in range(units):
        end_ms = 1000.0 * (unit + 1)
        if unit:
            window = lane.stopwatch(window_ms=lane.start_ms + end_ms - lane.local_ms)
            try:
                for _ in range(drafts):
                    window.run(work("draft"))
            except WindowClosed:
                log.append((lane.slot, "dropped", None))
        lane.wait_until(end_ms)
        arrived = lane.arrival_ms
        step = lane.stopwatch()
        for _ in range(forwards):
            step.run(work("post"))
        log.append((lane.slot, "waited", step.elapsed_ms() - forwards * COST_MS, arrived - lane.start_ms))


def modeled_trace(**script) -> list:
    log = []
    device = SharedDevice(ModeledClock(CostProfile.constant(COST_MS)), RoundRobin())
    for slot, start in enumerate(STARTS_MS):
        device.add(SessionLane(device, slot, start), lambda lane: scripted(lane, log, 0.0, **script))
    device.run(on_finished=lambda lane: None)
    return log, device


def served_trace(ahead: tuple[bool, ...] = (False, False), units: int = 2, **script) -> tuple[list, ServedDevice]:
    """The same sessions served: each lane's audio arrives in real time (a whole unit at its end), or all at once at
    its start where ``ahead`` says so."""
    log, ended = [], []
    served = ServedDevice(WallClock(), RoundRobin())
    audios, lanes = [LiveAudio(), LiveAudio()], []
    try:
        for slot, start in enumerate(STARTS_MS):
            while lanes and served.realtime.ms() < lanes[0].start_ms + start:
                time.sleep(0.0005)
            audios[slot].on_change = served.poke
            lanes.append(served.lane(audios[slot], None, ended.append))
            served.admit(lanes[-1], lambda lane: scripted(lane, log, COST_MS / 1000.0, units=units, **script))
            if ahead[slot]:
                audios[slot].append(np.zeros(16_000 * units, np.float32))
        due = sorted((lane.start_ms + 1000.0 * (u + 1), slot) for slot, lane in enumerate(lanes) for u in range(units)
                     if not ahead[slot])
        for at_ms, slot in due:
            while served.realtime.ms() < at_ms:
                time.sleep(0.0005)
            audios[slot].append(np.zeros(16_000, np.float32))
        for audio in audios:
            audio.end()
        deadline = time.monotonic() + 30
        while len(ended) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        served.stop()
    assert ended == [None, None]
    return log, served


def choices(log) -> list:
    return [entry[:2] for entry in log if entry[1] != "waited"]


def test_the_served_device_is_the_replays_scheduler_and_makes_its_choices_on_a_scripted_trace():
    modeled, device = modeled_trace()
    served, served_device = served_trace()
    assert type(served_device.shared) is type(device) is SharedDevice
    assert choices(served) == choices(modeled)
    # A drafts until a draft would still run when B's unit arrives (1530 ms): the device idles instead, and B's
    # post-audio work starts on its arrival.
    assert choices(modeled)[:10] == [(0, "post")] * 2 + [(0, "draft")] * 6 + [(1, "post")] * 2
    assert (0, "dropped") in choices(modeled) and (1, "dropped") in choices(modeled)  # drafts waiting at arrival
    # A drafting session never delays another's post-audio work: not at all on the modeled clock, and served by less
    # than one forward (the wall clock's own jitter against the measured estimates).
    assert [entry[2] for entry in modeled if entry[1] == "waited"] == [0.0] * 4
    assert max(entry[2] for entry in served if entry[1] == "waited") <= COST_MS


def test_a_client_sending_ahead_of_real_time_gains_no_place_before_a_session_in_real_time():
    # A sends all of its 3 units at once; each of its units takes 12 forwards (720 ms), so A's post-audio work never
    # ends. B's unit 0 arrives at 1530 ms: it waits for the forward under way, not for A's whole backlog.
    log, _ = served_trace(ahead=(True, False), units=3, forwards=12, drafts=0)
    first_b = next(entry for entry in log if entry[0] == 1 and entry[1] == "waited")
    assert first_b[2] <= COST_MS + 25.0
    a_arrivals = [entry[3] for entry in log if entry[0] == 0 and entry[1] == "waited"]
    assert a_arrivals == pytest.approx([1000.0, 2000.0, 3000.0], abs=1.0)  # its units' places: real-time pace


@pytest.fixture(scope="module")
def sessions():
    return load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["fdb_v3"])[:3]


def served_model(decoder: str, *overrides: str):
    """The model ``python -m ticktock.serve decoder=<decoder> <overrides>`` serves, e.g. (docs/serving.md)::

        python -m ticktock.serve decoder=speclisten_stream concurrency.batching=true concurrency.batch_encodings=true
    """
    from ticktock.serve.__main__ import compose_serve
    from ticktock.serve.session import ServedModel

    return ServedModel(compose_serve([f"decoder={decoder}", *overrides, "progress=false"]))


def serve_together(model, sessions, units: int = UNITS) -> list:
    """Serve ``sessions`` at once, streamed in step in real time for ``units`` seconds; each one's (units, error:
    the first its ``on_end`` was called with, ``"running"`` while it has not ended)."""
    return [(done, errors[0] if errors else "running") for done, errors in served.serve_together(model, sessions,
                                                                                                  units)]


def alone(model, session, decoder: str, units: int = UNITS) -> list:
    shipped = ARDecoder() if decoder == "ar" else build(compose_run(decoder, "embedded", None, []).decoder)
    return outputs(replay_alone(model.adapter, session, shipped, max_chunks=units,
                                injector=ToolCallInjector(MockToolExecutor())))


def test_served_sessions_batch_their_forwards_and_encodings_and_keep_the_tokens_of_each_alone(sessions):
    model = served_model("speclisten_stream", "concurrency.batching=true", "concurrency.batch_encodings=true")
    try:
        results = serve_together(model, sessions)
    finally:
        model.close()
    stats = model.device.shared.stats
    assert stats.batched_steps > 0 and stats.batched_encode_steps > 0
    for (units, error), session in zip(results, sessions):
        assert error is None
        assert [u.output_tokens for u in units] == alone(model, session, "speclisten_stream")


def last_replica(monkeypatch, adapter_type, count: int) -> list:
    """Watch the replicas the served sessions' engines make: the list holds the ``count``-th (the last session's)."""
    replica, made, last = adapter_type.replica, [], []

    def replicas(self):
        made.append(replica(self))
        if len(made) == count:
            last.append(made[-1])
        return made[-1]

    monkeypatch.setattr(adapter_type, "replica", replicas)
    return last


def test_a_session_closed_while_its_forward_is_batched_ends_and_the_others_keep_their_tokens(sessions, monkeypatch):
    from ticktock.serve.session import ServedSession

    model = served_model("ar", "concurrency.batching=true")
    adapter_type = type(model.adapter)
    batched, last = adapter_type.forward_many, last_replica(monkeypatch, adapter_type, len(sessions))
    served, closed = [], []
    start = ServedSession.start

    def starting(self):
        served.append(self)
        start(self)

    def closing_one(self, calls):  # the last session hangs up while its forward runs batched with the others'
        if not closed and len(calls) > 1 and any(call[0] is last[0] for call in calls):
            closed.append(len(served[-1].units))
            served[-1].cancel()
        return batched(self, calls)

    monkeypatch.setattr(ServedSession, "start", starting)
    monkeypatch.setattr(adapter_type, "forward_many", closing_one)
    try:
        results = serve_together(model, sessions)
    finally:
        model.close()
    assert closed and [error for _, error in results] == [None] * len(sessions)
    assert len(results[-1][0]) == closed[0] + 1 < UNITS  # the unit being decided, then nothing more
    for (units, _), session in zip(results[:-1], sessions):
        assert [u.output_tokens for u in units] == alone(model, session, "ar")
    assert model.device.shared.lanes == []  # its place is free


def test_a_session_whose_work_raises_in_a_batched_step_fails_alone_with_its_error(sessions, monkeypatch):
    model = served_model("ar", "concurrency.batching=true")
    adapter_type = type(model.adapter)
    batched, single = adapter_type.forward_many, adapter_type.forward
    faulty = last_replica(monkeypatch, adapter_type, len(sessions))
    raised = []

    def forward(self, *args, **kwargs):  # (after its batch raised: the device runs each request again alone)
        if raised and self is faulty[0]:
            raise RuntimeError("a broken forward of one session")
        return single(self, *args, **kwargs)

    def forward_many(self, calls):
        if faulty and any(call[0] is faulty[0] for call in calls):
            raised.append(len(calls))
            raise RuntimeError("a broken forward in a batch")
        return batched(self, calls)

    monkeypatch.setattr(adapter_type, "forward", forward)
    monkeypatch.setattr(adapter_type, "forward_many", forward_many)
    try:
        results = serve_together(model, sessions)
    finally:
        model.close()
    errors = [error for _, error in results]
    assert raised and max(raised) > 1  # it raised inside a batched step
    assert errors[:-1] == [None] * (len(sessions) - 1)
    assert isinstance(errors[-1], RuntimeError) and "broken forward of one session" in str(errors[-1])
    for (units, _), session in zip(results[:-1], sessions):
        assert [u.output_tokens for u in units] == alone(model, session, "ar")


class Insatiable(ARDecoder):
    """Asks for idle-window work for ever, and swallows every ``WindowClosed``."""

    def idle(self, window):
        while True:
            try:
                window.silence(fresh=True)
            except WindowClosed:
                pass


def test_a_decoder_that_asks_for_idle_work_for_ever_is_bounded_and_its_units_are_decided(sessions, monkeypatch):
    model = served_model("ar")
    monkeypatch.setattr(model, "decoder", Insatiable)
    try:
        [(units, error)] = serve_together(model, sessions[:1], units=3)
    finally:
        model.close()
    assert error is None
    assert [u.output_tokens for u in units] == alone(model, sessions[0], "ar", units=3)


def test_the_device_thread_stops_when_asked_and_refuses_sessions_after():
    served = ServedDevice(WallClock(), RoundRobin())
    served.stop(timeout_s=5.0)
    assert not served._thread.is_alive()
    with pytest.raises(RuntimeError, match="stopped"):
        served.admit(served.lane(LiveAudio(), None, lambda error: None), lambda lane: None)


DECISION_EVENTS = {"response.listen", "response.speak"}


SPEAKS_S = 8  # llama_questions-eval-0-0008 speaks in its units 3 to 6


async def two_in_a_batch_and_one_over_the_limit(url: str, samples: np.ndarray) -> dict:
    """Two duplex clients stream the same 8 s in step: both reply in the same units, one forward after another, so
    their forwards wait together and run batched. A third client connects while they reply, a fourth once they have
    closed. What each saw."""
    import asyncio
    import base64
    import json

    import aiohttp

    pcm = (np.clip(samples[: SPEAKS_S * 16_000], -1, 1) * 32767).round().astype("<i2").tobytes()
    seen: dict = {"a": [], "b": []}

    async def opened(http) -> tuple:
        ws = await http.ws_connect(url)
        await ws.send_json({"type": "session.update", "session": {}})
        return ws, json.loads((await ws.receive(timeout=10)).data)

    async def hold(ws, name: str, began: float) -> None:
        loop = asyncio.get_running_loop()
        for k, start in enumerate(range(0, len(pcm), 3200)):
            await asyncio.sleep(max(0.0, began + k * 0.1 - loop.time()))
            await ws.send_json({"type": "input_audio_buffer.append",
                                "audio": base64.b64encode(pcm[start: start + 3200]).decode()})
        while sum(event["type"] in DECISION_EVENTS for event in seen[name]) < SPEAKS_S:
            seen[name].append(json.loads((await ws.receive(timeout=10)).data))
        await ws.send_json({"type": "session.close"})
        while seen[name][-1]["type"] != "session.closed":
            seen[name].append(json.loads((await ws.receive(timeout=10)).data))

    async with aiohttp.ClientSession() as http:
        (a, _), (b, _) = await opened(http), await opened(http)
        began = asyncio.get_running_loop().time() + 0.1
        holding = asyncio.gather(hold(a, "a", began), hold(b, "b", began))
        await asyncio.sleep(4.5)  # while they reply, batched
        over, seen["over"] = await opened(http)
        await over.close()
        await holding
        for ws in (a, b):
            await ws.close()
        await asyncio.sleep(0.5)  # the server has counted them out
        after, seen["after"] = await opened(http)
        await after.close()
    return seen


def test_max_sessions_reached_while_a_batch_runs_refuses_the_next_and_the_batched_sessions_go_on():
    import asyncio

    from served import serving

    replying = next(s for s in load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"),
                                             tasks=["llama_questions"]) if s.session_id == "llama_questions-eval-0-0008")
    with serving("decoder=ar", "concurrency.batching=true", "serve.max_sessions=2") as (server, url):
        seen = asyncio.run(asyncio.wait_for(
            two_in_a_batch_and_one_over_the_limit(f"{url}/v1/realtime?duplex=1", load_audio(replying.audio_path)),
            60))
        batched = server.model.device.shared.stats.batched_steps
    assert seen["over"]["type"] == "error" and seen["over"]["error"]["code"] == "resource_exhausted"
    for name in ("a", "b"):
        units = [e["ticktock"]["unit"] for e in seen[name] if e["type"] in DECISION_EVENTS]
        assert units == list(range(SPEAKS_S)) and seen[name][-1]["type"] == "session.closed"
        assert not any(e["type"] == "error" for e in seen[name])
    assert batched > 0
    assert seen["after"]["type"] == "session.created"  # their places were freed


def test_a_session_waits_for_its_decisions_to_be_written_at_most_briefly_and_decides_every_unit(sessions):
    # After each decision the session asks whether the server has written that unit's events (``written``) before it
    # drafts the next unit. A server that never says so delays it by WRITE_WAIT_S per unit, no more: every unit is
    # still decided, with the tokens of the session alone.
    from ticktock.serve.session import ServedSession

    model = served_model("speclisten_stream")
    asked, ended = [], []
    try:
        one = ServedSession(model, sessions[0].session_id, on_unit=lambda unit: None, on_call=lambda *call: None,
                            on_end=ended.append, system_prompt=sessions[0].system_prompt, tools=sessions[0].tools,
                            written=lambda index: asked.append(index) or False)
        one.start()
        sender = stream_in_step([(one.audio, load_audio(sessions[0].audio_path))], UNITS,
                                began=time.monotonic() + 0.05)
        sender.join(timeout=60)
        one.join(timeout_s=60)
    finally:
        model.close()
    assert ended == [None]
    assert sorted(set(asked)) == [u.index for u in one.units]  # asked after every decision
    assert [u.output_tokens for u in one.units] == alone(model, sessions[0], "speclisten_stream")
