"""Sharded runs (``ticktock.replay.shards``): the split of a run's sessions over its shards, the shard options, and what
the tables and ``ticktock runs`` say about the shards of a split. The launchers' end-to-end runs are in
test_launchers.py."""

import random
from pathlib import Path

import pytest

from ticktock.replay.config import RunOptionError, check_run_options, compose_run, identity, shard_sessions
from ticktock.replay.shards import ShardError, ShardSpec, Split, assign_shards, folder_suffix, group_splits


def test_the_split_covers_every_session_once_and_is_balanced_by_chunks():
    rng = random.Random(0)
    work = {f"s{i:03d}": rng.randint(4, 60) for i in range(97)}
    for count in (1, 2, 3, 8):
        split = assign_shards(work, count)
        assert sorted(split) == sorted(work) and set(split.values()) <= set(range(count))
        loads = [sum(c for s, c in work.items() if split[s] == i) for i in range(count)]
        assert max(loads) - min(loads) <= max(work.values()), loads  # greedy longest-first: within one session


def test_the_split_does_not_depend_on_the_order_the_sessions_come_in():
    work = {f"fdb_v3-{i:04d}": 8 + i % 5 for i in range(40)}
    shuffled = list(work.items())
    random.Random(1).shuffle(shuffled)
    assert assign_shards(dict(shuffled), 4) == assign_shards(work, 4)


def test_the_split_is_the_same_in_every_process():
    # equal lengths: the order comes from SHA-256 of the ids alone (Python's hash() is salted per process)
    assert assign_shards({"a": 5, "b": 5, "c": 5, "d": 5}, 2) == {"d": 0, "c": 1, "b": 0, "a": 1}


def test_more_shards_than_sessions_leaves_shards_empty():
    assert sorted(assign_shards({"a": 3, "b": 2}, 4).values()) == [0, 1]


@pytest.mark.parametrize("shard, message", [
    ({"index": 0, "count": 0}, "shard.count: must be an integer >= 1 (1: no sharding), got 0"),
    ({"index": 0, "count": "4"}, "shard.count: must be an integer >= 1 (1: no sharding), got '4'"),
    ({"index": 4, "count": 4}, "shard.index: must be an integer from 0 to shard.count - 1 = 3, got 4"),
    ({"index": -1, "count": 4}, "shard.index: must be an integer from 0 to shard.count - 1 = 3, got -1"),
    ({"index": True, "count": 2}, "shard.index: must be an integer from 0 to shard.count - 1 = 1, got True"),
])
def test_bad_shard_options_are_one_line_naming_the_key(shard, message):
    with pytest.raises(ShardError) as caught:
        ShardSpec.parse(shard)
    assert str(caught.value) == message


@pytest.mark.parametrize("override, message", [
    ("shard.index=4", "shard.index: must be an integer from 0 to shard.count - 1 = 0, got 4"),
    ("threads=0", "threads: must be null (torch's default) or an integer >= 1, got 0"),
    ("device=gpu", "device: must be null, auto, cpu, cuda or cuda:K (K an integer), got 'gpu'"),
    ("device=cuda:x", "device: must be null, auto, cpu, cuda or cuda:K (K an integer), got 'cuda:x'"),
])
def test_the_run_options_are_checked_before_any_work(override, message):
    with pytest.raises(RunOptionError if not override.startswith("shard") else ShardError) as caught:
        check_run_options(compose_run("ar", "fixture", None, [override]))
    assert str(caught.value) == message


def test_a_gpu_that_is_not_there_is_refused_naming_what_is_visible():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(RunOptionError) as caught:
        check_run_options(compose_run("ar", "fixture", None, ["device=cuda"]))
    assert str(caught.value).startswith("device: cuda asked for, but this process sees no CUDA device (CUDA_VISIBLE_DEVICES")


def test_device_reaches_the_model_and_cpu_runs_on_the_cpu():
    from ticktock.replay.config import build

    cfg = compose_run("ar", "fixture", None, ["device=cpu"])
    assert cfg.model.device == "cpu" and str(build(cfg.model).device) == "cpu"
    assert compose_run("ar", "embedded", None, []).model.device is None  # the model's own default: cpu


