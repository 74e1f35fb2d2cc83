"""The ``vllm_omni_duplex`` protocol: vLLM-Omni's full-duplex contract, asked for with ``duplex=1``; the input ends
with one commit; the client acknowledges what it played. (A whole live run with it: ``test_live_run.py``.)"""

from __future__ import annotations

import json

import numpy as np

from ticktock.endpoints.vllm_omni_duplex import VllmOmniDuplex
from ticktock import wire


def test_the_url_asks_for_the_duplex_contract_unless_it_already_says():
    protocol = VllmOmniDuplex()
    assert protocol.url("ws://h:8091/v1/realtime") == "ws://h:8091/v1/realtime?duplex=1"
    assert protocol.url("wss://h/v1/realtime?model=m") == "wss://h/v1/realtime?model=m&duplex=1"
    assert protocol.url("ws://h/v1/realtime?duplex=0") == "ws://h/v1/realtime?duplex=0"


def test_its_events_are_what_the_server_parses():
    protocol = VllmOmniDuplex()
    events = [*protocol.opening("Be brief.", []), *protocol.frame(np.zeros(1600, dtype=np.float32)),
              *protocol.turn_ended(), *protocol.input_ended(), *protocol.played(250.0, "resp_1"), *protocol.closing()]
    parsed = [wire.parse_client_event(json.dumps(event)) for event in events]
    assert [type(event).__name__ for event in parsed] == ["SessionUpdate", "AudioAppend", "PlaybackAck", "SessionClose"]
    assert parsed[2].played_ms == 250.0 and protocol.per_unit and protocol.awaits_closed  # no commit: a turn commit
