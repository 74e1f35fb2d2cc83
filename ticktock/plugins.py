"""Plug-ins by entry point: decoders, models, judges, talkers and live-endpoint protocols from other installed
packages, selected like ours.

A package registers a class under one of TickTock's entry-point groups (``GROUPS``: config group ->
entry-point group) in its ``pyproject.toml``::

    [project.entry-points."ticktock.decoders"]
    pool_rank = "my_package.decoders:PoolRankDecoder"

After ``pip install my-package``, ``python -m ticktock.run decoder=pool_rank`` runs it: before Hydra composes the
run's config, the names selected on the command line (``decoder=...``, ``model=...``, ``judge=...``, ``talker=...``,
``protocol=...``, sweeps such as
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
protocol   a ``ticktock.api.EndpointProtocol`` subclass    its keyword arguments with their defaults
=========  ==============================================  ==================================================

Names are ours to arbitrate: a run that uses a name both shipped and installed as a plug-in, or installed by two
distributions, is an error (one line naming the clash and both distributions), never a silent choice; a clash on a
name the run does not use stops nothing (``check_name``: on the names selected on the command line before Hydra
composes, and on the names the composed config uses, defaults included, in ``check_used``). So is an unknown
name, a plug-in that fails to import (its own error, with the entry point named), one that is not the right kind of
class, or one that declares another ``api_version``. All are ``PluginError`` (exit code 2), raised before any work.

``TICKTOCK_DISABLE_PLUGINS=1`` ignores every installed plug-in (a run then uses shipped configs only). A name
that is a config file in a folder the command line adds to Hydra's search path (``hydra.searchpath=[file://...]``,
``--config-dir``) is Hydra's to find, as before plug-ins existed (``searched``).

A plug-in's code is part of a run's identity (``used_by``): its distribution, version and a digest of its code
(``code_sha256``: the files of the top-level package its module belongs to), so a plug-in changed and reinstalled
makes another run, never a silent resume of the old one's numbers.

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
import hashlib
import importlib.machinery
import importlib.util
import inspect
import os
import re
from importlib import metadata
from pathlib import Path

from ticktock.api import API_VERSION, ENTRY_POINT_GROUPS, Decoder, EndpointProtocol, Judge, ModelAdapter, Talker
from ticktock.errors import ConfigError, one_line
from ticktock.shipped import resource_path

GROUPS = ENTRY_POINT_GROUPS
DISABLE_VARIABLE = "TICKTOCK_DISABLE_PLUGINS"
_SELECTION = re.compile(r"^(?:\+\+?)?(decoder|model|judge|talker|protocol)=(.+)$")
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
    imported). A name may have several: ``check_name`` refuses that where the run uses it."""
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


def check_name(group: str, name: str) -> None:
    """Refuse a name this run uses (``group=name``) that is both a shipped config and an installed plug-in, or that
    two distributions register: one line naming the clash and the distributions. A clash on another name of the
    group stops nothing.

    >>> check_name("decoder", "ar")  # shipped, and no installed plug-in takes the name
    """
    entries = installed(group).get(name) or []
    if entries and name in shipped(group):
        raise PluginError(f"{group}={name}: two {group}s have this name: TickTock's shipped config of {_ours()} and the "
                          f"plug-in {describe_entry(entries[0])}; rename the plug-in in that package's entry points "
                          f"(or uninstall it; {DISABLE_VARIABLE}=1 ignores every plug-in)")
    if len({e.value for e in entries}) > 1 or len(entries) > 1 and len({_dist(e) for e in entries}) > 1:
        both = "; ".join(describe_entry(e) for e in entries)
        raise PluginError(f"{group}={name}: more than one installed plug-in has this name ({both}); "
                          "uninstall or rename all but one")


def check_used(config) -> None:
    """``check_name`` for the name every plug-in group of a composed run config uses (defaults and experiment
    configs included, which the command line does not show)."""
    for group in GROUPS:
        node = config.get(group) if hasattr(config, "get") else None
        name = node.get("name") if hasattr(node, "get") else None
        if isinstance(name, str):
            check_name(group, name)


