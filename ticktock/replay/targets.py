"""A plug-in config's ``_target_`` and keys, checked before it is instantiated.

Every plug-in config (``model``, ``decoder``, ``clock``, ``draft_policy``, ``judge``, ``task``) names a class or
function in ``_target_`` and passes its other keys as keyword arguments. Hydra reports a target it cannot import,
or a key the target does not take, as a multi-line error with a traceback; here both are one ``ConfigError``
line naming the config key:

    >>> from omegaconf import OmegaConf
    >>> cfg = OmegaConf.create({"draft_policy": {"_target_": "ticktock.scheduling.round_robin.RoundRobin",
    ...                                          "speed": 2}})
    >>> check_target(cfg.draft_policy, {"_target_": cfg.draft_policy._target_, "speed": 2})
    Traceback (most recent call last):
    ...
    ticktock.replay.targets.TargetError: draft_policy.speed: unknown setting of ticktock.scheduling.round_robin.RoundRobin (known: name)
    >>> check_target(cfg.draft_policy, {"_target_": "nope.Nope"})
    Traceback (most recent call last):
    ...
    ticktock.replay.targets.TargetError: draft_policy._target_: cannot import 'nope.Nope' (no module named 'nope')

Importing the target runs its module's code, as instantiating it would: a config is trusted like code.
"""

from __future__ import annotations

import importlib
import inspect

from ticktock.errors import ConfigError


class TargetError(ConfigError):
    """A config's ``_target_`` cannot be imported, or it does not take the config's keys (exit code 2)."""


def check_target(node, spec: dict, extra: dict | None = None) -> None:
    """``spec`` (the node as a plain dict, its ``name`` label removed) names an importable ``_target_`` that takes
    its keys (and ``extra``, the arguments the harness adds); else a ``TargetError`` naming the key. Keys starting
    with ``_`` are Hydra's own (``_partial_``, ``_recursive_``, ...)."""
    key = node._get_full_key(None) or "config"
    target = spec.get("_target_")
    if target is None:
        return
    made = locate(target, f"{key}._target_")
    try:
        signature = inspect.signature(made)
    except (TypeError, ValueError):  # a builtin without a signature: instantiation says what is wrong
        return
    parameters = signature.parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return  # it takes any key (a decoder checks its settings itself)
    arguments = [k for k in [*spec, *(extra or {})] if not k.startswith("_")]
    known = [name for name, p in parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for argument in arguments:
        if argument not in known:
            raise TargetError(f"{key}.{argument}: unknown setting of {target} (known: {', '.join(known) or 'none'})")
    missing = [name for name, p in parameters.items() if p.default is p.empty and name not in arguments
               and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if missing and "_args_" not in spec:  # (positional arguments given by Hydra's _args_ are not named)
        raise TargetError(f"{key}.{missing[0]}: missing (required by {target})")


def locate(path, key: str):
    """The object a dotted ``_target_`` path names (a module's attribute, possibly nested).

    >>> locate("ticktock.replay.targets.locate", "x._target_") is locate
    True
    >>> locate("ticktock.replay.targets.nope", "decoder._target_")
    Traceback (most recent call last):
    ...
    ticktock.replay.targets.TargetError: decoder._target_: cannot import 'ticktock.replay.targets.nope' (ticktock.replay.targets has no attribute 'nope')
    """
    if not isinstance(path, str) or not path or not all(part.isidentifier() for part in path.split(".")):
        raise TargetError(f"{key}: must be a dotted Python name such as package.module.Class, got {path!r}")
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            found = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name is not None and module_name != err.name and not module_name.startswith(err.name + "."):
                raise TargetError(f"{key}: cannot import {path!r} ({module_name} needs {err.name}, which is not "
                                  "installed)") from None
            continue
        except Exception as err:  # the module itself fails as it is imported: its own error, on one line
            raise TargetError(f"{key}: cannot import {path!r} ({type(err).__name__}: {err})") from None
        for depth, attribute in enumerate(parts[cut:]):
            if not hasattr(found, attribute):
                owner = ".".join(parts[: cut + depth])
                raise TargetError(f"{key}: cannot import {path!r} ({owner} has no attribute {attribute!r})")
            found = getattr(found, attribute)
        return found
    raise TargetError(f"{key}: cannot import {path!r} (no module named {parts[0]!r})")
