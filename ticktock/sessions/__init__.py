"""Sessions: the recorded conversations a run replays.

``manifest``: the manifest format (one JSON line per session: audio file, turns, tool schemas, expected calls) and
its types (``Session``, ``Turn``, ``Word``); ``audio``: reading and resampling session audio and cutting it into
chunks; ``tasks``: a task config's sessions and tool executor (``ManifestTask``); ``dataset_rows``: sessions as the
typed rows of a Hugging Face dataset; ``dataset_task``: replaying straight from such a dataset (``DatasetTask``,
``task=hf``); ``hub``: what names a Hub dataset, and ``datasets`` kept quiet.
"""
