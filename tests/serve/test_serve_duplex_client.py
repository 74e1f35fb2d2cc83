"""vLLM-Omni's own ``DuplexClient`` (installed with --no-deps, imported without vLLM) holds whole sessions with
``ticktock serve`` on loopback, as vLLM-Omni's server holds them: a mini-corpus session streamed in real time in two
turns (each ended by ``input_audio_buffer.commit``, answered ``input_audio_buffer.committed``, the audio going on
after it) gets a decision for every unit, and the client ends it with ``session.close`` (``session.closed``, then the
socket closes). The served text equals, unit by unit, the in-process replay of that session with the same model and
decoder (greedy), for AR, Speculative Listening and Speculative Listening on streaming audio; with a talker, the
speak units carry the talker's speech."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from ticktock.world.injection import ToolCallInjector
from ticktock.shipped import resource_path
from ticktock.replay.config import build, compose_run
from ticktock.sessions.audio import load_audio
from ticktock.sessions.manifest import load_manifest
from ticktock.world.mock_tools import MockToolExecutor

from helpers import replay as replay_session
from vllm_client import duplex_module

from served import serving

UNITS = 8  # llama_questions-eval-0-0008 listens 3 units, speaks 4, then listens again


@pytest.fixture(scope="module")
def session():
    sessions = load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["llama_questions"])
    return next(s for s in sessions if s.session_id == "llama_questions-eval-0-0008")


def pcm16(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes()


def decided(events: list[dict]) -> int:
    """How many units have been decided so far."""
    return sum(event["type"] in ("response.listen", "response.speak") for event in events)


async def until_decided(events: list[dict], units: int, timeout_s: float = 60.0) -> None:
    """Wait (bounded) until ``units`` units are decided, as the live client waits before it closes."""
    async def wait() -> None:
        while decided(events) < units:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout_s)


async def stream_turns(client, samples: np.ndarray) -> None:
    """Stream ``samples`` in real time as two user turns split at a unit boundary, each ended by a commit (a turn
    commit: the audio goes on after the first)."""
    middle = (len(samples) // 16_000 // 2) * 16_000
    for turn in (samples[:middle], samples[middle:]):
        await client.stream_pcm(pcm16(turn), chunk_ms=100, realtime=True)
        await client.commit()


async def hold_session(url: str, samples: np.ndarray, instructions: str | None = None) -> list[dict]:
    """One session with the real client: stream ``samples`` in real time in two committed turns, wait until every
    unit is decided, close the session (``session.close``), and collect every server event to its end."""
    duplex = duplex_module()
    config = duplex.SessionConfig(instructions=instructions)
    async with duplex.DuplexClient(url, model="embedded", config=config, reconnect=None) as client:
        collected = duplex.EventCollector()
        collecting = asyncio.ensure_future(collected.consume(client))
        await stream_turns(client, samples)
        await until_decided(collected.events, len(samples) // 16_000)
        await client.close()  # session.close: the server answers session.closed and closes the socket
        await asyncio.wait_for(collecting, timeout=10)
    return collected.events


def served_units(events: list[dict]) -> dict[int, tuple[str, str]]:
    """Each unit's decision and the text sent with it, from the raw events in order."""
    units, current = {}, None
    for event in events:
        kind = event["type"]
        if kind in ("response.listen", "response.speak"):
            current = event["ticktock"]["unit"]
            units[current] = (kind.split(".")[1], "")
        elif kind == "response.output_audio_transcript.delta" and current is not None:
            decision, text = units[current]
            units[current] = (decision, text + event["delta"])
    return units


def replayed_units(session, decoder: str, units: int = UNITS) -> dict[int, tuple[str, str]]:
    from ticktock.adapters.base import spoken_tokens
    from ticktock.embedded.model import load_embedded_adapter

    adapter = load_embedded_adapter()
    trace = replay_session(adapter, session, build(compose_run(decoder, "embedded", None, []).decoder),
                           max_chunks=units, injector=ToolCallInjector(MockToolExecutor()))
    return {c.span.index: ("listen" if c.kind in ("listen", "other") else "speak",
                           adapter.decode_tokens(spoken_tokens(c.output, adapter.protocol)))
            for c in trace.chunks}


