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
    """One intra-op thread per test process: pytest-xdist runs two processes on CI's two cores."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def embedded_adapter():
    from ticktock.embedded.model import load_embedded_adapter

    return load_embedded_adapter()
