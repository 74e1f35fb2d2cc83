"""The OpenAI Realtime GA turn-based vocabulary (``WS /v1/realtime``): GPT-Realtime, Qwen-Omni-Realtime, vLLM-Omni
and ``ticktock serve`` without ``duplex=1``.

The client commits each user turn where the session's manifest says it ends (``input_audio_buffer.commit``) and asks
for the answer (``response.create``); the server says nothing per unit, so response times are measured per reply
(``ticktock.endpoints.measure``): from the end of the unit in which a reply's output arrived, and a reply's onset from
the commit of the turn it answers. Here a commit is a turn commit and ``response.create`` asks for the answer, as GA
servers take them; the GA vocabulary has no ``session.close``, so the client ends a session by closing the socket,
once the input is done and the server has been quiet for ``model.quiet_s`` with no reply open.

    >>> [e["type"] for e in OpenAIRealtime().turn_ended()]
    ['input_audio_buffer.commit', 'response.create']
"""

from __future__ import annotations

from ticktock.endpoints.protocol import EndpointProtocol
from ticktock.wire import AudioCommit, ResponseCreate


class OpenAIRealtime(EndpointProtocol):
    name = "openai_realtime"
    per_unit = False

    def turn_ended(self) -> list[dict]:
        return [AudioCommit().to_json(), ResponseCreate().to_json()]
