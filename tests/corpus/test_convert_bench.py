"""All six converters into one data root, read back through the ``ticktock_bench`` task config."""

from __future__ import annotations

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

import test_convert_big_bench_audio as bbh
import test_convert_fdb_v1 as fdb_v1
import test_convert_fdb_v1_5 as fdb_v1_5
import test_convert_fdb_v3 as fdb_v3
import test_convert_openaudiobench as oab
import test_convert_voicebench_alpacaeval as voicebench
from ticktock.corpus.convert import convert
from ticktock.sessions.manifest import TASK_TYPES
from ticktock.replay.resources import register_resolver
from ticktock.shipped import resource_path


def test_ticktock_bench_reads_all_eight_task_types(tmp_path, monkeypatch):
    downloads = tmp_path / "downloads"
    sources = {
        "openaudiobench": oab.make_copy(downloads / "OpenAudioBench"),
        "voicebench_alpacaeval": voicebench.write_encoded(downloads / "voicebench/alpacaeval/test-00000-of-00001.parquet"),
        "big_bench_audio": bbh.make_copy(downloads / "big_bench_audio"),
        "fdb_v1": fdb_v1.make_copy(downloads / "v1_0"),
        "fdb_v3": downloads / "v3",
    }
    fdb_v3.make_sample(sources["fdb_v3"], "ecommerce_02_spk11", fdb_v3.ORDER)
    sources["fdb_v1_5"] = downloads / "v1_5"
    fdb_v1_5.make_sample(sources["fdb_v1_5"] / "user_interruption" / "1")
    data = tmp_path / "data"
    for source, src in sources.items():
        convert(source, src, data / "tickbench" / source, limit=1, warn=lambda line: None)

    monkeypatch.setenv("TICKTOCK_DATA", str(data))
    register_resolver()
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        cfg = compose("run", overrides=["task=ticktock_bench"])
    task = instantiate(cfg.task)
    sessions = task.sessions()
    assert sorted({s.task for s in sessions}) == sorted(TASK_TYPES)
    assert task.tool_executor is not None
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        cfg = compose("run", overrides=["task=openaudiobench_web_questions"])
    assert [s.session_id for s in instantiate(cfg.task).sessions()] == ["web_questions-0000"]
