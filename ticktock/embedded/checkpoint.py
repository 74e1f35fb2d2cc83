"""Training checkpoints that hold data only: one safetensors file, its tensors the weights, optimizer moments and
random states, everything else (options, progress, the optimizer's settings, NumPy's generator state) JSON in the
file's metadata. Nothing is pickled, so reading a checkpoint can never run code from it.

A state is a tree of dicts, lists, tuples, numbers, text, None and tensors. Tensors go into the file under their
path in the tree (``model/lm_head.weight``); in the JSON a tensor is ``{"$tensor": path}``, a tuple ``{"$tuple":
[...]}``, and a dict whose keys are not all text (the optimizer's per-parameter state) ``{"$items": [[key, value],
...]}``, so the tree read back equals the tree written, types and bits alike.

Example::

    >>> import tempfile, torch
    >>> path = Path(tempfile.mkdtemp()) / "checkpoint.safetensors"
    >>> state = {"step": 3, "betas": (0.9, 0.98), "moments": {0: torch.ones(2)}, "rng": torch.arange(3, dtype=torch.uint8)}
    >>> save_state(path, state)
    >>> back = load_state(path)
    >>> back["betas"], back["moments"][0].tolist(), back["rng"].dtype, back["step"]
    ((0.9, 0.98), [1.0, 1.0], torch.uint8, 3)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMAT = "ticktock-checkpoint-1"
META_KEY = "ticktock_state"
TENSOR, TUPLE, ITEMS = "$tensor", "$tuple", "$items"


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read back (torn, foreign, or not this format)."""


def encode(value: Any, path: str, tensors: dict) -> Any:
    """``value`` as JSON, its tensors moved into ``tensors`` (keyed by their path in the tree)."""
    import torch

    if isinstance(value, torch.Tensor):
        if path in tensors:
            raise TypeError(f"{path}: two tensors at one path")
        tensors[path] = value.detach().clone().contiguous()  # a copy: tied weights share storage
        return {TENSOR: path}
    if isinstance(value, tuple):
        return {TUPLE: [encode(v, f"{path}/{i}", tensors) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [encode(v, f"{path}/{i}", tensors) for i, v in enumerate(value)]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode(v, f"{path}/{k}", tensors) for k, v in value.items()}
        return {ITEMS: [[k, encode(v, f"{path}/{k}", tensors)] for k, v in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"{path}: a {type(value).__name__} cannot be saved in a checkpoint")


def decode(value: Any, tensors: dict) -> Any:
    """The tree ``encode`` turned into ``value``; CheckpointError on anything ``encode`` does not write."""
    if isinstance(value, list):
        return [decode(v, tensors) for v in value]
    if isinstance(value, dict):
        if set(value) == {TENSOR}:
            if value[TENSOR] not in tensors:
                raise CheckpointError(f"tensor {value[TENSOR]!r:.80} is not in the file")
            return tensors[value[TENSOR]]
        if set(value) == {TUPLE} and isinstance(value[TUPLE], list):
            return tuple(decode(v, tensors) for v in value[TUPLE])
        if set(value) == {ITEMS} and isinstance(value[ITEMS], list):
            if not all(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], (int, str)) for pair in value[ITEMS]):
                raise CheckpointError("a dict's items are not [key, value] pairs")
            return {key: decode(v, tensors) for key, v in value[ITEMS]}
        if any(k.startswith("$") for k in value):
            raise CheckpointError(f"unknown entry {sorted(value)!r:.80}")
        return {k: decode(v, tensors) for k, v in value.items()}
    return value


def save_state(path: Path, state: dict) -> None:
    """Write ``state`` to ``path`` atomically: to a temporary name, then renamed (a crash keeps the old file)."""
    from safetensors.torch import save_file

    tensors: dict = {}
    tree = encode(state, "", tensors)
    partial = path.with_name(path.name + ".partial")
    save_file(tensors, str(partial), metadata={"format": FORMAT, META_KEY: json.dumps(tree)})
    partial.replace(path)


def load_state(path: Path) -> dict:
    """The state ``save_state`` wrote; CheckpointError (its message says why) when the file is anything else."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
            tensors = {key: handle.get_tensor(key) for key in handle.keys()}
    except Exception as err:  # safetensors raises SafetensorError, OSError or ValueError on a torn or foreign file
        raise CheckpointError(f"not a safetensors file ({type(err).__name__}: {err})") from None
    if metadata.get("format") != FORMAT or META_KEY not in metadata:
        raise CheckpointError(f"not a training checkpoint of this version (format {metadata.get('format')!r:.40})")
    try:
        tree = json.loads(metadata[META_KEY])
    except (ValueError, RecursionError) as err:
        raise CheckpointError(f"its state is not valid JSON ({type(err).__name__})") from None
    try:
        state = decode(tree, tensors)
    except RecursionError:
        raise CheckpointError("its state is nested too deeply") from None
    if not isinstance(state, dict):
        raise CheckpointError("its state is not a mapping")
    return state
