"""vLLM-Omni's full-duplex contract (``WS /v1/realtime?duplex=1``): the protocol of ``ticktock serve`` and of
vLLM-Omni's MiniCPM-o 4.5 deployment.

The duplex contract is asked for with ``duplex=1`` in the URL's query: added when the URL given has no ``duplex``
key, so ``model.url=ws://host:8099/v1/realtime`` needs no quoting on the command line. The server decides every 1000 ms unit itself (``response.listen`` / ``response.speak``), so every unit's response
time is measured. What the events mean there, and so what the client sends:

- ``input_audio_buffer.commit`` is a *turn* commit (the server answers ``input_audio_buffer.committed`` and may
  start a response; the session stays open), so the client never sends one: the duplex model decides every unit
  itself, and a commit would change what it is asked. The audio is sent in whole units, so the last unit closes by
  itself.
- The session ends only on ``session.close`` (answered ``session.closed``, then the socket closes), on the socket's
  close (vLLM-Omni keeps the session for a resume), or when idle for the server's idle timeout. The client sends
  ``session.close`` once every unit is decided and the reply in flight has ended (``model.grace_s``), and waits for
  ``session.closed`` or the socket's close (``model.close_timeout_s``).
- ``playback.ack`` tells how much of the speech the client has played (the server keeps its history honest).
- The session's settings are those of vLLM-Omni's own client preset for MiniCPM-o 4.5
  (``vllm_omni/clients/minicpmo_4_5.py``): ``overlap_policy: listen_only``, ``playback_commit_policy: ack_only``,
  ``extra_body: {"auto_response": true, "force_listen_count": 0}``, plus the user's ``model.extra_body`` over them.
  ``auto_response`` matters: without it vLLM-Omni runs the session turn by turn and answers every silent append at
  once with ``response.listen`` (reason ``silence_or_noise``), which is not a unit's decision. The session also asks
  for ``temperature: 0.0``, the live run's greedy decoding (``ticktock.endpoints.run.check_sampling``): a MiniCPM-o
  4.5 session that names no temperature samples at 0.7 (top-k 20, top-p 0.8), so the same session would not decide
  the same twice. With audio among the
  output modalities the session carries a reference voice (``ref_audio``, a data URI): vLLM-Omni's MiniCPM-o 4.5
  refuses audio output without one (``ref_audio_required``).

    >>> protocol = VllmOmniDuplex()
    >>> protocol.url("ws://127.0.0.1:8099/v1/realtime"), protocol.url("ws://h/v1/realtime?duplex=true&model=m")
    ('ws://127.0.0.1:8099/v1/realtime?duplex=1', 'ws://h/v1/realtime?duplex=true&model=m')
    >>> protocol.per_unit, protocol.input_ended(), [e["type"] for e in protocol.closing()]
    (True, [], ['session.close'])
    >>> protocol.played(1200.0, "resp_1")[0]["played_ms"]
    1200.0
    >>> update = protocol.opening(None, [], SessionOutput(("text",), extra_body={"force_listen_count": 3}))[0]
    >>> update["session"]["output_modalities"], update["session"]["extra_body"], update["session"]["temperature"]
    (['text'], {'auto_response': True, 'force_listen_count': 3}, 0.0)
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from ticktock.endpoints.protocol import EndpointProtocol, SessionOutput
from ticktock.wire import PlaybackAck, SessionClose, SessionUpdate, TextDelta

#: vLLM-Omni's client preset for MiniCPM-o 4.5 (``create_duplex_session_config``), with ``auto_response`` as its
#: ``SessionConfig`` sends it: the session keys, and the ``extra_body`` under the user's own.
PRESET_SESSION = {"overlap_policy": "listen_only", "playback_commit_policy": "ack_only"}
PRESET_EXTRA_BODY = {"auto_response": True, "force_listen_count": 0}
#: The session's sampling: greedy, the only sampling a live run has.
GREEDY_SESSION = {"temperature": 0.0}


class VllmOmniDuplex(EndpointProtocol):
    name = "vllm_omni_duplex"
    per_unit = True
    #: ``model_channel.py`` (0.30.0) sends no ``response.listen`` while the reply's speech is being made.
    listens_unsent_while_speaking = True

    def continues_speech(self, event, speech_has_text: bool) -> bool:
        """vLLM-Omni sends ``response.speak`` once per reply (``realtime_events.py``, 0.30.0): a unit the reply goes on
        speaking in gets no decision; its text comes as the next non-empty transcript (or text) delta of the reply,
        after the speech of the unit before (each unit's first audio chunk carries that unit's text, later chunks an
        empty transcript). So a non-empty text delta once the current unit has its text decides the next unit:
        speak. A unit that says nothing while the reply goes on sends nothing at all, and cannot be told apart.

        >>> from ticktock.wire import TranscriptDelta
        >>> protocol = VllmOmniDuplex()
        >>> protocol.continues_speech(TranscriptDelta("r1", "i1", " more"), True)
        True
        >>> protocol.continues_speech(TranscriptDelta("r1", "i1", ""), True), protocol.continues_speech(
        ...     TranscriptDelta("r1", "i1", " first"), False)
        (False, False)
        """
        return isinstance(event, TextDelta) and bool(event.text.strip()) and speech_has_text

    def url(self, url: str) -> str:
        parts = urlsplit(url)
        if any(key == "duplex" for key, _ in parse_qsl(parts.query, keep_blank_values=True)):
            return url
        query = f"{parts.query}&duplex=1" if parts.query else "duplex=1"
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))

    awaits_closed = True

    def opening(self, instructions: str | None, tools: list[Mapping[str, object]],
                output: SessionOutput = SessionOutput()) -> list[dict]:
        extra: dict[str, object] = {**PRESET_SESSION, **GREEDY_SESSION, "modalities": list(output.modalities),
                                    "extra_body": {**PRESET_EXTRA_BODY, **dict(output.extra_body)}}
        if output.speaks and output.ref_audio is not None:
            extra["ref_audio"] = output.ref_audio
        return [SessionUpdate.declaring(instructions, tools, modalities=output.modalities, extra=extra).to_json()]

    def closing(self) -> list[dict]:
        return [SessionClose().to_json()]

    def played(self, played_ms: float, response_id: str | None) -> list[dict]:
        return [PlaybackAck(round(played_ms, 1), response_id=response_id).to_json()]
