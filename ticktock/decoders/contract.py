"""The decoder contract: what a decoding method does with a chunk, and how it is counted.

The engine gives a decoder two kinds of work:

(a) ``decode_chunk(step)``: post-audio work. The chunk's audio has arrived and is encoded
    (``step.inputs``); the decoder must commit the chunk's output tokens (decision, content, terminator)
    through ``step.verify`` / ``step.commit``, which record every target forward and its tokens.
(b) ``idle(window)``: optional work after a chunk is done and before the next chunk's audio arrives,
    within ``window.budget_ms``. Forwards made here are logged in phase ``draft`` against the next chunk.

Every decoder is a draft-and-verify loop; autoregressive decoding is the loop with empty drafts::

    prefix = step.inputs.segments()                 # [<|chunk_eos|> </unit> <unit>] + audio + tool text
    while not step.done:
        result = step.verify(prefix, self.propose(step))   # ONE target forward over prefix + draft tree
        self.observe(step, result)
        prefix = [[step.output[-1]]]                # the last committed token is fed next

``step.verify`` accepts, along the draft tree, each node whose token equals the token the selector commits
at its parent (greedy argmax, or the keyed sample; see ``selection.py``), commits the accepted tokens plus
the target's own next token, and compacts the KV cache to the accepted path. Cache convention: after a
chunk, the cache holds every committed token except the chunk's last one (fed with ``</unit>`` next).

Both are built by the session's replay state (``ticktock.replay.session_state``), which owns the history and the
chunk's inputs: a decoder reads ``step.history`` / ``step.inputs`` and never changes them. Everything
counted for a chunk goes through one channel, ``step.counters`` (``ChunkCounters``: forwards, draft tokens
offered and accepted, the audio-pass draft source, lookup hits, the idle window's use), which the
result rows read as they are. A decoder's settings are a frozen ``DecoderSettings`` dataclass, checked
in one place (``knob``), and ``describe()`` reports them.

Example (a decoder of one's own: AR whose drafts are the last committed token repeated)::

    >>> from dataclasses import dataclass
    >>> from ticktock.decoders.contract import Decoder, DecoderSettings, knob
    >>> from ticktock.decoders.trees import DraftTree
    >>> class Repeat(Decoder):
    ...     @dataclass(frozen=True)
    ...     class Settings(DecoderSettings):
    ...         length: int = knob(2, int, minimum=1)
    ...     def propose(self, step):
    ...         tree = DraftTree()
    ...         if step.output:
    ...             tree.add_chain([step.output[-1]] * self.settings.length)
    ...         return tree
    >>> Repeat(name="repeat", length=3).describe()
    {'name': 'repeat', 'early_prefill': False, 'prefill_every_ms': 200.0, 'length': 3}
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from ticktock.decoders.idle import IdleWindow
from ticktock.decoders.step import ChunkStep
from ticktock.decoders.trees import DraftTree, Verification
from ticktock.errors import ConfigError


class DecoderConfigError(ConfigError, ValueError):
    """A decoder setting is unknown or out of range; the message names the key, the value and what is allowed."""


def knob(default, kind: type, minimum: float | None = None, optional: bool = False, choices: tuple = (),
         maximum: float | None = None):
    """A decoder setting: a dataclass field with its type, bounds, null-ability and allowed values (a float is
    always finite)."""
    return field(default=default, metadata={"kind": kind, "minimum": minimum, "optional": optional, "choices": choices,
                                            "maximum": maximum})


@dataclass(frozen=True)
class DecoderSettings:
    """A decoder's settings: one frozen dataclass whose fields are the keys of its config file.

    Every field is declared with ``knob`` and checked here, in one place, when the settings are made;
    ``check`` adds rules between keys. A bad value is a ``DecoderConfigError`` naming the key.

    Example::

        >>> @dataclass(frozen=True)
        ... class Knobs(DecoderSettings):
        ...     width: int = knob(4, int, minimum=1)
        >>> Knobs.parse({"width": 2}).width
        2
        >>> Knobs.parse({"width": 0})
        Traceback (most recent call last):
        ...
        ticktock.decoders.contract.DecoderConfigError: decoder.width: must be an integer >= 1, got 0
        >>> Knobs.parse({"depth": 2})
        Traceback (most recent call last):
        ...
        ticktock.decoders.contract.DecoderConfigError: decoder.depth: unknown setting (known: early_prefill, prefill_every_ms, width)
    """

    # Every decoder's: early prefill of the next chunk's final audio embeddings in the idle window (beyond the
    # paper; only for an adapter whose front-end is causal below a chunk: ``ModelAdapter.causal_granularity_ms``).
    early_prefill: bool = knob(False, bool)
    prefill_every_ms: float = knob(200.0, float, minimum=1.0, maximum=60_000.0)  # feed what is final each time this
    #   much more arrived (at most a minute: longer than any chunk, it feeds nothing more)

    def __post_init__(self):
        for spec in fields(self):
            _check_knob(spec.name, getattr(self, spec.name), spec.metadata)
        self.check()

    def check(self) -> None:
        """Rules between keys (raise ``DecoderConfigError``); none by default."""

    @classmethod
    def parse(cls, values: dict) -> "DecoderSettings":
        known = [spec.name for spec in fields(cls)]
        for key in values:
            if key not in known:
                raise DecoderConfigError(f"decoder.{key}: unknown setting (known: {', '.join(known) or 'none'})")
        return cls(**values)


_KIND_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _check_knob(key: str, value, spec) -> None:
    kind, minimum, optional, choices = spec["kind"], spec["minimum"], spec["optional"], spec["choices"]
    maximum = spec.get("maximum")
    if value is None and optional:
        return
    bounds = f" >= {minimum}" if minimum is not None else ""
    if maximum is not None:
        bounds = f" from {minimum} to {maximum}" if minimum is not None else f" <= {maximum}"
    allowed = _KIND_NAMES[kind] + bounds + (" or null" if optional else "")
    if choices:
        allowed = "one of " + ", ".join(map(repr, choices))
    fits = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if kind is float:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    out_of_range = fits and ((minimum is not None and value < minimum) or (maximum is not None and value > maximum))
    if not fits or out_of_range or (choices and value not in choices):
        raise DecoderConfigError(f"decoder.{key}: must be {allowed}, got {value!r}")


class Decoder:
    """Base decoder: the draft-and-verify loop. Subclasses override ``propose`` / ``observe`` / ``idle``.

    ``lossless``: the decoder commits exactly the tokens AR commits (checked by the tables).
    ``Settings``: the decoder's settings class; the keyword arguments (a config file's keys) are parsed
    into ``self.settings`` and ``describe()`` reports them.
    """

    name = "decoder"
    lossless = True
    Settings: type[DecoderSettings] = DecoderSettings

    def __init__(self, name: str | None = None, **settings):
        if name is not None:
            self.name = name
        self.settings = self.Settings.parse(settings)

    def start_session(self, session) -> None:
        """Called before a session's first chunk (``session`` is a ticktock.sessions.manifest.Session)."""

    @property
    def silence_first(self) -> bool:
        """True when ``idle`` begins by drafting the next chunk as a whole chunk of silence (``IdleWindow.silence``).
        Where that silence costs an encoding (its front-end's state shapes it), the engine then encodes it in the same
        step as the chunk's audio, one step of two encodings, so that the window opens with it ready."""
        return False

    def decode_chunk(self, step: ChunkStep) -> None:
        prefix = step.inputs.segments()
        while not step.done:
            result = step.verify(prefix, self.propose(step))
            self.observe(step, result)
            prefix = [[step.output[-1]]]

    def propose(self, step: ChunkStep) -> DraftTree | None:
        """The draft for the next forward (None = a plain autoregressive step)."""
        return None

    def observe(self, step: ChunkStep, result: Verification) -> None:
        """Feedback after each verify forward (e.g. update n-gram pools)."""

    def idle(self, window: IdleWindow) -> None:
        """Optional work in the idle window. By default, with ``early_prefill``: feed the next chunk's embeddings
        into the cache as they become final (``IdleWindow.prefill_arrived``), every ``prefill_every_ms`` of audio."""
        if self.settings.early_prefill:
            window.prefill_arrived()
            window.follow_audio(self.settings.prefill_every_ms, window.prefill_arrived)

    def describe(self) -> dict:
        return {"name": self.name, **asdict(self.settings)}
