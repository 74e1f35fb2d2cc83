"""Modeled clock: each forward is charged from a measured (or derived) cost profile.

A profile is a YAML file::

    name: qwen3-8b-a100-bf16-derived
    model: 8B dense decoder (Qwen3-8B backbone), bf16, batch 1
    device: NVIDIA A100 80GB
    provenance: "how the numbers were obtained (measured by `ticktock calibrate` / derived from ...)"
    encode_ms: 12.0                       # audio front-end, one chunk
    query_tokens:   [1, 4, 16, 64]        # grid rows
    context_tokens: [0, 2048, 8192]       # grid columns
    forward_ms:                           # forward_ms[i][j] = cost of query_tokens[i] at context_tokens[j]
      - [20.1, 20.9, 23.0]
      - ...

Costs between grid points are bilinear; beyond the grid they extend linearly along the last segment.

Example::

    >>> p = CostProfile("p", [1, 11], [0, 1000], [[10.0, 12.0], [15.0, 17.0]], encode_ms=3.0)
    >>> p.forward_ms(6, 500)
    13.5
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from ticktock.clocks.base import Clock, Stopwatch


class ProfileError(ValueError):
    """A cost profile file is missing or malformed (the message names the file and field)."""


def _interp(grid: list[float], x: float) -> tuple[int, float]:
    """Segment index i and weight w so that x = (1-w)*grid[i] + w*grid[i+1] (w may leave [0,1])."""
    if len(grid) == 1:
        return 0, 0.0
    i = min(max(bisect.bisect_right(grid, x) - 1, 0), len(grid) - 2)
    return i, (x - grid[i]) / (grid[i + 1] - grid[i])


@dataclass
class CostProfile:
    name: str
    query_tokens: list[int]
    context_tokens: list[int]
    forward_table: list[list[float]]
    encode_ms: float = 0.0
    model: str = ""
    device: str = ""
    provenance: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        for axis, values in (("query_tokens", self.query_tokens), ("context_tokens", self.context_tokens)):
            if not values or any(b <= a for a, b in zip(values, values[1:])):
                raise ProfileError(f"profile {self.name}: '{axis}' must be a non-empty increasing list")
        rows = len(self.query_tokens)
        if len(self.forward_table) != rows or any(len(r) != len(self.context_tokens) for r in self.forward_table):
            raise ProfileError(
                f"profile {self.name}: 'forward_ms' must be {rows} rows of {len(self.context_tokens)} values"
            )

    def forward_ms(self, query_tokens: int, context_tokens: int) -> float:
        i, wi = _interp(self.query_tokens, query_tokens)
        j, wj = _interp(self.context_tokens, context_tokens)
        table = self.forward_table

        def at(r: int, c: int) -> float:
            return table[min(r, len(table) - 1)][min(c, len(table[0]) - 1)]

        low = (1 - wj) * at(i, j) + wj * at(i, j + 1)
        high = (1 - wj) * at(i + 1, j) + wj * at(i + 1, j + 1)
        return max(0.0, (1 - wi) * low + wi * high)

    @staticmethod
    def constant(forward_ms: float, encode_ms: float = 0.0) -> "CostProfile":
        return CostProfile("constant", [1], [0], [[forward_ms]], encode_ms=encode_ms, provenance="constant (tests)")

    @staticmethod
    def load(path: str | Path) -> "CostProfile":
        import yaml

        path = Path(path)
        if not path.is_file():
            raise ProfileError(f"{path}: cost profile not found")
        data = yaml.safe_load(path.read_text())
        if not isinstance(data, dict):
            raise ProfileError(f"{path}: expected a mapping")
        try:
            return CostProfile(
                name=str(data.get("name", path.stem)),
                query_tokens=[int(v) for v in data["query_tokens"]],
                context_tokens=[int(v) for v in data["context_tokens"]],
                forward_table=[[float(v) for v in row] for row in data["forward_ms"]],
                encode_ms=float(data.get("encode_ms", 0.0)),
                model=str(data.get("model", "")),
                device=str(data.get("device", "")),
                provenance=str(data.get("provenance", "")),
                extra={k: v for k, v in data.items() if k not in _KNOWN},
            )
        except KeyError as err:
            raise ProfileError(f"{path}: field {err.args[0]!r} missing") from None
        except (TypeError, ValueError) as err:
            raise ProfileError(f"{path}: {err}") from None

    def to_yaml(self) -> str:
        import yaml

        data = {
            "name": self.name,
            "model": self.model,
            "device": self.device,
            "provenance": self.provenance,
            "encode_ms": round(self.encode_ms, 4),
            "query_tokens": self.query_tokens,
            "context_tokens": self.context_tokens,
            "forward_ms": [[round(v, 4) for v in row] for row in self.forward_table],
            **self.extra,
        }
        return yaml.safe_dump(data, sort_keys=False, width=120, default_flow_style=None)


_KNOWN = {"name", "model", "device", "provenance", "encode_ms", "query_tokens", "context_tokens", "forward_ms"}


class ModeledStopwatch(Stopwatch):
    def __init__(self, profile: CostProfile):
        self.profile = profile
        self.total = 0.0

    def elapsed_ms(self) -> float:
        return self.total

    def charge_forward(self, query_tokens: int, context_tokens: int, wall_ms: float) -> float:
        cost = self.profile.forward_ms(query_tokens, context_tokens)
        self.total += cost
        return cost

    def charge_encode(self, wall_ms: float) -> float:
        self.total += self.profile.encode_ms
        return self.profile.encode_ms


class ModeledClock(Clock):
    """Charges each forward from ``profile`` (a CostProfile or a path to its YAML)."""

    name = "modeled"

    def __init__(self, profile: CostProfile | str | Path, synchronize=None):
        self.profile = profile if isinstance(profile, CostProfile) else CostProfile.load(profile)

    def stopwatch(self) -> ModeledStopwatch:
        return ModeledStopwatch(self.profile)

    def describe(self) -> dict:
        p = self.profile
        return {"name": self.name, "profile": p.name, "profile_model": p.model, "profile_device": p.device,
                "profile_provenance": p.provenance}
