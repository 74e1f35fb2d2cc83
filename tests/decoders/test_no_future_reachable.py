"""Nothing a decoder is handed holds audio that has not arrived yet.

A decoder gets an ``IdleWindow`` before a chunk's audio arrives and a ``ChunkStep`` after it. Everything reachable from
them (attributes, private ones included, slots, containers, closures, bound methods, generators: the garbage
collector's referents of every object, short of modules, classes and functions' globals) is walked, in a real
replay, looking for the samples of the future: from chunk 2 on the session's audio is a marker value that no
model weight or past sample holds. The walk stops at what deliberate introspection alone reaches (module globals,
the interpreter's stack frames and the garbage collector's lists): that is ``ticktock certify``'s job
(``tests/conformance/test_certify_peeking.py``).
"""

from __future__ import annotations

import gc
import types

import numpy as np

from ticktock.decoders.ar import ARDecoder
from ticktock.sessions.audio import SAMPLE_RATE, load_audio
from ticktock.sessions.manifest import load_manifest

from helpers import replay

MARKER = np.float32(0.4375)  # exact in float32; never a sample of the helpers' audio, nor a weight of the fixture
MARKED_FROM_CHUNK = 2
NOT_FOLLOWED = (types.ModuleType, type, types.FrameType)


def holds_marker(obj) -> bool:
    """A numpy array or CPU tensor with at least 16 samples equal to ``MARKER``."""
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
        return int(np.count_nonzero(obj == MARKER)) >= 16
    if type(obj).__module__.startswith("torch") and hasattr(obj, "is_floating_point"):
        try:
            if obj.is_floating_point() and obj.device.type == "cpu":
                return int((obj.detach() == float(MARKER)).sum()) >= 16
        except (RuntimeError, TypeError):
            return False
    return False


def referents(obj) -> list:
    """What the walk follows from ``obj``: a function's closure and defaults (not its globals), else everything the
    garbage collector knows ``obj`` refers to."""
    if isinstance(obj, types.FunctionType):
        cells = [c.cell_contents for c in obj.__closure__ or () if _filled(c)]
        return [*cells, obj.__defaults__, obj.__kwdefaults__]
    return gc.get_referents(obj)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def path_to_future(root, root_name: str, forbidden=()) -> str | None:
    """The attribute path from ``root`` to an object holding the marker (or one of ``forbidden``), or None."""
    seen, queue = {id(root)}, [(root, root_name)]
    forbidden_ids = {id(f) for f in forbidden}
    while queue:
        obj, path = queue.pop()
        if holds_marker(obj) or id(obj) in forbidden_ids:
            return path
        if isinstance(obj, NOT_FOLLOWED) and obj is not root:
            continue
        for child in referents(obj):
            if child is None or id(child) in seen or isinstance(child, (str, bytes, int, float)):
                continue
            seen.add(id(child))
            queue.append((child, f"{path} -> {type(child).__name__}"))
    return None


class Inspector(ARDecoder):
    """AR that walks what it is handed: the idle window of chunk ``MARKED_FROM_CHUNK`` as it opens, the post-audio
    step of the chunk before it."""

    def __init__(self, audio):
        super().__init__()
        self.audio, self.found = audio, {}

    def idle(self, window) -> None:
        if window.chunk_index == MARKED_FROM_CHUNK:
            self.found["idle window"] = path_to_future(window, "window", forbidden=[self.audio])
            self.found["arrived"] = window.arrived_audio()
        super().idle(window)

    def decode_chunk(self, step) -> None:
        if step.chunk_index == MARKED_FROM_CHUNK - 1:
            self.found["chunk step"] = path_to_future(step, "step", forbidden=[self.audio])
        super().decode_chunk(step)


def test_neither_the_idle_window_nor_the_chunk_step_reaches_audio_that_has_not_arrived(fixture_adapter,
                                                                                     small_manifest):
    session = load_manifest(small_manifest)[0]
    audio = load_audio(session.audio_path)
    span = session.chunk_spans()[MARKED_FROM_CHUNK]
    audio[int(span.start_s * SAMPLE_RATE):] = MARKER
    inspector = Inspector(audio)
    replay(fixture_adapter, session, inspector, max_chunks=MARKED_FROM_CHUNK + 1, audio=audio)
    assert inspector.found.keys() == {"idle window", "arrived", "chunk step"}
    assert inspector.found["chunk step"] is None
    assert inspector.found["idle window"] is None
    assert np.all(inspector.found["arrived"] == MARKER)  # the marked samples that had arrived: the walk can see them


def test_the_walk_finds_the_future_where_it_is():
    """The walk itself: a future held in a private field, a closure or a slice view is found."""
    future = np.full(100, MARKER, dtype=np.float32)

    class Holder:
        def __init__(self):
            self._hidden = {"views": [future[10:]]}

    def reader():
        return future

    assert path_to_future(Holder(), "holder") is not None
    assert path_to_future(reader, "reader") is not None
    assert path_to_future(types.SimpleNamespace(read=reader), "ns") is not None
    assert path_to_future(Holder(), "holder", forbidden=[]) is not None
    assert path_to_future(types.SimpleNamespace(x=np.zeros(100, dtype=np.float32)), "ns") is None
