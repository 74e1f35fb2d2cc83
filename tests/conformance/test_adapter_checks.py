"""The adapter half of ``ticktock certify`` (``ticktock.conformance.adapter``): the shipped adapters (the fixture, the
embedded model, the miniature checkpoints of every real family loaded through their model configs) pass, and
adapters broken on purpose are each caught by the right check, with the counter-example named.

The suite found one genuine failure when it was written: the fixture's and the embedded model's front-ends carry
left context across chunks (the previous frame's band energies; 400 ms of causal convolutions) but declared
``silence_depends_on_state`` False, so ``silence_audio`` (silence after silence) was not what a silent chunk encodes
to after speech. Both now declare it (``ticktock.adapters.frontends``); ``ClaimsStatelessSilence`` below keeps the
old claim and must still be caught.
"""

import re

import pytest

from ticktock.adapters.base import ModelAdapter
from ticktock.adapters.fixture import build_fixture_adapter
from ticktock.adapters.hf_unit import HFUnitAdapter
from ticktock.conformance.adapter import (BATCHED, CHECKS, KEEP, PIECEWISE, REPLICA, RESTORE, SILENCE, TREE,
                                          adapter_checks)
from ticktock.conformance.checks import table

STATELESS_SILENCE_CLAIM = re.escape("silence_audio(16000) against peek_audio(zeros) after 1 s of noise, embedding 0,")
NO_EARLY_PREFILL = "causal_granularity_ms is None"


def outcomes(results) -> dict:
    assert [c.prop for c in results] == [prop for prop, _ in CHECKS]
    return {c.prop: c for c in results}


def assert_outcomes(results, failing: dict | None = None, skipped: dict | None = None) -> None:
    """Every check passes but those in ``failing`` (property -> a pattern its counter-example starts with) and
    ``skipped`` (property -> text in the skip's reason)."""
    failing, skipped = failing or {}, skipped or {}
    for prop, check in outcomes(results).items():
        if prop in failing:
            assert check.passed is False and re.match(failing[prop], check.counterexample()), table(results)
        elif prop in skipped:
            assert check.passed is None and skipped[prop] in check.detail, table(results)
        else:
            assert check.passed is True, table(results)


# ------------------------------------------------------------------------------------------ shipped adapters


def test_the_fixture_passes_every_check():
    results = adapter_checks(lambda: build_fixture_adapter(seed=0), "fixture")
    assert_outcomes(results)


def test_the_embedded_model_passes_every_check():
    from ticktock.embedded.model import load_embedded_adapter

    results = adapter_checks(load_embedded_adapter, "embedded")
    assert_outcomes(results)


@pytest.fixture(scope="module")
def miniatures(tmp_path_factory):
    """Miniature checkpoints of every real family (MiniCPM-o 4.5 is Gander's base)."""
    from ticktock.miniatures.minicpmo import write_miniature
    from ticktock.miniatures.qwen_omni import write_streaming_slm_miniature

    root = tmp_path_factory.mktemp("miniatures")
    gander = write_miniature("gander", root / "gander")
    return {"minicpmo45": gander / "base", "gander": gander,
            "realtime_venus": write_miniature("realtime_venus", root / "venus"),
            "lws": write_miniature("lws", root / "lws"), "streaming_slm": write_streaming_slm_miniature(root / "slm")}


@pytest.mark.parametrize("model", ["minicpmo45", "gander", "realtime_venus", "lws", "streaming_slm"])
def test_every_real_family_passes_on_its_miniature(miniatures, model):
    from ticktock.replay.config import build, compose_run

    cfg = compose_run("ar", model, None, [f"model.path={miniatures[model]}"])
    results = adapter_checks(lambda: build(cfg.model), model)
    assert_outcomes(results, skipped={PIECEWISE: NO_EARLY_PREFILL})  # whole-chunk front-ends: no early prefill


# ------------------------------------------------------------------------------------------ broken on purpose


class HonestFixture(HFUnitAdapter):
    """The fixture with its stateful silence declared: the control every broken adapter below departs from."""

    @property
    def silence_depends_on_state(self) -> bool:
        return True


class RestoreForgetsFrontEnd(HonestFixture):
    def restore(self, state):
        self._truncate(state.cache_length)


class RestoreForgetsCache(HonestFixture):
    def restore(self, state):
        self.frontend_state = state.frontend_state


class KeepKeepsLeadingRows(HonestFixture):
    """``keep`` keeps the first ``len(indices)`` positions after ``start``: right only for the tree's first nodes."""

    def keep(self, start, indices):
        self._truncate(start + len(list(indices)))


class ClaimsStatelessSilence(HonestFixture):
    @property
    def silence_depends_on_state(self) -> bool:
        return False


class TreeRunAsChain(HonestFixture):
    """Ignores the ``TreeLayout``: every draft node sees all the nodes before it."""

    def forward(self, segments, tree=None, logits_from=0):
        return super().forward(segments, None, logits_from)


class NoReplica(HonestFixture):
    replica = ModelAdapter.replica


def fixture_as(cls):
    """A ``build()`` of the fixture's weights, tokenizer and front-end in adapter class ``cls``."""

    def build():
        base = build_fixture_adapter(seed=0)
        return cls(base.model, base.tokenizer, base.frontend, base.protocol, name=cls.__name__,
                   system_prompt=base.system_prompt)

    return build


def test_the_honest_fixture_passes_every_check():
    assert_outcomes(adapter_checks(fixture_as(HonestFixture), "honest"))


@pytest.mark.parametrize("cls, prop, where", [
    (RestoreForgetsFrontEnd, RESTORE, re.escape("front-end after restore: the next chunk's embeddings, embedding 0,")),
    (RestoreForgetsCache, RESTORE, r"cache length after restore \(round 1\): \d+, snapshot's \d+$"),
    (KeepKeepsLeadingRows, KEEP, r"keep\((\d+), \[4, 5\]\) against the chain: cache layer 0 keys, position \1,"),
    (ClaimsStatelessSilence, SILENCE, STATELESS_SILENCE_CLAIM),
])
def test_a_broken_adapter_is_caught_by_its_check_alone(cls, prop, where):
    assert_outcomes(adapter_checks(fixture_as(cls), cls.__name__), failing={prop: where})


def test_a_tree_forward_run_as_a_chain_is_caught_at_the_first_node_off_the_first_branch():
    results = outcomes(adapter_checks(fixture_as(TreeRunAsChain), "tree as chain"))
    assert results[TREE].passed is False, table(list(results.values()))
    first_off_branch = "tree forward against the chain to draft node 3 (0-3), draft node 3, token id"
    assert results[TREE].where.startswith(first_off_branch)
    assert results[KEEP].passed is False and results[RESTORE].passed is True  # its kept branch was computed wrongly too


def test_without_replica_the_replica_checks_are_declared_skips():
    reason = "cannot replay several sessions at once"
    assert_outcomes(adapter_checks(fixture_as(NoReplica), "no replica"), skipped={REPLICA: reason, BATCHED: reason})


def test_an_adapter_that_cannot_be_built_fails_every_check_naming_why():
    def build():
        raise FileNotFoundError("weights/model.safetensors")

    results = adapter_checks(build, "unbuildable")
    raised_at = f"{__name__.rsplit('.', 1)[-1]}.py:{build.__code__.co_firstlineno + 1}"
    expected = f"build(): FileNotFoundError: weights/model.safetensors (at {raised_at})"
    assert len(results) == len(CHECKS)
    assert all(c.passed is False and c.counterexample() == expected for c in results), table(results)
