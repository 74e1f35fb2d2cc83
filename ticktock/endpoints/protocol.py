"""The contract of a live endpoint's wire protocol: which client events a session sends, and whether the server
reports a decision for every unit.

A protocol is one module and one config (``configs/protocol/<name>.yaml``, selected with ``protocol=<name>``): a class
with the methods below, each returning the client events (JSON objects) to send at that moment of a session. The
client (``ticktock.endpoints.client``) calls them; the events the server sends back are read by one parser for every
protocol (``ticktock.wire.parse_server_event``), since the OpenAI Realtime GA vocabulary is common to them. The events
are ``ticktock.wire``'s client-event classes, sent as their ``to_json()``.

``closing`` / ``awaits_closed``: how a session ends once everything is measured (``ticktock.endpoints.client``).

``per_unit``: True when the server decides every unit itself and says so (vLLM-Omni's ``response.listen`` /
``response.speak``): each unit's response time, lag and deadline miss are measured; False for a turn-based server,
which answers committed turns (``ticktock.endpoints.measure`` says what is measured then).

``opening`` takes the session's output (``SessionOutput``: the output modalities, the reference voice as a data URI,
the ``extra_body`` the user passes to the server), from the endpoint's options (``model.modalities``,
``model.ref_audio``, ``model.extra_body``).

Example (the events of a session's opening, as the vLLM-Omni duplex protocol sends them)::

    >>> from ticktock.endpoints.vllm_omni_duplex import VllmOmniDuplex
    >>> [event["type"] for event in VllmOmniDuplex().opening("Be brief.", [], SessionOutput(("text",)))]
    ['session.update']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ticktock.wire import AudioAppend, FunctionCallOutput, SessionUpdate


@dataclass(frozen=True)
class SessionOutput:
    """What a session asks the server to produce: ``modalities`` (``audio`` and/or ``text``), the reference voice of
    its speech (``ref_audio``: a ``data:audio/wav;base64,...`` URI, or None) and ``extra_body`` (the server's own
    session options, passed as given, e.g. vLLM-Omni's ``force_listen_count``).

    >>> SessionOutput().modalities, SessionOutput(("text",)).speaks
    (('audio',), False)
    """

    modalities: tuple[str, ...] = ("audio",)
    ref_audio: str | None = None
    extra_body: Mapping[str, object] = field(default_factory=dict)

    @property
    def speaks(self) -> bool:
        return "audio" in self.modalities


class EndpointProtocol:
    """The base of every protocol: the events common to OpenAI-style servers. Subclasses set ``per_unit`` and
    override what differs."""

    name = "protocol"
    per_unit = False

    def url(self, url: str) -> str:
        """The URL to connect to, from the one the user gave (as given, by default)."""
        return url

    def opening(self, instructions: str | None, tools: list[Mapping[str, object]],
                output: SessionOutput = SessionOutput()) -> list[dict]:
        """The events sent once connected: the session's settings (instructions, tools, PCM16 16 kHz input, the
        output modalities; OpenAI's vocabulary has no reference voice and no ``extra_body``, so neither is sent)."""
        return [SessionUpdate.declaring(instructions, tools, modalities=output.modalities).to_json()]

    def frame(self, samples: np.ndarray) -> list[dict]:
        """The events carrying one frame of audio (16 kHz mono float32)."""
        return [AudioAppend.of_samples(samples).to_json()]

    def turn_ended(self) -> list[dict]:
        """The events sent when the user's turn ends (its last frame sent); none by default."""
        return []

    def input_ended(self) -> list[dict]:
        """The events sent after the session's last frame."""
        return []

    #: Whether the server answers the closing events with ``session.closed`` (the client waits for it, or for the
    #: socket's close, up to ``model.close_timeout_s``); False: the client closes the socket after sending them.
    awaits_closed = False

    def closing(self) -> list[dict]:
        """The events that end the session once it has all it measures (none by default: the client closes the
        socket, as OpenAI Realtime GA clients do)."""
        return []

    def answer(self, call_id: str, output: str) -> list[dict]:
        """The answer to the server's function call ``call_id``."""
        return [FunctionCallOutput(call_id, output).to_json()]

    def played(self, played_ms: float, response_id: str | None) -> list[dict]:
        """The events telling how much of the assistant's speech the client has played; none by default."""
        return []

    #: Per-unit protocols: whether the server sends no ``response.listen`` for a unit decided while its reply's speech
    #: is still being made (vLLM-Omni). Then, once every unit's audio was sent before the reply ended and the server
    #: has said nothing for ``model.quiet_s``, the units still undecided were decided listen (``ListenNotSent``).
    listens_unsent_while_speaking = False

    def continues_speech(self, event, speech_has_text: bool) -> bool:
        """Whether ``event`` is the next unit's speech in a reply that sends no decision for it (per-unit protocols):
        False by default, where every unit gets ``response.listen`` or ``response.speak``.
        ``speech_has_text``: the unit the reply speaks in now already has its text."""
        return False

    def describe(self) -> dict:
        return {"name": self.name, "per_unit": self.per_unit}