def test_every_shard_of_a_run_computes_the_same_split_and_they_cover_the_run():
    from ticktock.replay.config import build, select_sessions

    parts, splits = [], set()
    for index in range(3):
        cfg = compose_run("ar", "fixture", 2, [f"shard.index={index}", "shard.count=3", "limit.chunks=5"])
        sessions = select_sessions(cfg, build(cfg.task))
        kept, record = shard_sessions(cfg, sessions, {**identity(cfg), "weights": "w"})
        parts.append({s.session_id for s in kept})
        splits.add(record["split"])
        assert record["index"] == index and record["count"] == 3 and record["split_sessions"] == len(sessions) == 16
        assert record["sessions"] == len(kept) and record["split_chunks"] == 16 * 5
    assert len(splits) == 1 and sum(map(len, parts)) == 16 and len(set().union(*parts)) == 16
    other = compose_run("pld", "fixture", 2, ["shard.index=0", "shard.count=3", "limit.chunks=5"])
    sessions = select_sessions(other, build(other.task))
    assert shard_sessions(other, sessions, {**identity(other), "weights": "w"})[1]["split"] not in splits


def test_the_shard_is_part_of_a_sharded_runs_identity_only():
    plain = identity(compose_run("ar", "fixture", None, []))
    assert "shard" not in plain  # whole runs keep the identity they had before sharding existed: they resume
    shard = identity(compose_run("ar", "fixture", None, ["shard.index=1", "shard.count=2"]))
    assert shard["shard"] == {"index": 1, "count": 2} and {k: v for k, v in shard.items() if k != "shard"} == plain


def test_a_shards_folder_in_a_sweep_says_which_shard_it_is():
    assert folder_suffix(0, 1) == "" and folder_suffix(2, 4) == "-shard2of4"
    with_shard = compose_run("ar", "fixture", None, ["shard.index=2", "shard.count=4"])
    from omegaconf import OmegaConf

    assert OmegaConf.select(with_shard, "shard") == {"index": 2, "count": 4}


def meta(index, count, status="complete", split="abc", done=2):
    config = {k: {"name": v} for k, v in (("model", "m"), ("decoder", "ar"), ("clock", "modeled"), ("task", "mini"))}
    return (Path(f"runs/{index}of{count}"), {"config": config, "shard": {
        "index": index, "count": count, "split": split, "split_sessions": 8}}, status, done)


def test_a_split_with_every_shard_once_and_complete_has_no_problems():
    [split] = group_splits([meta(i, 4) for i in range(4)] + [(Path("whole"), {"config": {}}, "complete", 8)])
    assert split.problems() == []
    assert split.summary() == "sharded run m/ar/modeled/mini (split abc): 4 of 4 shards, 4 complete; sessions 8/8"


def test_a_split_names_its_missing_twice_and_failed_shards():
    runs = [meta(0, 4), meta(1, 4, "failed: RuntimeError: out of memory", done=1), meta(1, 4)]
    [split] = group_splits(runs)
    assert split.missing() == [2, 3] and list(split.twice()) == [1]
    kinds = [kind for kind, _ in split.problems()]
    assert kinds == ["twice", "missing", "failed"]
    messages = dict(split.problems())
    assert messages["missing"].startswith("sharded run m/ar/modeled/mini (split abc): shard(s) 2, 3 of 4 missing (3 found")
    assert "shard 1 of 4 (runs/1of4) is failed: RuntimeError: out of memory; rerun it" in messages["failed"]
    assert split.summary() == ("sharded run m/ar/modeled/mini (split abc): 2 of 4 shards (missing: 2, 3), 2 complete, "
                               "1 failed (shard 1), shard 1 twice; sessions 5/8")


def test_shards_of_different_counts_cannot_be_combined():
    [split] = group_splits([meta(0, 2), meta(1, 2), meta(3, 4)])
    kind, message = split.problems()[0]
    assert kind == "counts" and "runs/3of4 is shard 3 of 4" in message and message.endswith("pass one split only")


def test_different_splits_are_told_apart():
    splits = group_splits([meta(0, 2, split="x"), meta(0, 2, split="y")])
    assert [s.split for s in splits] == ["x", "y"] and all(s.missing() == [1] for s in splits)


def test_a_split_is_a_plain_record():
    assert Split("x", 2, "m/ar/c/t", 4).missing() == [0, 1]


def test_the_one_job_per_gpu_pattern_names_the_gpu_from_the_shard():
    cfg = compose_run("ar", "gander", None, ["shard.index=3", "shard.count=8", "device=cuda:${shard.index}"])
    assert cfg.device == "cuda:3" and cfg.model.device == "cuda:3"  # README "Running at scale", Devices