@pytest.mark.parametrize("decoder", ["ar", "speclisten", "speclisten_stream"])
def test_the_served_text_equals_the_replay_unit_by_unit(session, decoder):
    samples = load_audio(session.audio_path)[: UNITS * 16_000]
    with serving(f"decoder={decoder}") as (server, url):
        events = asyncio.run(hold_session(url, samples, session.system_prompt))
    units = served_units(events)
    assert sorted(units) == list(range(UNITS))  # a decision for every unit, the first included
    assert units == replayed_units(session, decoder)
    assert [decision for decision, _ in units.values()].count("speak") >= 2  # one response over several units
    assert events[-1]["type"] == "session.closed"  # (session.created came in the client's handshake)
    assert events[-1]["reason"] == "client_close"
    kinds = [e["type"] for e in events]
    assert kinds.count("input_audio_buffer.committed") == 2  # two turn commits, the session open after the first
    assert decided(events[: kinds.index("input_audio_buffer.committed")]) < UNITS
    assert not [e for e in events if e["type"] == "error"]
    for event in events:
        if event["type"] in ("response.listen", "response.speak"):
            assert 0.0 <= event["ticktock"]["post_audio_ms"] < 5000.0


def test_with_a_talker_the_speak_units_carry_its_speech(session):
    samples = load_audio(session.audio_path)[: UNITS * 16_000]
    with serving("decoder=speclisten_stream", "talker=espeak") as (server, url):
        events = asyncio.run(hold_session(url, samples, session.system_prompt))
    audio = [e for e in events if e["type"] == "response.output_audio.delta"]
    assert audio, [e["type"] for e in events]
    duplex = duplex_module()
    pcm = b"".join(duplex.wrap_event(e).audio for e in audio)
    assert len(pcm) // 2 / audio[0]["sample_rate_hz"] > 0.3  # at least some speech, at the talker's rate
    spoken = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert spoken.strip()


async def hold_tool_session(url: str, samples: np.ndarray, tools) -> list[dict]:
    """A session whose tools the client declares and runs itself (the mock tool world, on the client's side): every
    function call is answered with a ``function_call_output``, as a deployed client answers it."""
    import json

    duplex = duplex_module()
    world = MockToolExecutor()
    async with duplex.DuplexClient(url, model="embedded", config=duplex.SessionConfig(), reconnect=None) as client:
        await client.send({"type": "session.update",
                           "session": {"tools": [{"type": "function", **tool} for tool in tools]}})
        events = []

        async def answer_calls() -> None:
            async for event in client.events():
                events.append(event.raw)
                if event.type == "response.function_call_arguments.done":
                    call = {"function": event.raw["name"], "args": json.loads(event.raw["arguments"])}
                    await client.send({"type": "conversation.item.create", "item": {
                        "type": "function_call_output", "call_id": event.raw["call_id"],
                        "output": world.respond(call)}})

        answering = asyncio.ensure_future(answer_calls())
        await stream_turns(client, samples)
        await until_decided(events, len(samples) // 16_000)
        await client.close()
        await asyncio.wait_for(answering, timeout=10)
    return events


def test_a_tool_call_goes_to_the_client_and_its_output_comes_back_into_the_next_unit():
    session = next(s for s in load_manifest(resource_path("manifests/ticktock-mini/manifest.jsonl"), tasks=["fdb_v3"])
                   if s.session_id == "fdb_v3-eval-0-0009")  # calls modify_autopay in unit 6, then speaks
    units = 10
    samples = load_audio(session.audio_path)[: units * 16_000]
    with serving("decoder=speclisten_stream") as (server, url):
        events = asyncio.run(hold_tool_session(url, samples, session.tools))
    calls = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("modify_autopay",
                                                             '{"bill_type": "water", "source_account": "business"}')]
    kinds = [e["type"] for e in events]
    assert kinds.index("response.output_item.added") < kinds.index("response.output_item.done")
    served = served_units(events)
    expected = replayed_units(session, "speclisten_stream", units)
    assert served == expected  # the tool unit and the spoken answer after the client's output, unit by unit
    assert "error" not in kinds
