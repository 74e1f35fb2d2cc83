"""What certify sees of a replay beyond its result tables: every forward the model really ran, and the model's KV
cache after each chunk's post-audio work.

A certify replay is an ordinary run (``ticktock.replay.runner.run``) whose model and decoder configs are wrapped
(``observed_config``): the run builds the model's own adapter and the decoder's own object from the wrapped
configs, then

- the adapter is instrumented in place (``instrument``): every call of its ``forward`` (and each call inside
  ``forward_many``) is recorded with its query length, the cache length before it and a digest of what it was fed,
  before the model runs it; replicas (``concurrency.sessions``) are instrumented too. The prompt prefill inside
  ``start_session`` is the adapter's own work, not a decoder's, and is not recorded;
- the decoder is observed in place (``observe_decoder``): while it works on a chunk (``decode_chunk``, ``idle``)
  the record knows which session, chunk and kind of work each forward belongs to, and after ``decode_chunk`` the
  adapter's KV cache is captured (``CacheImages``);
- every read of a recording's audio (``ticktock.replay.audio_source.RecordedAudio.chunk``, while
  ``audio_reads_watched``) made while a decoder works is checked against what has arrived by then: the whole chunk
  in ``decode_chunk``, the part the idle window's arriving audio hands out in ``idle``. A read that ends later is
  an ``EarlyRead``, whatever the decoder does with it (the engine's own reads, outside the decoder's work, are the
  replay's).

Nothing here changes what the model computes or what the decoder decides: both keep their own objects and
methods (each instrumented object's class becomes a subclass of its own that records, then calls the original),
the decoder is called with the engine's own step and window.

Example (a run of the fixture model, observed)::

    recorder = Recorder()
    cfg = observed_config(compose_run("pld", "fixture", 1, ["limit.chunks=4"]), recorder)
    run(cfg, Path("results/certify/pld"))
    recorder.calls[0]            # ForwardCall(session_id='fdb_v3-eval-0-0000', chunk_index=0, work='post_audio', ...)
    recorder.caches.images("fdb_v3-eval-0-0000")   # (chunk index, [(keys, values) per layer]) after each chunk
"""

from __future__ import annotations

import copy
import hashlib
import uuid
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterator

from omegaconf import DictConfig, OmegaConf, open_dict

POST_AUDIO_WORK = "post_audio"  # a decoder's decode_chunk: its forwards are logged in phase post_audio
IDLE_WORK = "idle"  # a decoder's idle window: its forwards are logged in phase draft or early_prefill

_RECORDERS: "weakref.WeakValueDictionary[str, Recorder]" = weakref.WeakValueDictionary()
_BUILT: dict = {}  # a model config (its YAML) -> the adapter built from it, replicated for each replay


@dataclass(frozen=True)
class ForwardCall:
    """One forward the model ran: for which session, chunk and kind of work (None: outside any decoder work),
    its query length, the cache length before it and a digest of its inputs (tokens, audio embeddings, tree)."""

    session_id: str | None
    chunk_index: int | None
    work: str | None
    query_tokens: int
    context_tokens: int
    inputs: str


@dataclass(frozen=True)
class EarlyRead:
    """A read of a session's audio, by a decoder at work on ``chunk_index`` (``work``: post_audio or idle), that
    ends at ``read_end_s`` into the session when only ``arrived_s`` had arrived."""

    session_id: str | None
    chunk_index: int
    work: str
    read_end_s: float
    arrived_s: float

    @property
    def ahead_s(self) -> float:
        return self.read_end_s - self.arrived_s


READ_SLACK_S = 1.0 / 16_000  # one sample: a read ending within it of the arrived audio is not early


