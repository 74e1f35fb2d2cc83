"""``ticktock serve``: TickTock's models and decoders behind the full-duplex serving contract
(``WS /v1/realtime?duplex=1``, vLLM-Omni's duplex vocabulary), in real time, with a page to talk to at ``/``.

``live`` is a session's live audio and clock (the replay engine's audio source and clock when served), ``session``
one client's session (the replay engine on its live audio, in a thread), ``server`` the aiohttp application (it
reads and sends the typed events of ``ticktock.wire``, which the live client shares), ``static/`` the page.
docs/serving.md is the user's guide."""
