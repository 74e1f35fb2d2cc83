"""Local checkpoints of the real models: finding the folder offline, reading its config and loading its tensors.

Nothing here downloads. A model config names the checkpoint by ``path`` (a local folder) and ``repo_id`` (its
Hugging Face repository): ``resolve_checkpoint`` returns ``path`` when given, else the newest snapshot of
``repo_id`` in the local Hugging Face cache, else stops with one line that says how to get the weights::

    ticktock: error: model.path: no local weights for openbmb/MiniCPM-o-4_5 (model minicpmo45): download them with
    `hf download openbmb/MiniCPM-o-4_5`, then pass model.path=<folder> (or keep them in the Hugging Face cache)

A delta (Gander over MiniCPM-o 4.5) names both checkpoints and both folders: ``<folder>`` and its ``base/`` (or
``model.base_path``), each with its ``hf download`` command (``delta_downloads``).

Tensors are read from the folder's safetensors files (one file, or shards listed by
``model.safetensors.index.json``) by key prefix, so one checkpoint holding several parts (``llm.*``, ``apm.*``,
``audio_projection_layer.*``, ...) fills several modules, and parts a text-output benchmark does not need
(``vpm.*``, ``tts.*``) are never read. ``load_into`` is strict: a missing key, an unexpected key or a shape
that differs from the module's stops with one line naming the folder, the keys and the shapes.

Example::

    >>> import tempfile, torch
    >>> from safetensors.torch import save_file
    >>> folder = Path(tempfile.mkdtemp())
    >>> save_file({"llm.weight": torch.ones(2, 3), "llm.bias": torch.zeros(2), "tts.x": torch.ones(1)},
    ...           str(folder / "model.safetensors"))
    >>> layer = torch.nn.Linear(3, 2)
    >>> load_into(layer, CheckpointTensors(folder), "llm.")
    >>> float(layer.weight.detach().sum())
    6.0
"""

from __future__ import annotations

import json
from pathlib import Path

from ticktock.errors import ConfigError, InputDataError

INDEX_FILE = "model.safetensors.index.json"
MINIATURE_KEY = "ticktock_miniature"  # config.json's marker of a miniature checkpoint (``ticktock.miniatures``)
MINIATURE_WRITER = "ticktock.miniatures"


def miniature_marker(parameters: int) -> dict:
    """The config.json entry (under ``MINIATURE_KEY``) a miniature writer puts in the checkpoint it writes: its
    weights are random, and how many parameters a replay loads from it.

    >>> miniature_marker(19_600_000)
    {'random_weights': True, 'parameters': 19600000, 'written_by': 'ticktock.miniatures'}
    """
    return {"random_weights": True, "parameters": int(parameters), "written_by": MINIATURE_WRITER}


def weights_origin(config: dict, random_init: bool = False) -> dict:
    """What a run's weights are, for run.json ``environment.model``: ``miniature`` (the checkpoint's config.json
    carries the miniature marker, ``MINIATURE_KEY``) and ``random_weights`` (a miniature, or ``random_init``: the
    published shapes with random weights, as calibration runs them). Real weights: both false.

    >>> weights_origin({"hidden_size": 4096})
    {'miniature': False, 'random_weights': False}
    >>> weights_origin({MINIATURE_KEY: miniature_marker(10)})
    {'miniature': True, 'random_weights': True}
    >>> weights_origin({"hidden_size": 4096}, random_init=True)
    {'miniature': False, 'random_weights': True}
    """
    marker = config.get(MINIATURE_KEY)
    miniature = isinstance(marker, dict)
    random_weights = bool(random_init) or (miniature and marker.get("random_weights") is not False)
    return {"miniature": miniature, "random_weights": random_weights}


class MissingWeightsError(ConfigError):
    """A model's weights are not on this machine (exit code 2); the message says how to get them."""


class CheckpointError(InputDataError):
    """A checkpoint folder is incomplete or does not match its config (exit code 3); names the file and keys."""