class Recorder:
    """What one certify replay saw of its model: ``calls`` (every ``ForwardCall`` in order), ``caches`` (the
    KV cache after each chunk's post-audio work, when ``capture_caches``) and ``early_reads`` (every ``EarlyRead``
    of the session's audio). ``key`` names it in the wrapped configs."""

    def __init__(self, capture_caches: bool = True):
        self.key = uuid.uuid4().hex
        self.calls: list[ForwardCall] = []
        self.caches = CacheImages() if capture_caches else None
        self.early_reads: list[EarlyRead] = []
        self._work: dict[int, tuple[str | None, int, str]] = {}  # id(adapter) -> (session, chunk, work)
        self._arrival: dict[int, tuple] = {}  # id(greenlet) -> (session, chunk, work, seconds arrived by now)
        self._quiet = 0
        _RECORDERS[self.key] = self

    @contextmanager
    def arrival(self, session_id: str | None, chunk_index: int, work: str,
                arrived_s: Callable[[], float]) -> Iterator[None]:
        """Inside this block a decoder works on ``chunk_index``; ``arrived_s()`` is how much of the session's audio
        has arrived (seconds). Kept per greenlet: sessions sharing a device each run in their own."""
        from greenlet import getcurrent

        key = id(getcurrent())
        outer = self._arrival.get(key)
        self._arrival[key] = (session_id, chunk_index, work, arrived_s)
        try:
            yield
        finally:
            if outer is None:
                self._arrival.pop(key, None)
            else:
                self._arrival[key] = outer

    def audio_read(self, end_s: float) -> None:
        """A read of the session's audio up to ``end_s``: an ``EarlyRead`` when a decoder is at work and less had
        arrived."""
        from greenlet import getcurrent

        working = self._arrival.get(id(getcurrent()))
        if working is None:
            return
        session_id, chunk_index, work, arrived_s = working
        arrived = arrived_s()
        if end_s > arrived + READ_SLACK_S:
            self.early_reads.append(EarlyRead(session_id, chunk_index, work, end_s, arrived))

    @contextmanager
    def working(self, adapter, session_id: str | None, chunk_index: int, work: str):
        """Forwards of ``adapter`` inside this block belong to ``session_id``'s chunk ``chunk_index``, ``work``."""
        self._work[id(adapter)] = (session_id, chunk_index, work)
        try:
            yield
        finally:
            self._work.pop(id(adapter), None)

    @contextmanager
    def quiet(self):
        """Forwards inside this block are not recorded (the adapter's own prompt prefill; the forwards of a
        ``forward_many`` already recorded one by one)."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def forward_called(self, adapter, segments, tree, logits_from: int) -> None:
        if self._quiet:
            return
        session_id, chunk_index, work = self._work.get(id(adapter), (None, None, None))
        query = sum(adapter.segment_length(s) for s in segments)
        self.calls.append(ForwardCall(session_id, chunk_index, work, query, adapter.cache_length,
                                      inputs_digest(segments, tree, logits_from)))

    def calls_of(self, session_id: str) -> list[ForwardCall]:
        return [call for call in self.calls if call.session_id == session_id]

    def capture_cache(self, session_id: str, chunk_index: int, adapter) -> None:
        if self.caches is not None:
            self.caches.capture(session_id, chunk_index, adapter)


def inputs_digest(segments, tree, logits_from: int) -> str:
    """A SHA-1 of a forward's inputs: token ids, the exact bytes of embedding tensors, the tree, ``logits_from``.

    >>> inputs_digest([[1, 2]], None, 0) == inputs_digest([[1, 2]], None, 0) != inputs_digest([[1, 3]], None, 0)
    True
    """
    digest = hashlib.sha1(f"{getattr(tree, 'parents', None)}|{logits_from}".encode())
    for segment in segments:
        if hasattr(segment, "detach"):  # a tensor of audio embeddings
            digest.update(b"T" + segment.detach().float().cpu().contiguous().numpy().tobytes())
        else:
            digest.update(("S" + ",".join(str(x) for x in segment)).encode())
    return digest.hexdigest()


# ------------------------------------------------------------------------------------------- the KV cache


def kv_layers(adapter) -> list[tuple] | None:
    """The adapter's KV cache as ``[(keys, values)]`` per layer ([heads, positions, dim] each), or None for an
    adapter that keeps no ``transformers`` cache in ``adapter.cache`` (every ``HFUnitAdapter`` does)."""
    cache = getattr(adapter, "cache", None)
    layers = getattr(cache, "layers", None)
    if layers is None:
        return None
    return [(layer.keys[0], layer.values[0]) for layer in layers if getattr(layer, "keys", None) is not None]


class CacheImages:
    """The KV cache after each chunk, per session, stored without repeating what did not change.

    Each capture keeps only the positions after the longest prefix that is bit-for-bit the previous capture's
    (a chunk appends to the cache; only an eviction rewrites it), so a session costs about one cache of memory.
    ``images(session_id)`` rebuilds the captures in order. ``None`` images: the adapter has no readable cache.
    """

    def __init__(self):
        self._captures: dict[str, list[tuple[int, int, list | None]]] = {}  # (chunk, shared prefix, tails)
        self._last: dict[str, list | None] = {}

    def capture(self, session_id: str, chunk_index: int, adapter) -> None:
        layers = kv_layers(adapter)
        if layers is not None:
            layers = [(k.detach().float().cpu().clone(), v.detach().float().cpu().clone()) for k, v in layers]
        previous = self._last.get(session_id)
        shared = _shared_prefix(previous, layers)
        tails = None if layers is None else [(k[:, shared:], v[:, shared:]) for k, v in layers]
        self._captures.setdefault(session_id, []).append((chunk_index, shared, tails))
        self._last[session_id] = layers

    def sessions(self) -> list[str]:
        return list(self._captures)

    def images(self, session_id: str):
        """(chunk index, [(keys, values) per layer] or None) after each chunk of the session, in order."""
        import torch

        current = None
        for chunk_index, shared, tails in self._captures.get(session_id, []):
            if tails is not None:
                before = current or [(k[:, :0], v[:, :0]) for k, v in tails]  # shared is 0 after no cache
                current = [(torch.cat([k[:, :shared], tk], dim=1), torch.cat([v[:, :shared], tv], dim=1))
                           for (k, v), (tk, tv) in zip(before, tails)]
            else:
                current = None
            yield chunk_index, current


def _shared_prefix(previous, layers) -> int:
    """Positions at the start that are bit-for-bit equal in both captures (0 when either has no cache)."""
    if previous is None or layers is None or len(previous) != len(layers):
        return 0
    length = min(previous[0][0].shape[1], layers[0][0].shape[1])
    for (pk, pv), (k, v) in zip(previous, layers):
        if pk.shape[0] != k.shape[0] or pk.shape[2] != k.shape[2]:
            return 0
        differs = ((pk[:, :length] != k[:, :length]) | (pv[:, :length] != v[:, :length])).any(dim=2).any(dim=0)
        if differs.any():
            length = int(differs.nonzero()[0, 0])
    return length


# ------------------------------------------------------------------------------------ the observed objects


def instrument(adapter, recorder: Recorder):
    """Record every forward ``adapter`` (and each replica of it) runs into ``recorder``; returns the adapter.

    Its class becomes a subclass of its own that records each call and then runs the original method."""
    adapter.__class__ = _observed_class(type(adapter))
    adapter._certify_recorder = recorder
    return adapter


@lru_cache(maxsize=None)
def _observed_class(base: type) -> type:
    if getattr(base, "_certify_observed", False):
        return base

    class Observed(base):
        _certify_observed = True

        def start_session(self, system_prompt, tools):
            with self._certify_recorder.quiet():  # the prompt prefill: the adapter's own forward, never logged
                return super().start_session(system_prompt, tools)

        def forward(self, segments, tree=None, logits_from: int = 0):
            self._certify_recorder.forward_called(self, segments, tree, logits_from)
            return super().forward(segments, tree, logits_from)

        def forward_many(self, calls):
            for adapter, segments, tree, logits_from in calls:
                self._certify_recorder.forward_called(adapter, segments, tree, logits_from)
            with self._certify_recorder.quiet():
                return super().forward_many(calls)

        def replica(self):
            twin = super().replica()
            return twin if getattr(type(twin), "_certify_observed", False) else instrument(twin, self._certify_recorder)

    Observed.__name__ = Observed.__qualname__ = f"Observed{base.__name__}"
    return Observed


def observe_decoder(decoder, recorder: Recorder):
    """Let ``recorder`` follow ``decoder``'s work; returns the decoder, otherwise unchanged.

    Its class becomes a subclass of its own whose ``decode_chunk`` and ``idle`` tell the recorder which session,
    chunk and kind of work the forwards inside them belong to (then run the decoder's own), and whose
    ``decode_chunk`` then captures the KV cache. Its name, settings, ``propose``, ``describe`` ... are its own."""
    decoder.__class__ = _observed_decoder_class(type(decoder))
    decoder._certify_recorder = recorder
    decoder._certify_session = None
    return decoder


@lru_cache(maxsize=None)
def _observed_decoder_class(base: type) -> type:
    if getattr(base, "_certify_observed", False):
        return base

    class Observed(base):
        _certify_observed = True

        def start_session(self, session) -> None:
            self._certify_session, self._certify_spans = session.session_id, session.chunk_spans()
            super().start_session(session)

        def decode_chunk(self, step) -> None:
            recorder, index = self._certify_recorder, step.chunk_index
            end_s = self._certify_spans[index].end_s  # the chunk's audio has arrived, all of it
            with recorder.working(step.adapter, self._certify_session, index, POST_AUDIO_WORK), \
                    recorder.arrival(self._certify_session, index, POST_AUDIO_WORK, lambda: end_s):
                super().decode_chunk(step)
            recorder.capture_cache(self._certify_session, index, step.adapter)

        def idle(self, window) -> None:
            recorder, index = self._certify_recorder, window.chunk_index
            start_s = self._certify_spans[index].start_s  # and what the window's arriving audio has handed out
            with recorder.working(window.adapter, self._certify_session, index, IDLE_WORK), \
                    recorder.arrival(self._certify_session, index, IDLE_WORK,
                                     lambda: start_s + window.arrived_ms() / 1000.0):
                super().idle(window)

    Observed.__name__ = Observed.__qualname__ = f"Observed{base.__name__}"
    return Observed


@contextmanager
def audio_reads_watched(recorder: Recorder) -> Iterator[None]:
    """Inside this block every read of a recording's audio (``RecordedAudio.chunk``: the engine's, and any other
    made through the replay's audio source) is told to ``recorder`` (``Recorder.audio_read``) before it is made; the
    samples read are the recording's own."""
    from ticktock.replay.audio_source import RecordedAudio

    original = RecordedAudio.chunk

    def chunk(source, span):
        recorder.audio_read(span.end_s)
        return original(source, span)

    RecordedAudio.chunk = chunk
    try:
        yield
    finally:
        RecordedAudio.chunk = original


def observed_adapter(inner: DictConfig, recorder: str):
    """Hydra target of an observed model config: the model ``inner`` builds, instrumented (``instrument``).

    Certify replays one model many times (every setting, cut and perturbation): the model is built once per config
    and each replay gets a replica of it (``ModelAdapter.replica``: its own session state on the same weights, as
    sessions sharing a device get); an adapter without replicas is built afresh for every replay. Only the most
    recently built model is kept."""
    from ticktock.replay.config import build

    key = OmegaConf.to_yaml(inner)
    built = _BUILT.pop(key, None) or build(inner)
    _BUILT.clear()
    try:
        adapter = built.replica()
    except NotImplementedError:
        return instrument(built, _RECORDERS[recorder])  # no replicas: this replay's own build, the next builds again
    _BUILT[key] = built
    return instrument(adapter, _RECORDERS[recorder])


def observed_decoder(inner: DictConfig, recorder: str):
    """Hydra target of an observed decoder config: the decoder ``inner`` builds, observed (``observe_decoder``)."""
    from ticktock.replay.config import build

    return observe_decoder(build(inner), _RECORDERS[recorder])


def observed_config(cfg: DictConfig, recorder: Recorder) -> DictConfig:
    """A copy of the run config ``cfg`` whose model and decoder are observed by ``recorder``.

    >>> from ticktock.replay.config import compose_run
    >>> recorder = Recorder()
    >>> cfg = observed_config(compose_run("pld", "fixture", 1, []), recorder)
    >>> cfg.decoder.name, cfg.decoder.inner._target_, cfg.decoder.recorder == recorder.key
    ('pld', 'ticktock.decoders.pld.PromptLookupDecoder', True)
    """
    observed = copy.deepcopy(cfg)
    with open_dict(observed):
        for group, target in (("model", observed_adapter), ("decoder", observed_decoder)):
            inner = OmegaConf.to_container(cfg[group], resolve=True)
            observed[group] = {"_target_": f"{__name__}.{target.__name__}", "_recursive_": False,
                               "name": inner["name"], "inner": inner, "recorder": recorder.key}
    return observed
