"""Number options of the corpus and training commands (``synth``, ``augment``, ``convert``, ``train``): checked
as argparse parses them, before any work, and refused in one line that names the option, the value and the
allowed range (argparse adds the option: ``error: argument --hidden: expected a whole number from 8 to 8192
(a multiple of 8), got '0'``).

Example::

    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="train")
    >>> _ = parser.add_argument("--lr", type=real_number(0.0, 1.0, above=True), default=1e-3)
    >>> parser.parse_args(["--lr", "0.002"]).lr
    0.002
    >>> real_number(0.0, 1.0, above=True)("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a finite number > 0 and <= 1, got 'nan'
    >>> whole_number(8, 8192, multiple=8)("12")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a whole number from 8 to 8192 (a multiple of 8), got '12'
"""

from __future__ import annotations

import argparse
import math
from typing import Callable


def whole_range(low: int, high: int | None, multiple: int = 1) -> str:
    """The words for a whole-number range: ``whole_range(1, None) == "a whole number >= 1"``."""
    span = f">= {low}" if high is None else f"from {low} to {high}"
    return f"a whole number {span}" + (f" (a multiple of {multiple})" if multiple > 1 else "")


def whole_number(low: int, high: int | None = None, multiple: int = 1) -> Callable[[str], int]:
    """An argparse ``type``: a whole number in ``[low, high]`` (no upper end when ``high`` is None), a multiple
    of ``multiple``.

    >>> whole_number(1)("3"), whole_number(0, 10)("10")
    (3, 10)
    >>> whole_number(1)("-5")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a whole number >= 1, got '-5'
    """

    def accepts(value: int) -> bool:
        return value >= low and (high is None or value <= high) and not value % multiple

    return _argument_type("whole number", int, accepts, whole_range(low, high, multiple))


def real_range(low: float, high: float | None, above: bool = False) -> str:
    """The words for a range of finite numbers: ``real_range(0, 60) == "a finite number from 0 to 60"``."""
    if high is None:
        return f"a finite number {'>' if above else '>='} {low:g}"
    if above:
        return f"a finite number > {low:g} and <= {high:g}"
    return f"a finite number from {low:g} to {high:g}"


def real_number(low: float, high: float | None = None, *, above: bool = False) -> Callable[[str], float]:
    """An argparse ``type``: a finite number in ``[low, high]`` (``(low, high]`` when ``above``; no upper end when
    ``high`` is None). NaN and infinities are refused.

    >>> real_number(0.0)("1e3"), real_number(0.0, 60.0)("0")
    (1000.0, 0.0)
    >>> real_number(0.0)("inf")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a finite number >= 0, got 'inf'
    """

    def accepts(value: float) -> bool:
        return math.isfinite(value) and (value > low if above else value >= low) and (high is None or value <= high)

    return _argument_type("finite number", float, accepts, real_range(low, high, above))


def _argument_type(name: str, convert: Callable[[str], object], accepts: Callable, words: str) -> Callable[[str], object]:
    """An argparse ``type`` named ``name``: ``convert(text)`` if it converts and ``accepts`` the value, else an
    ``ArgumentTypeError`` saying ``expected <words>, got <text>``."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}") from None
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"expected {words}, got {text!r}")
        return value

    parse.__name__ = name
    return parse
