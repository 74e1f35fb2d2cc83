"""A live endpoint's wire protocol as a plug-in: one module and an entry point in ``ticktock.protocols``, selected with
``protocol=<name>`` like a shipped one (``ticktock.plugins``). The distribution is made on the spot (a dist-info
folder on ``sys.path``), as in ``tests/test_plugins.py``; nothing is installed."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from live_runs import live_run
from scripted_server import scripted

# A protocol plug-in: vLLM-Omni's duplex contract without playback acknowledgements (a server that keeps none).
MODULE = '''
from ticktock.api import EndpointProtocol
from ticktock.endpoints.vllm_omni_duplex import VllmOmniDuplex


class QuietDuplex(VllmOmniDuplex):
    api_version = 1

    def played(self, played_ms, response_id):
        return []


class NotAProtocol:
    per_unit = True
'''


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on ``sys.path`` holding the module and a distribution registering ``quiet_duplex`` and ``wrong``."""
    folder = tmp_path / "site"
    info = folder / "fake_protocols-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-protocols\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[ticktock.protocols]\nquiet_duplex = fake_protocol_plugin:QuietDuplex\n"
                                           "wrong = fake_protocol_plugin:NotAProtocol\n")
    (folder / "fake_protocol_plugin.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    sys.modules.pop("fake_protocol_plugin", None)


def test_a_protocol_plugin_selected_by_name_holds_a_live_run(site, tmp_path):
    from helpers import write_sessions

    manifest = write_sessions(tmp_path / "corpus", count=1)
    with scripted(ping_s=0.2) as server:
        summary = live_run(tmp_path / "run", server.url, "protocol=quiet_duplex", f"task.manifest={manifest}",
                           "task.tool_executor=null", "limit.chunks=2", "model.unit_timeout_s=2")
    summary.check_finished()
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["clock"]["name"] == "live:quiet_duplex" and meta["clock"]["protocol"]["per_unit"] is True
    assert server.closed_by[1] == "session.close"


def test_a_protocol_plugin_that_is_not_an_endpoint_protocol_is_one_line(site):
    from ticktock.plugins import PluginError, register_selected

    with pytest.raises(PluginError) as failure:
        register_selected(["protocol=wrong"])
    assert "is not a subclass of ticktock.api.EndpointProtocol" in str(failure.value)
    assert "\n" not in str(failure.value)
