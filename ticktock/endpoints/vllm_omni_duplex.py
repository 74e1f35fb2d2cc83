"""vLLM-Omni's full-duplex contract (``WS /v1/realtime?duplex=1``): the protocol of ``ticktock serve`` and of
vLLM-Omni's MiniCPM-o 4.5 deployment.

The duplex contract is asked for with ``duplex=1`` in the URL's query: added when the URL given has no ``duplex``
key, so ``model.url=ws://host:8099/v1/realtime`` needs no quoting on the command line. The server decides every 1000 ms unit itself (``response.listen`` / ``response.speak``), so every unit's response
time is measured. The client commits once, after the last frame (the end of the input: the server closes the last
partial unit and ends the session with ``session.closed`` once every unit is decided), and acknowledges the speech
it has played with ``playback.ack`` (the server keeps its history honest with it).

    >>> protocol = VllmOmniDuplex()
    >>> protocol.url("ws://127.0.0.1:8099/v1/realtime"), protocol.url("ws://h/v1/realtime?duplex=true&model=m")
    ('ws://127.0.0.1:8099/v1/realtime?duplex=1', 'ws://h/v1/realtime?duplex=true&model=m')
    >>> protocol.per_unit, [e["type"] for e in protocol.input_ended()], protocol.played(1200.0, "resp_1")[0]["played_ms"]
    (True, ['input_audio_buffer.commit'], 1200.0)
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit, urlunsplit

from ticktock.endpoints.protocol import EndpointProtocol
from ticktock.serve import client_events


class VllmOmniDuplex(EndpointProtocol):
    name = "vllm_omni_duplex"
    per_unit = True

    def url(self, url: str) -> str:
        parts = urlsplit(url)
        if any(key == "duplex" for key, _ in parse_qsl(parts.query, keep_blank_values=True)):
            return url
        query = f"{parts.query}&duplex=1" if parts.query else "duplex=1"
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))

    def input_ended(self) -> list[dict]:
        return [client_events.commit()]

    def played(self, played_ms: float, response_id: str | None) -> list[dict]:
        return [client_events.playback_ack(played_ms, response_id)]
