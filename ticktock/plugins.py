"""Plug-ins by entry point: decoders, models, judges and talkers from other installed packages, selected like ours.

A package registers a class under one of TickTock's entry-point groups (``GROUPS``: config group ->
entry-point group) in its ``pyproject.toml``::

    [project.entry-points."ticktock.decoders"]
    pool_rank = "my_package.decoders:PoolRankDecoder"

After ``pip install my-package``, ``python -m ticktock.run decoder=pool_rank`` runs it: before Hydra composes the
run's config, the names selected on the command line (``decoder=...``, ``model=...``, ``judge=...``, ``talker=...``, sweeps such as
``decoder=ar,pool_rank`` included) that are not shipped configs are looked up among the installed entry points, and
each one found is imported (only then: a plug-in nobody selects is never imported), checked against its contract
and stored as a config node of its group (``hydra.core.config_store.ConfigStore``). The node holds ``_target_``, the
``name`` and every setting with its default, so ``decoder.width=3`` overrides work as for a shipped config:

=========  ==============================================  ==================================================
group      the entry point names                           the node's settings
=========  ==============================================  ==================================================
decoder    a ``ticktock.api.Decoder`` subclass             the fields of its ``Settings`` dataclass
model      a ``ModelAdapter`` subclass, or a function      its keyword arguments with their defaults
           returning one                                   (``device`` follows the run option ``device``)
judge      a ``ticktock.api.Judge`` subclass               its keyword arguments with their defaults
talker     a ``ticktock.api.Talker`` subclass              its keyword arguments with their defaults
=========  ==============================================  ==================================================

Names are ours to arbitrate: a plug-in named like a shipped config, or two installed plug-ins with one name, is an
error (one line naming the distributions), never a silent choice. So is an unknown name, a plug-in that fails to
import (its own error, with the entry point named), one that is not the right kind of class, or one that declares
another ``api_version``. All are ``PluginError`` (exit code 2), raised before any work.
``TICKTOCK_DISABLE_PLUGINS=1`` ignores every installed plug-in (a run then uses shipped configs only). A name
that is a config file in a folder the command line adds to Hydra's search path (``hydra.searchpath=[file://...]``,
``--config-dir``) is Hydra's to find, as before plug-ins existed (``searched``).

Example (the shipped decoders are found; an unknown name is refused, listing them and any installed plug-ins)::

    >>> selected_names(["decoder=ar,pld", "model=fixture", "limit.chunks=4"])
    {'decoder': ['ar', 'pld'], 'model': ['fixture']}
    >>> register_selected(["decoder=nope"])
    Traceback (most recent call last):
    ...
    ticktock.plugins.PluginError: decoder=nope: no such decoder (shipped: ar, ar_prefill, lookahead, oracle_probe, pld, recycling, speclisten, speclisten_plus, speclisten_runnerup, speclisten_silence, speclisten_speak, speclisten_stream; installed plug-ins: ...)
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
from importlib import metadata
from pathlib import Path

from ticktock.api import API_VERSION, ENTRY_POINT_GROUPS, Decoder, Judge, ModelAdapter, Talker
from ticktock.errors import ConfigError, one_line
from ticktock.replay.resources import resource_path

GROUPS = ENTRY_POINT_GROUPS
DISABLE_VARIABLE = "TICKTOCK_DISABLE_PLUGINS"
_SELECTION = re.compile(r"^(?:\+\+?)?(decoder|model|judge|talker)=(.+)$")
_SEARCHPATH = re.compile(r"^(?:\+\+?)?hydra\.searchpath=\[?(.*?)\]?$")


class PluginError(ConfigError):
    """A plug-in cannot be used as selected: unknown, clashing, failing to import, or not the right kind."""


def disabled() -> bool:
    """Whether ``TICKTOCK_DISABLE_PLUGINS`` asks to ignore installed plug-ins."""
    return os.environ.get(DISABLE_VARIABLE, "").strip().lower() not in ("", "0", "false", "no")


def shipped(group: str) -> list[str]:
    """The names of the configs TickTock ships in ``configs/<group>/``."""
    return sorted(path.stem for path in resource_path(f"configs/{group}").glob("*.yaml"))


def installed(group: str) -> dict[str, list[metadata.EntryPoint]]:
    """Installed entry points of ``group``'s entry-point group, by name (read from package metadata; nothing is
    imported). A name may have several: ``check_clashes`` refuses that."""
    if disabled():
        return {}
    found: dict[str, list[metadata.EntryPoint]] = {}
    for entry in metadata.entry_points(group=GROUPS[group]):
        found.setdefault(entry.name, []).append(entry)
    return found


def describe_entry(entry: metadata.EntryPoint) -> str:
    """``name = module:attr`` of distribution ``dist`` ``version`` (what an error names)."""
    dist = getattr(entry, "dist", None)
    origin = f" of {dist.name} {dist.version}" if dist is not None else ""
    return f"entry point {entry.group}:{entry.name} = {entry.value}{origin}"


def check_clashes(group: str) -> None:
    """Refuse a plug-in named like a shipped config, and two distributions that register one name."""
    ours = set(shipped(group))
    for name, entries in installed(group).items():
        if name in ours:
            raise PluginError(f"{group}={name}: the plug-in {describe_entry(entries[0])} has the name of a shipped "
                              f"{group} config; rename it in that package's entry points (or uninstall it)")
        if len({e.value for e in entries}) > 1 or len(entries) > 1 and len({_dist(e) for e in entries}) > 1:
            both = "; ".join(describe_entry(e) for e in entries)
            raise PluginError(f"{group}={name}: more than one installed plug-in has this name ({both}); "
                              "uninstall or rename all but one")


def _dist(entry: metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    return dist.name if dist is not None else ""


def selected_names(overrides: list[str]) -> dict[str, list[str]]:
    """The names each plug-in group is set to by command-line overrides (sweep lists and ``choice(...)`` split)."""
    chosen: dict[str, list[str]] = {}
    for override in overrides:
        match = _SELECTION.match(override.strip())
        if not match:
            continue
        group, value = match.groups()
        value = re.sub(r"^(?:choice|range|glob)\((.*)\)$", r"\1", value.strip())
        names = [v.strip().strip("'\"") for v in value.strip("[]").split(",")]
        chosen.setdefault(group, []).extend(n for n in names if n)
    return chosen


def searched(group: str, overrides: list[str]) -> set[str]:
    """Names of the ``<group>/*.yaml`` configs in folders the command line adds to Hydra's search path
    (``hydra.searchpath=[file://...]``, ``--config-dir`` / ``-cd``): Hydra finds those itself.

    Example::

        >>> searched("decoder", ["hydra.searchpath=[file:///nowhere]", "decoder=mine"])
        set()
    """
    folders = []
    for i, argument in enumerate(overrides):
        match = _SEARCHPATH.match(argument.strip())
        if match:
            folders += [folder.strip().strip("'\"") for folder in match.group(1).split(",")]
        elif argument in ("--config-dir", "-cd") and i + 1 < len(overrides):
            folders.append(overrides[i + 1])
        elif argument.startswith("--config-dir="):
            folders.append(argument.split("=", 1)[1])
    local = [Path(folder.removeprefix("file://")) for folder in folders if folder and not folder.startswith("pkg://")]
    return {path.stem for folder in local for path in (folder / group).glob("*.yaml")}


def register_selected(overrides: list[str]) -> dict[str, dict]:
    """Register the config node of every plug-in selected by ``overrides``; refuse unknown names and clashes.
    Returns each registered plug-in's provenance by ``group=name``."""
    registered = {}
    for group, names in selected_names(overrides).items():
        check_clashes(group)
        in_search_path = searched(group, overrides)
        for name in names:
            if name in shipped(group) or name in in_search_path or name == "null" or "*" in name:
                continue
            registered[f"{group}={name}"] = register(group, name)
    return registered


def register(group: str, name: str) -> dict:
    """Import the plug-in ``group=name``, check it, and store its config node; returns its provenance."""
    entries = installed(group).get(name)
    if not entries:
        plugins = ", ".join(sorted(installed(group))) or "none"
        raise PluginError(f"{group}={name}: no such {group} (shipped: {', '.join(shipped(group))}; installed "
                          f"plug-ins: {plugins})")
    entry = entries[0]
    target = load(entry)
    node = config_node(group, name, target, entry)
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(group=group, name=name, node=node, provider=_dist(entry) or "plugin")
    return provenance(entry, target)


def load(entry: metadata.EntryPoint):
    """The object an entry point names; its import error (any exception) becomes one ``PluginError`` line."""
    try:
        return entry.load()
    except Exception as err:  # a plug-in's own bug: name the plug-in, keep its message
        raise PluginError(f"{describe_entry(entry)} failed to import: {type(err).__name__}: {one_line(err)}") from None


def provenance(entry: metadata.EntryPoint, target) -> dict:
    """What run.json records of a plug-in: distribution, version, entry point and declared API version."""
    dist = getattr(entry, "dist", None)
    return {"distribution": dist.name if dist else None, "version": dist.version if dist else None,
            "entry_point": f"{entry.name} = {entry.value}", "target": _target_path(target),
            "api_version": getattr(target, "api_version", API_VERSION)}


def config_node(group: str, name: str, target, entry: metadata.EntryPoint) -> dict:
    """The Hydra config node of a plug-in: ``_target_``, ``name`` and its settings' defaults."""
    _check_contract(group, target, entry)
    settings = _decoder_settings(target) if group == "decoder" else _keyword_defaults(target)
    if group == "model" and "device" in settings:
        settings["device"] = "${device}"
    return {"name": name, "_target_": _target_path(target), **settings}


def _target_path(target) -> str:
    return f"{target.__module__}.{target.__qualname__}"


def _check_contract(group: str, target, entry: metadata.EntryPoint) -> None:
    base = {"decoder": Decoder, "model": ModelAdapter, "judge": Judge, "talker": Talker}[group]
    is_class = inspect.isclass(target)
    fits = is_class and issubclass(target, base) or group == "model" and not is_class and callable(target)
    if not fits:
        kind = f"a subclass of ticktock.api.{base.__name__}" + (" or a function returning one" if group == "model" else "")
        raise PluginError(f"{describe_entry(entry)}: {target!r} is not {kind}")
    if is_class and inspect.isabstract(target):
        missing = ", ".join(sorted(target.__abstractmethods__))
        raise PluginError(f"{describe_entry(entry)}: {target.__qualname__} does not implement {missing} of "
                          f"ticktock.api.{base.__name__}")
    declared = getattr(target, "api_version", API_VERSION)
    if declared != API_VERSION:
        raise PluginError(f"{describe_entry(entry)}: written for TickTock API version {declared}; this TickTock "
                          f"has API version {API_VERSION}")


def _decoder_settings(decoder) -> dict:
    values = {}
    for spec in dataclasses.fields(decoder.Settings):
        default = spec.default if spec.default is not dataclasses.MISSING else None
        values[spec.name] = list(default) if isinstance(default, tuple) else default
    return values


def _keyword_defaults(target) -> dict:
    """Keyword arguments of a function or class with plain defaults (``???``, required, where there is none)."""
    function = target.__init__ if inspect.isclass(target) else target
    values = {}
    for parameter in list(inspect.signature(function).parameters.values()):
        if parameter.name in ("self", "name") or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = parameter.default
        if default is parameter.empty:
            values[parameter.name] = "???"
        elif default is None or isinstance(default, (bool, int, float, str)):
            values[parameter.name] = default
        elif isinstance(default, (tuple, list)) and all(isinstance(v, (bool, int, float, str)) for v in default):
            values[parameter.name] = list(default)
    return values


def used_by(config) -> dict[str, dict]:
    """Provenance of the plug-ins a composed run config uses, by group (what run.json records under ``plugins``).

    A config group set to a plug-in's name: its entry point; a ``_target_`` outside the ``ticktock`` package (a
    plug-in selected by ``decoder._target_=my.module.MyDecoder``): that target, with no distribution."""
    used = {}
    for group in GROUPS:
        node = config.get(group) if hasattr(config, "get") else None
        if not node or not node.get("_target_"):
            continue
        name, target = node.get("name"), str(node.get("_target_"))
        entries = installed(group).get(name) if name not in shipped(group) else None
        if entries:
            used[group] = provenance(entries[0], load(entries[0]))
        elif not target.startswith("ticktock."):
            used[group] = {"distribution": None, "version": None, "entry_point": None, "target": target}
    return used
