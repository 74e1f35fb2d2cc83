"""A small corpus (one session per task) generated once for the whole tests/corpus suite."""

from __future__ import annotations

import pytest

from ticktock.corpus.synth import generate
from ticktock.corpus.tasks import BUILDERS

SEED = 0


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus_a")
    generate(out, list(BUILDERS), "eval", SEED, 1)
    return out


@pytest.fixture(scope="session")
def corpus(corpus_dir):
    from ticktock.manifest import load_manifest

    return load_manifest(corpus_dir / "manifest.jsonl")
