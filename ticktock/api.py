"""TickTock's public API: everything a decoder, model adapter or judge plug-in needs, from one module.

Import from here, not from the modules behind it: ``ticktock.api`` is the one place whose names keep their
meaning across minor versions (see "Stability" below); everything else in the package is internal and may move.

=======================  ==========================================================================================
Decoders                 ``Decoder`` (the draft-and-verify loop: override ``propose`` / ``observe`` / ``idle``),
                         ``DecoderSettings`` and ``knob`` (a decoder's settings, checked in one place),
                         ``DecoderConfigError``; the chunk step ``ChunkStep`` and its ``ChunkInputs``; the idle
                         window ``IdleWindow`` and ``ArrivingAudio``; draft trees ``DraftTree``,
                         ``Verification``, ``trim_draft``; the counters ``ChunkCounters``, ``ForwardRecord``,
                         the phases ``POST_AUDIO`` / ``DRAFT`` and ``DRAFT_SELECTIONS``
Model adapters           ``ModelAdapter`` (the contract), ``UnitProtocol`` (the unit grammar's token ids),
                         ``Segment`` (token ids or a block of audio embeddings), ``AdapterState`` (what
                         ``snapshot`` captured), ``TreeLayout`` (a tree forward's parents)
Clocks                   ``CostProfile`` (the modeled clock's measured cost per forward and encoding),
                         ``ProfileError``
Sessions                 ``Session``, ``Turn``, ``Word``, ``ChunkSpan``, ``load_manifest``, ``write_manifest``,
                         ``ManifestError``, ``ManifestTask``, ``ToolExecutor``
Judges                   ``Judge``, ``Reply``, ``Verdict``, ``JudgeError``
Errors                   ``ConfigError`` (exit code 2), ``InputDataError`` (3)
Building blocks (lazy)   for an adapter over a ``transformers`` causal LM (loaded on first use: they import torch,
                         ``import ticktock.api`` does not): ``HFUnitAdapter`` (the adapter: LM, tokenizer, streaming
                         front-end and unit protocol on one KV cache), ``protocol_from_tokenizer`` (the protocol's
                         token ids from a tokenizer's added tokens), ``FrameEnergyFrontend`` (the test fixture's
                         front-end: log band energies of 100 ms frames, one linear layer)
=======================  ==========================================================================================

A plug-in registers under an entry-point group of its package (``ENTRY_POINT_GROUPS``), e.g. in its
``pyproject.toml``::

    [project.entry-points."ticktock.decoders"]
    pool_rank = "my_package.decoders:PoolRankDecoder"

and then ``python -m ticktock.run decoder=pool_rank`` runs it, ``ticktock certify decoder=pool_rank`` checks it.

Stability: ``API_VERSION`` is 1. Within API version 1, the names above keep their signatures and meaning; new
names and new optional arguments may be added. A change that breaks a plug-in written against them raises
``API_VERSION`` and is listed in the changelog of the README. A plug-in may declare the version it was written
for (``api_version = 1`` on its class); one that declares another version is refused before any work.

Example (a plug-in imports only this module; a whole decoder in a few lines is the worked example of
``ticktock.decoders.contract``, the same class with ``api_version = 1`` on it)::

    >>> from ticktock.api import API_VERSION, ENTRY_POINT_GROUPS
    >>> API_VERSION, sorted(ENTRY_POINT_GROUPS)
    (1, ['decoder', 'judge', 'model', 'protocol', 'talker'])
"""

from __future__ import annotations

from ticktock.adapters.base import AdapterState, ModelAdapter, Segment, TreeLayout, UnitProtocol
from ticktock.clocks.modeled import CostProfile, ProfileError
from ticktock.decoders.contract import Decoder, DecoderConfigError, DecoderSettings, knob
from ticktock.decoders.counters import DRAFT, POST_AUDIO, ChunkCounters, ForwardRecord
from ticktock.decoders.idle import DRAFT_SELECTIONS, ArrivingAudio, IdleWindow
from ticktock.decoders.step import ChunkInputs, ChunkStep
from ticktock.decoders.trees import DraftTree, Verification, trim_draft
from ticktock.endpoints.protocol import EndpointProtocol
from ticktock.errors import ConfigError, InputDataError
from ticktock.judges.base import Judge, JudgeError, Reply, Verdict
from ticktock.world.injection import ToolExecutor
from ticktock.sessions.manifest import ChunkSpan, ManifestError, Session, Turn, Word, load_manifest, write_manifest
from ticktock.sessions.tasks import ManifestTask
from ticktock.clocks.talker_cost import TalkerCost
from ticktock.talkers.base import Talker, TalkerError

API_VERSION = 1

# Entry-point group of each config group a plug-in can add an option to (``decoder=<name>``, ``model=<name>``, ...).
ENTRY_POINT_GROUPS = {"decoder": "ticktock.decoders", "model": "ticktock.models", "judge": "ticktock.judges",
                      "talker": "ticktock.talkers", "protocol": "ticktock.protocols"}

__all__ = [
    "API_VERSION", "ENTRY_POINT_GROUPS",
    # decoders
    "Decoder", "DecoderSettings", "knob", "DecoderConfigError", "ChunkStep", "ChunkInputs", "IdleWindow",
    "ArrivingAudio", "DraftTree", "Verification", "trim_draft", "ChunkCounters", "ForwardRecord", "POST_AUDIO",
    "DRAFT", "DRAFT_SELECTIONS",
    # model adapters
    "ModelAdapter", "UnitProtocol", "Segment", "AdapterState", "TreeLayout",
    # clocks
    "CostProfile", "ProfileError",
    # sessions
    "Session", "Turn", "Word", "ChunkSpan", "load_manifest", "write_manifest", "ManifestError", "ManifestTask",
    "ToolExecutor",
    # judges
    "Judge", "Reply", "Verdict", "JudgeError",
    # talkers (speech out)
    "Talker", "TalkerCost", "TalkerError",
    # live endpoints' wire protocols (model=endpoint)
    "EndpointProtocol",
    # errors
    "ConfigError", "InputDataError",
    # building blocks of a transformers-backed adapter (lazy)
    "HFUnitAdapter", "protocol_from_tokenizer", "FrameEnergyFrontend",
]

# Names whose modules import torch: loaded on first use (PEP 562), so that ``import ticktock.api`` stays light.
_LAZY = {
    "HFUnitAdapter": "ticktock.adapters.hf_unit",
    "protocol_from_tokenizer": "ticktock.adapters.hf_unit",
    "FrameEnergyFrontend": "ticktock.adapters.frontends",
}


def __getattr__(name: str):
    """A lazy name of ``_LAZY``, imported from its module the first time it is asked for."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