def _ours() -> str:
    """``ticktock <version>``: our distribution, as a clash names it."""
    try:
        return f"ticktock {metadata.version('ticktock')}"
    except metadata.PackageNotFoundError:
        return "ticktock"


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
        in_search_path = searched(group, overrides)
        for name in names:
            if name in in_search_path or name == "null" or "*" in name:
                continue
            check_name(group, name)
            if name in shipped(group):
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
    base = {"decoder": Decoder, "model": ModelAdapter, "judge": Judge, "talker": Talker,
            "protocol": EndpointProtocol}[group]
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
    """Provenance of the plug-ins a composed run config uses, by group (what run.json records under ``plugins``, and
    the run identity under ``plugins``: a plug-in changed since is another run).

    A config group set to a plug-in's name: its entry point; a ``_target_`` outside the ``ticktock`` package (a
    plug-in selected by ``decoder._target_=my.module.MyDecoder``): that target, with the distribution that holds
    its module (None for a module outside any). Each with the digest of its code (``code_sha256``)."""
    used = {}
    for group in GROUPS:
        node = config.get(group) if hasattr(config, "get") else None
        if not node or not node.get("_target_"):
            continue
        name, target = node.get("name"), str(node.get("_target_"))
        entries = installed(group).get(name) if name not in shipped(group) else None
        if entries:
            used[group] = {**provenance(entries[0], load(entries[0])), "code_sha256": code_sha256(target)}
        elif not target.startswith("ticktock."):
            distribution = distribution_of(target)
            used[group] = {"distribution": distribution.name if distribution else None,
                           "version": distribution.version if distribution else None, "entry_point": None,
                           "target": target, "code_sha256": code_sha256(target)}
    return used


def distribution_of(target: str) -> metadata.Distribution | None:
    """The installed distribution that holds the top-level package of ``target`` (a dotted path), or None."""
    names = metadata.packages_distributions().get(target.split(".")[0]) or []
    for name in names:
        try:
            return metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def code_files(target: str) -> list[tuple[str, Path]]:
    """The module files of the top-level package (or module) that ``target`` (a dotted path) belongs to, found
    where Python would import it from, without importing it: ``(name, file)`` sorted by name, the name being the
    file's path relative to the package's folder, never where that folder lies (so the digest is the same on every
    machine). A namespace package's folders are read in import order, and a name two of them hold is the first one's
    (the module Python imports). Module files are those Python imports (``.py``, compiled extensions, ``.pyc``
    outside ``__pycache__``); data files are not code. Empty when it cannot be found. (A package's names start with
    ``0/``, as when each of a namespace package's folders was numbered: an unchanged plug-in keeps its digest.)"""
    try:
        spec = importlib.util.find_spec(target.split(".")[0])
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    suffixes = tuple(importlib.machinery.all_suffixes())
    if spec.submodule_search_locations:  # a package (or a namespace package's folders)
        found: dict[str, Path] = {}
        for location in spec.submodule_search_locations:
            root = Path(location)
            for path in sorted(root.rglob("*")):
                if path.name.endswith(suffixes) and "__pycache__" not in path.parts and path.is_file():
                    found.setdefault(f"0/{path.relative_to(root).as_posix()}", path)
        return sorted(found.items())
    origin = Path(spec.origin) if spec.origin else None
    return [(origin.name, origin)] if origin is not None and origin.is_file() else []


def code_sha256(target: str) -> str | None:
    """SHA-256 over the module files of ``target``'s top-level package (``code_files``: each one's relative path
    and bytes), so an edit of any of them changes it and the folder it is installed in does not; None when no
    file is found (a target that cannot be imported: building it says so)."""
    files = code_files(target)
    if not files:
        return None
    digest = hashlib.sha256()
    for relative, path in files:
        digest.update(relative.encode("utf-8") + b"\0" + hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")
    return digest.hexdigest()


def identity_of(used: dict[str, dict]) -> dict[str, str]:
    """What a run identity keeps of ``used_by``'s record: per group one line (distribution, version, target and the
    first 16 hex digits of ``code_sha256``), short enough for the one-line refusal of a run folder holding another run.

    >>> identity_of({"decoder": {"distribution": "my-plugins", "version": "1.2", "target": "my_plugins.Mine",
    ...                          "code_sha256": "0123456789abcdef" * 4, "entry_point": "mine = my_plugins:Mine"}})
    {'decoder': 'my-plugins 1.2 my_plugins.Mine code 0123456789abcdef'}
    """
    return {group: f"{record.get('distribution') or '(no distribution)'} {record.get('version') or ''} "
                   f"{record.get('target')} code {(record.get('code_sha256') or 'none')[:16]}".replace("  ", " ")
            for group, record in used.items()}
