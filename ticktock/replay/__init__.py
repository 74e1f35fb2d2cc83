"""The replay machinery: how recorded sessions are streamed into a model, chunk by chunk, under a clock.

=====================  ================================================================================
``runner``             a run: options checked, Hydra config composed, sessions replayed, results written
``engine``             the one replay loop: each chunk's audio, its post-audio work, then the idle window
``session_state``      one session's replay state: history, the chunk's inputs, forward log, counters
``timeline``           when each chunk's audio arrives and when its deadline falls
``device``             one device shared by several sessions (``concurrency.sessions``)
``concurrency``        the sessions' lanes on a shared device
``shards``             a run split over machines (``shard.index`` / ``shard.count``)
``resources``          the config resolvers (``${ticktock_resource:...}``, ``${ticktock_shard:...}``)
=====================  ================================================================================
"""
