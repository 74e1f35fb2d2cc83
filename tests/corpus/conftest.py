"""Small corpora generated once for the whole tests/corpus suite: one evaluation session per task, and a few
training sessions per task (``train_corpus``, for the tests that need every kind of every task)."""

from __future__ import annotations

import pytest

from ticktock.corpus.splits import EVAL_SEED_LIMIT
from ticktock.corpus.synth import generate
from ticktock.corpus.tasks import BUILDERS

SEED = 0
TRAIN_SEED = EVAL_SEED_LIMIT  # the first training seed
TRAIN_SESSIONS_PER_TASK = 4  # fdb_v1 / fdb_v1_5 rotate through 4 kinds, fdb_v3 through 3 difficulties


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus_a")
    generate(out, list(BUILDERS), "eval", SEED, 1)
    return out


@pytest.fixture(scope="session")
def corpus(corpus_dir):
    from ticktock.sessions.manifest import load_manifest

    return load_manifest(corpus_dir / "manifest.jsonl")


@pytest.fixture(scope="session")
def train_corpus(tmp_path_factory):
    from ticktock.sessions.manifest import load_manifest

    out = tmp_path_factory.mktemp("corpus_train")
    generate(out, list(BUILDERS), "train", TRAIN_SEED, TRAIN_SESSIONS_PER_TASK)
    return load_manifest(out / "manifest.jsonl")
