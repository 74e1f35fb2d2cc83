import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def fixture_adapter():
    from ticktock.adapters.fixture import build_fixture_adapter

    return build_fixture_adapter(seed=0)


@pytest.fixture(scope="session")
def small_manifest(tmp_path_factory):
    from helpers import write_sessions

    return write_sessions(tmp_path_factory.mktemp("manifest"), count=3)


def pytest_configure(config):
    """One intra-op thread per test process, and per process a test starts (``OMP_NUM_THREADS=1``, inherited by every
    ``python -m ticktock...`` subprocess; a test that checks the default threads removes it from its child's
    environment): pytest-xdist runs three processes on CI's two cores (the README's ``-n 3``: one of them often waits
    on a live session's real-time clock), and a subprocess on torch's default (one thread per core) spins against
    the other workers."""
    import os

    import torch

    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"
    # The hundreds of `python -m ticktock...` processes the tests start cache TickTock's compiled modules as any Python
    # does: a shell that sets PYTHONDONTWRITEBYTECODE would make every one of them compile them again.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory) -> Path:
    """A folder every worker of this test session sees (pytest-xdist: the parent of the workers' own base folders),
    for outputs made once per session (``helpers.made_once``)."""
    import os

    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def miniatures(shared_dir) -> dict:
    """Each real family's miniature checkpoint, written once per test session (``helpers.shared_miniatures``)."""
    from helpers import shared_miniatures

    return shared_miniatures(shared_dir)


@pytest.fixture(scope="session")
def embedded_adapter():
    from ticktock.embedded.model import load_embedded_adapter

    return load_embedded_adapter()


@pytest.fixture(autouse=True)
def root_logging_restored():
    """The root logger as it was before each test: a test that runs Hydra in process leaves handlers there that write
    to that test's captured streams, closed once it ends, so a later test's in-process server (its access log) would
    print ``--- Logging error ---`` into the output, depending on which tests ran before it on that worker."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