def resolve_checkpoint(path: str | None, repo_id: str | None, model_name: str, key: str = "model.path",
                       base_repo_id: str | None = None) -> Path:
    """The local folder of a checkpoint: ``path`` if given (it must exist), else the local Hugging Face cache's
    snapshot of ``repo_id``; never a download. ``repo_id`` None: no public repository is known. ``base_repo_id``:
    the checkpoint is a delta over that base, and a refusal says how to get both (``delta_downloads``)."""
    if path:
        folder = Path(path).expanduser()
        if not folder.is_dir():
            if repo_id and base_repo_id:
                raise MissingWeightsError(f"{key}: {folder} is not a folder (model {model_name}); "
                                          f"{delta_downloads(repo_id, base_repo_id, str(folder))}")
            how = f"download them with `hf download {repo_id} --local-dir {folder}`" if repo_id else "no public repository is known"
            raise MissingWeightsError(f"{key}: {folder} is not a folder (model {model_name}; {how})")
        return folder
    if not repo_id:
        raise MissingWeightsError(f"{key}: model {model_name} has no public weights known to TickTock: pass "
                                  f"{key}=<the checkpoint folder>")
    cached = cached_snapshot(repo_id)
    if cached is None and base_repo_id:
        raise MissingWeightsError(f"{key}: no local weights for {repo_id} (model {model_name}); "
                                  f"{delta_downloads(repo_id, base_repo_id, '<folder>')}; then pass {key}=<folder> "
                                  f"(or keep both in the Hugging Face cache: `hf download {repo_id}`, "
                                  f"`hf download {base_repo_id}`)")
    if cached is None:
        raise MissingWeightsError(f"{key}: no local weights for {repo_id} (model {model_name}): download them with "
                                  f"`hf download {repo_id}`, then pass {key}=<folder> (or keep them in the Hugging "
                                  "Face cache)")
    return cached


def delta_downloads(repo_id: str, base_repo_id: str, folder: str) -> str:
    """How to get a delta checkpoint and the base it overlays, into ``folder`` and the ``base/`` folder inside it.

    >>> delta_downloads("Gander-Omni/Gander", "openbmb/MiniCPM-o-4_5", "~/ckpt/gander")
    'it is a delta over openbmb/MiniCPM-o-4_5 and needs both: `hf download Gander-Omni/Gander --local-dir ~/ckpt/gander` and `hf download openbmb/MiniCPM-o-4_5 --local-dir ~/ckpt/gander/base` (or the base in any folder, passed as model.base_path=<folder>)'
    """
    return (f"it is a delta over {base_repo_id} and needs both: `hf download {repo_id} --local-dir {folder}` and "
            f"`hf download {base_repo_id} --local-dir {folder}/base` (or the base in any folder, passed as "
            "model.base_path=<folder>)")


def check_weights(model_cfg) -> None:
    """Stop before any work when a model config names a checkpoint (``repo_id`` / ``path``, and ``base_repo_id`` /
    ``base_path`` for a delta) that is not on this machine; configs without these keys pass. A delta's refusal names
    every folder it needs (the delta, and its base in ``<path>/base`` or ``model.base_path``) and how to get each.
    A config with ``ships_weights: true`` (its weights ship with the package, e.g. ``model=embedded_v9``) and one
    with ``random_init`` pass too."""
    if "repo_id" not in model_cfg or model_cfg.get("random_init") or model_cfg.get("ships_weights"):
        return
    name = model_cfg.get("name", "model")
    folder = resolve_checkpoint(model_cfg.get("path"), model_cfg.get("repo_id"), name,
                                base_repo_id=model_cfg.get("base_repo_id"))
    if model_cfg.get("base_repo_id"):
        resolve_base(folder, model_cfg.get("base_path"), model_cfg.get("base_repo_id"), name)


def cached_snapshot(repo_id: str) -> Path | None:
    """The local Hugging Face cache's snapshot of ``repo_id`` holding a config.json, or None (offline lookup)."""
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # not cached (LocalEntryNotFoundError), or no usable cache at all
        return None
    return folder if (folder / "config.json").is_file() else None


def read_json(folder: Path, name: str) -> dict:
    """A JSON file of the checkpoint, with a clear error when it is missing or malformed."""
    file = folder / name
    if not file.is_file():
        raise CheckpointError(f"{file}: missing (the checkpoint folder must hold {name})")
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{file}: not valid JSON ({err})") from None


