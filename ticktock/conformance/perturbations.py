"""The ways certify's no-peeking check replaces a session's audio after a cut (``replays.cut_audio``).

A decoder that reads audio before it arrives, by whatever means, acts on what it read: replayed with the future
replaced, what it did before the cut changes, unless the replacement happens to look like the real audio to the
decoder's reading. One replacement is never enough (noise is loud like speech, silence is quiet like a pause), so
the check replays the future perturbed in each of these ways and compares each replay with the real one:

==========  =====================================================================================
name        the audio from the cut on
==========  =====================================================================================
silence     zeros
noise       white noise (standard deviation 0.05, about -26 dBFS)
other       another session's audio at the same time (the session's own, reversed, when it is alone)
shifted     the session's own audio, SHIFT_S later (what was heard SHIFT_S before; zeros before its start)
==========  =====================================================================================

Example::

    >>> import numpy as np
    >>> audio = np.arange(8, dtype=np.float32)
    >>> perturbed(audio, first=4, kind="silence", seed=0, other=None).tolist()
    [0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0]
    >>> perturbed(audio, first=4, kind="shifted", seed=0, other=None, shift=3).tolist()
    [0.0, 1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 4.0]
    >>> perturbed(audio, first=4, kind="other", seed=0, other=np.full(5, 9, np.float32)).tolist()
    [0.0, 1.0, 2.0, 3.0, 9.0, 9.0, 9.0, 9.0]
"""

from __future__ import annotations

PERTURBATIONS = ("silence", "noise", "other", "shifted")
SHIFT_S = 0.5
NOISE_STD = 0.05

DESCRIPTIONS = {
    "silence": "silence",
    "noise": "noise",
    "other": "another session's audio",
    "shifted": f"its own audio {SHIFT_S:g} s later",
}


def perturbations_named(names: str) -> tuple[str, ...]:
    """The perturbations a comma-separated list names.

    >>> perturbations_named("noise, silence")
    ('noise', 'silence')
    >>> perturbations_named("loud")
    Traceback (most recent call last):
    ...
    ValueError: unknown perturbation 'loud' (known: silence, noise, other, shifted)
    """
    chosen = tuple(n.strip() for n in names.split(",") if n.strip())
    for name in chosen:
        if name not in PERTURBATIONS:
            raise ValueError(f"unknown perturbation {name!r} (known: {', '.join(PERTURBATIONS)})")
    if not chosen:
        raise ValueError(f"no perturbation named (known: {', '.join(PERTURBATIONS)})")
    return chosen


def perturbed(audio, first: int, kind: str, seed, other, shift: int | None = None):
    """A copy of ``audio`` (float32 samples) with the samples from ``first`` on replaced in the way ``kind`` names;
    ``seed``: the noise's; ``other``: another session's samples (None: this session's own, reversed); ``shift``: the
    delay of ``shifted`` in samples (default ``SHIFT_S`` at 16 kHz)."""
    import numpy as np

    audio = np.array(audio, dtype=np.float32)
    first = max(0, min(first, len(audio)))
    count = len(audio) - first
    if kind == "silence":
        future = np.zeros(count, dtype=np.float32)
    elif kind == "noise":
        future = np.clip(np.random.default_rng(seed).normal(0.0, NOISE_STD, count), -1.0, 1.0)
    elif kind == "other":
        source = audio[::-1].copy() if other is None or not len(other) else np.asarray(other, dtype=np.float32)
        future = np.resize(np.roll(source, -first), count)  # the other's samples from the same time on, repeated
    elif kind == "shifted":
        delay = int(SHIFT_S * 16_000) if shift is None else shift
        padded = np.concatenate([np.zeros(delay, dtype=np.float32), audio])
        future = padded[first: first + count]
    else:
        raise ValueError(f"unknown perturbation {kind!r} (known: {', '.join(PERTURBATIONS)})")
    audio[first:] = np.asarray(future, dtype=np.float32)
    return audio
