"""Sessions: the recorded conversations a run replays.

``manifest``: the manifest format (one JSON line per session: audio file, turns, tool schemas, expected calls) and
its types (``Session``, ``Turn``, ``Word``); ``audio``: reading and resampling session audio and cutting it into
chunks; ``tasks``: a task config's sessions and tool executor (``ManifestTask``).
"""
