"""Live endpoints: TickTock-Bench replayed into a running server in real time (``model=endpoint``).

``endpoint`` (where the server is and the options), ``protocol`` (the contract of a wire protocol, a plug-in group:
``vllm_omni_duplex``, ``openai_realtime``), ``client`` (one session held live: audio frames on a monotonic schedule,
every server event stamped on the same clock), ``measure`` (a held session into the rows of the ordinary result
tables), ``run`` (a live run: sessions, N at once, into an ordinary run folder). docs/endpoints.md is the user's page.
"""