class CheckpointTensors:
    """The tensors of a checkpoint folder, read lazily by key prefix from its safetensors file(s)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.files = self._key_files()

    def _key_files(self) -> dict[str, Path]:
        index = self.folder / INDEX_FILE
        if index.is_file():
            weight_map = read_json(self.folder, INDEX_FILE).get("weight_map")
            if not isinstance(weight_map, dict):
                raise CheckpointError(f"{index}: has no weight_map")
            return {key: self.folder / name for key, name in weight_map.items()}
        files = sorted(self.folder.glob("*.safetensors"))
        if not files:
            raise CheckpointError(f"{self.folder}: no *.safetensors file (nor {INDEX_FILE})")
        from safetensors import safe_open

        keys = {}
        for file in files:
            with safe_open(str(file), framework="pt") as handle:
                keys.update({key: file for key in handle.keys()})
        return keys

    @classmethod
    def overlay(cls, delta: Path, base: Path) -> "CheckpointTensors":
        """A delta checkpoint over its base: every key the delta holds comes from the delta, the rest from the base."""
        merged = cls(base)
        merged.files = {**merged.files, **cls(delta).files}
        merged.folder = Path(delta)
        return merged

    def keys(self, prefix: str = "") -> list[str]:
        return [key for key in self.files if key.startswith(prefix)]

    def shapes(self, prefix: str) -> dict[str, tuple[int, ...]]:
        """The shape of every ``prefix*`` tensor, keyed without the prefix (headers only, no tensor read)."""
        from safetensors import safe_open

        shapes = {}
        for file, keys in self._by_file(prefix).items():
            with safe_open(str(file), framework="pt") as handle:
                shapes.update({key[len(prefix):]: tuple(handle.get_slice(key).get_shape()) for key in keys})
        return shapes

    def read_by_file(self, prefix: str, device: str = "cpu"):
        """The ``prefix*`` tensors one file at a time (bounded memory for multi-GB shards), keyed without the prefix."""
        from safetensors import safe_open

        for file, keys in self._by_file(prefix).items():
            with safe_open(str(file), framework="pt", device=device) as handle:
                yield {key[len(prefix):]: handle.get_tensor(key) for key in keys}

    def _by_file(self, prefix: str) -> dict[Path, list[str]]:
        by_file: dict[Path, list[str]] = {}
        for key in self.keys(prefix):
            by_file.setdefault(self.files[key], []).append(key)
        for file in by_file:
            if not file.is_file():
                raise CheckpointError(f"{file}: missing (listed in {self.folder / INDEX_FILE})")
        return by_file


def load_into(module, tensors: CheckpointTensors, prefix: str, ignore: tuple[str, ...] = ()) -> None:
    """Load every ``prefix*`` tensor into ``module`` (strict: same keys, same shapes), cast to its dtype, one
    safetensors file at a time.

    ``ignore``: module keys that may be absent from the checkpoint (e.g. a tied ``lm_head.weight``).
    """
    shapes = tensors.shapes(prefix)
    expected = {key: tuple(value.shape) for key, value in module.state_dict().items()}
    missing = [key for key in expected if key not in shapes and key not in ignore]
    unexpected = [key for key in shapes if key not in expected]
    where = f"{tensors.folder}: {prefix}*"
    if missing:
        raise CheckpointError(f"{where}: {len(missing)} missing keys: {_some(prefix, missing)}")
    if unexpected:
        raise CheckpointError(f"{where}: {len(unexpected)} keys the model does not have: {_some(prefix, unexpected)}")
    for key, shape in shapes.items():
        if shape != expected[key]:
            raise CheckpointError(f"{where}: {prefix}{key} has shape {shape} but config.json gives {expected[key]}")
    device = str(next(module.parameters()).device)
    for part in tensors.read_by_file(prefix, device=device):
        module.load_state_dict(part, strict=False)


def _some(prefix: str, keys: list[str], shown: int = 3) -> str:
    more = f" (and {len(keys) - shown} more)" if len(keys) > shown else ""
    return ", ".join(prefix + key for key in keys[:shown]) + more


def resolve_base(folder: Path, base_path: str | None, base_repo_id: str, name: str) -> Path:
    """The base checkpoint of a delta: ``base_path``, a ``base/`` folder inside the delta, or the local cache."""
    if base_path:
        return resolve_checkpoint(base_path, base_repo_id, name, key="model.base_path")
    inside = folder / "base"
    if (inside / "config.json").is_file():
        return inside
    cached = cached_snapshot(base_repo_id)
    if cached is None:
        raise MissingWeightsError(f"model.base_path: model {name} is a delta over {base_repo_id}, whose weights are "
                                  f"not here (looked in {inside}, then the Hugging Face cache): download them with "
                                  f"`hf download {base_repo_id} --local-dir {inside}`, or into any folder and pass "
                                  f"model.base_path=<folder> (or keep them in the Hugging Face cache: "
                                  f"`hf download {base_repo_id}`)")
    return cached
