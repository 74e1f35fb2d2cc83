"""Talkers: the speech-output side of a full-duplex model (``talker=none|espeak|piper|modeled``).

``base`` holds the contract (``Talker``; its cost, ``TalkerCost``, is in ``ticktock.clocks.talker_cost``); the
talkers are one module each; ``calibration`` measures one. What the user hears (when each piece plays, and the stalls
inside a reply) is the playback model of the results, ``ticktock.results.playback``.
"""
