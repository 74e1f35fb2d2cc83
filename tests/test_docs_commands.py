"""Every command shown in README.md and docs/*.md (their ```bash blocks) is run here, as a user would type it.

Each command is matched by exactly one rule of ``RULES`` (keyed by the command's exact text), which says how it is
run; a command in the docs that no rule names fails ``test_every_command_has_exactly_one_rule``, so a new command
cannot slip into the docs untested, and a rule no command uses fails too. How a command is run:

- ``RUN``: as written, with ``bash -c``, in a fresh folder that stands for the checkout (``scripts/``, ``configs/``,
  ``manifests/`` and ``.venv`` are links to the real ones; ``python`` and ``ticktock`` are this venv's; ``HOME`` is
  a fresh folder, so ``~/...`` paths land in it);
- ``LIMIT``: as written plus the rule's ``args`` at the end, which only limit the work (fewer sessions, chunks,
  steps: Hydra ``limit.*`` overrides, or an argparse flag repeated with a smaller value, the last one counting);
- ``COMPOSE``: a Hydra command that cannot run here (a GPU, a SLURM or Ray cluster): every job of its sweep is
  composed, with its launcher settings, and resolved, as ``--cfg job`` would (which checks every override);
- ``STAND_IN``: a download (``hf download``) is not run; a stand-in writes what it would write (a miniature
  checkpoint in the real layout, from ``ticktock.miniatures``);
- ``ENV``: ``export NAME=VALUE``, evaluated by bash into the environment of the page's later commands;
- ``CI``: the test command of the README, which is this suite: ``.ci/run`` must run exactly that line;
- ``GPU``: a command that needs a CUDA GPU and is not a Hydra command (a model server): not run; its ``needs``
  check what it reads (the deploy file vLLM-Omni ships).

A rule's ``needs`` prepares what the docs tell the user to have first, by writing it where the command reads it:
the main job's results, small copies of the published datasets in their released layouts (written by the
converter tests' builders), a tiny judge model. A page's commands run in order in one folder, so a later command
sees what an earlier one wrote (the tables read the main job's runs). The main job, shared by several pages, runs
once per test session.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from itertools import product
from pathlib import Path

import pytest
from helpers import made_once, shared_miniatures

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VENV = Path(sys.prefix)  # the environment running the tests: `python`, `ticktock` and `.venv/bin/python` are its
LINKED = ("scripts", "configs", "manifests")  # what a command typed in the checkout finds beside it

RUN, LIMIT, COMPOSE, STAND_IN, ENV, CI, ELSEWHERE = "run", "limit", "compose", "stand-in", "env", "ci", "elsewhere"
GPU = "gpu"
SETUP = re.compile(r"python3 -m venv \.venv && \.venv/bin/pip install -e '\.\[([a-z,-]+)\]'(?: -e [\w./-]+)* && (?P<rest>.+)")
ONE_SESSION = "limit.sessions=1 limit.chunks=4"
TWO_SESSIONS = "limit.sessions=2 limit.chunks=2"


@dataclass(frozen=True)
class Rule:
    """How one command of the docs is run (see the module docstring); ``why`` says why it is not run as written."""

    how: str
    args: str = ""
    needs: tuple[str, ...] = ()
    exit_code: int = 0
    says: str = ""  # text the command's output must contain
    once: bool = False  # run once per test session, its output shared by every page that shows or needs it
    where: str = ""  # ELSEWHERE: the test file that runs this very command (it shows the command in a comment)
    why: str = ""


RULES: dict[str, Rule] = {
    # README: the two commands, everyday use
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test,cluster,voices,serve-test]' -e examples/ticktock-example-plugins && .venv/bin/pip install --no-deps vllm-omni==0.30.0 && .venv/bin/python scripts/peers/vllm_omni.py build && .venv/bin/python -m pytest -n 3 -q --durations=20":
        Rule(CI, why="this test suite: CI (.ci/run) runs exactly this line"),
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m ticktock.main_job --out results/main":
        Rule(LIMIT, "--per-task 1 --decoders ar,speclisten --temperatures '' limit.chunks=4", says="report:", once=True,
             why="the 6-minute job on 1 session per task, 2 decoders, 4 chunks; the venv setup is CI's own line"),
    "python -m ticktock.run": Rule(LIMIT, ONE_SESSION, why="the whole mini corpus takes minutes"),
    "python -m ticktock.run decoder=speclisten clock=wall": Rule(LIMIT, ONE_SESSION),
    "python -m ticktock.run -m decoder=ar,pld,recycling,lookahead,speclisten task=fdb_v3": Rule(LIMIT, ONE_SESSION),
    "python -m ticktock.run experiment=smoke": Rule(RUN, says="1 sessions (0 skipped), 4 chunks"),
    "python -m ticktock.runs results/runs": Rule(RUN, says="complete"),
    "python -m ticktock.tables results/main/runs --out results/tables": Rule(RUN, needs=("main results",)),
    # docs/real-models.md
    "hf download Gander-Omni/Gander --local-dir ~/ckpt/gander":
        Rule(STAND_IN, needs=("gander miniature",), why="no network: a Gander miniature in the real layout"),
    "hf download openbmb/MiniCPM-o-4_5 --local-dir ~/ckpt/gander/base":
        Rule(STAND_IN, needs=("gander base",), why="no network: the Gander miniature holds its base in base/"),
    "python -m ticktock.run model=gander model.path=$HOME/ckpt/gander decoder=speclisten clock=wall":
        Rule(LIMIT, ONE_SESSION),
    "python scripts/make_miniature.py --model gander --out work_data/mini-gander": Rule(RUN),
    "python -m ticktock.calibrate model=minicpmo45 model.random_init=true device=cuda "
    "out=minicpmo45-profile.yaml": Rule(COMPOSE, why="needs a CUDA GPU"),
    # docs/gpu.md (and the real-models.md downloads above): every GPU line is run, and must stop in one line
    "source .venv/bin/activate": Rule(RUN, why="each command runs in its own shell here: activating is checked to work"),
    "python -c \"import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())\"":
        Rule(RUN, says="2.13.0", why="this machine's torch: the CPU build"),
    "python -m ticktock.adapters.doctor": Rule(RUN, needs=("real-model miniatures",), says="gander"),
    "export TICKTOCK_WEIGHTS_GANDER=$HOME/ckpt/gander": Rule(ENV),
    "hf download openbmb/MiniCPM-o-4_5 --local-dir ~/ckpt/minicpmo45":
        Rule(STAND_IN, needs=("real-model miniatures",), why="no network: the MiniCPM-o 4.5 miniature"),
    "hf download inclusionAI/Realtime-Venus --local-dir ~/ckpt/realtime-venus":
        Rule(STAND_IN, needs=("real-model miniatures",), why="no network: the Realtime-Venus miniature, in its folder"),
    "hf download Qwen/Qwen2.5-Omni-7B --local-dir ~/ckpt/qwen2.5-omni-7b":
        Rule(STAND_IN, needs=("real-model miniatures",), why="no network: the Qwen2.5-Omni miniature"),
    "python -m ticktock.run model=gander model.path=$HOME/ckpt/gander device=cuda decoder=speclisten limit.sessions=2":
        Rule(RUN, exit_code=2, says="ticktock: error: device: cuda asked for, but this process sees no CUDA device",
             why="no GPU here: the one line it stops with, before any work"),
    "python -m ticktock.calibrate --gpu model=gander":
        Rule(RUN, exit_code=2, says="ticktock: error: --gpu: this process sees no CUDA device",
             why="no GPU here: the one line it stops with, before any work"),
    "python -m ticktock.calibrate --gpu model=streaming_slm model.path=$HOME/ckpt/qwen2.5-omni-7b":
        Rule(RUN, exit_code=2, says="ticktock: error: --gpu: this process sees no CUDA device",
             why="no GPU here: the one line it stops with, before any work"),
    "python -m ticktock.corpus.bench build --out $TICKTOCK_DATA/tickbench --src fdb_v1=~/dl/fdb --src fdb_v1_5=~/dl/fdb "
    "--src fdb_v3=~/dl/fdb_v3_data_released "
    "--backchannel-gt ~/src/Full-Duplex-Bench/v1_v1.5/evaluation/icc_gt_distribution.json":
        Rule(RUN, needs=("downloads",), says="paper: 760 sessions, 15,883 chunks",
             why="small copies of the Full-Duplex-Bench sources; the Hub sources are missing offline"),
    "python -m ticktock.run -m hydra.sweep.dir=results/sweeps/gander task=ticktock_bench device=cuda model=gander "
    "model.path=$HOME/ckpt/gander clock=modeled clock.profile=configs/profiles/$GPU_PROFILE "
    "decoder=ar,pld,recycling,lookahead,speclisten": Rule(COMPOSE, why="a GPU, the real weights and its profile"),
    "export GPU_PROFILE=nvidia-a100-sxm4-80gb-gander.yaml": Rule(ENV),
    "python -m ticktock.tables results/sweeps/gander --out results/tables/gander":
        Rule(RUN, needs=("gander miniature sweep",), why="the sweep's stand-in: AR and SL on the Gander miniature"),
    # docs/replay.md
    "python scripts/bench_stream.py": Rule(LIMIT, f"--per-task 1 --temperatures 0.0 {TWO_SESSIONS}",
                                           why="40 minutes on the whole corpus"),
    # docs/serving.md (and the README)
    "python -m ticktock.serve decoder=speclisten_stream talker=espeak":
        Rule(ELSEWHERE, where="tests/serve/test_serve_command.py", why="a server runs until Ctrl-C: run there"),
    "python -m ticktock.serve decoder=speclisten_stream concurrency.batching=true concurrency.batch_encodings=true":
        Rule(ELSEWHERE, where="tests/serve/test_served_device.py", why="a server runs until Ctrl-C: its sessions there"),
    "python scripts/bench_served_capacity.py":
        Rule(LIMIT, "--decoders ar --batching false --ns 1 --speak-ns 1 limit.sessions=1 limit.chunks=2",
             says="served capacity",
             why="about 40 minutes for every decoder and sharing"),
    "python scripts/bench_serve.py": Rule(LIMIT, "--runs 1 --sessions 1 --seconds 3", says="speak-unit speedup",
                                          why="about 4 minutes for 4 sessions x 3 runs"),
    "python -m ticktock.run -m clock.profile=configs/profiles/a100-8b-derived.yaml,configs/profiles/a100-8b-published-encoder.yaml "
    "concurrency.sessions=4 concurrency.batch_encodings=true":
        Rule(LIMIT, "limit.sessions=4 limit.chunks=2", why="N is at most the sessions a run replays"),
    # docs/concurrency.md
    "python -m ticktock.run decoder=speclisten_stream concurrency.sessions=4 concurrency.batch_encodings=true":
        Rule(LIMIT, "limit.sessions=4 limit.chunks=2", why="N is at most the sessions a run replays"),
    "python -m ticktock.run decoder=speclisten_plus concurrency.sessions=4":
        Rule(LIMIT, "limit.sessions=4 limit.chunks=2", why="N is at most the sessions a run replays"),
    "python scripts/bench_concurrency.py --sessions 1,2,4,8":
        Rule(LIMIT, "--per-task 1 --decoders speclisten_plus --policies expected_savings --sessions 1,4 limit.sessions=4 "
                    "limit.chunks=2", why="N = 1 and N = 4 (4 sessions); N = 8 replays 8 sessions of each run"),
    "python scripts/bench_capacity.py --out results/capacity":
        Rule(LIMIT, f"--per-task 1 --decoders ar,speclisten --batching false --limit 2 {TWO_SESSIONS}",
             why="about 30 minutes for the whole search"),
    # docs/scale.md
    "python -m ticktock.run -m decoder=ar,speclisten hydra/launcher=joblib hydra.launcher.n_jobs=2":
        Rule(LIMIT, ONE_SESSION),
    "python -m ticktock.run -m hydra/launcher=slurm hydra.launcher.partition=gpu hydra.launcher.timeout_min=720 "
    "hydra.sweep.dir=results/sweeps/paper-grid task=ticktock_bench clock=wall device=cuda "
    "model=gander,realtime_venus,streaming_slm decoder=ar,pld,recycling,lookahead,speclisten":
        Rule(COMPOSE, why="a SLURM cluster with GPUs"),
    "python -m ticktock.run -m hydra/launcher=slurm hydra.launcher.partition=gpu "
    "hydra.sweep.dir=results/sweeps/paper-grid-lws task=ticktock_bench clock=wall device=cuda model=lws "
    "model.path=$HOME/ckpt/lws decoder=ar,pld,recycling,lookahead,speclisten": Rule(COMPOSE, why="a SLURM cluster"),
    "python -m ticktock.run -m hydra/launcher=ray hydra.launcher.ray.init.address=auto "
    "+hydra.launcher.ray.remote.num_gpus=1 hydra.sweep.dir=results/sweeps/temperatures task=ticktock_bench "
    "clock=wall device=cuda model=gander decoder=ar,speclisten sampling.temperature=0.3,1.0":
        Rule(COMPOSE, why="a Ray cluster with GPUs"),
    "python -m ticktock.run -m hydra/launcher=slurm hydra.launcher.partition=gpu "
    "hydra.sweep.dir=results/sweeps/gander-8way task=ticktock_bench clock=wall device=cuda model=gander "
    "decoder=ar,speclisten shard.count=8 'shard.index=range(0,8)'": Rule(COMPOSE, why="a SLURM cluster"),
    "python -m ticktock.runs results/sweeps": Rule(RUN, needs=("paper-grid sweeps",), says="complete"),
    "python -m ticktock.tables results/sweeps/paper-grid results/sweeps/paper-grid-lws --out results/tables/paper "
    "--strict": Rule(RUN, needs=("paper-grid sweeps",)),
    "python -m ticktock.run -m hydra/launcher=joblib hydra.launcher.n_jobs=8 hydra.sweep.dir=results/sweeps/node "
    "task=ticktock_bench clock=wall model=gander decoder=speclisten shard.count=8 'shard.index=range(0,8)' "
    "'device=cuda:${shard.index}'": Rule(COMPOSE, why="8 GPUs"),
    # docs/baselines.md
    "python -m ticktock.run decoder=lookahead decoder.lade_commit=true experiment=smoke":
        Rule(RUN, says="1 sessions (0 skipped), 4 chunks"),
    "python -m ticktock.run decoder=pld decoder.dummy_token=100 experiment=smoke":
        Rule(RUN, says="1 sessions (0 skipped), 4 chunks"),
    # docs/clocks.md
    "python -m ticktock.calibrate model=embedded out=my-profile.yaml":
        Rule(LIMIT, "'query_tokens=[1,16]' 'context_tokens=[0,256]' warmup=0 repeats=1 'batch_sizes=[]'",
             why="the full grid takes minutes"),
    "python -m ticktock.run clock.profile=my-profile.yaml": Rule(LIMIT, ONE_SESSION),
    # docs/talkers.md
    "python -m ticktock.run talker=espeak decoder=ar task=fdb_v3 hydra.run.dir=results/talk/ar":
        Rule(LIMIT, "limit.sessions=1 limit.chunks=11", says="1 sessions (0 skipped), 11 chunks",
             why="the first reply of one session (it speaks from chunk 8)"),
    "python -m ticktock.run talker=espeak decoder=speclisten_speak task=fdb_v3 hydra.run.dir=results/talk/speclisten_speak":
        Rule(LIMIT, "limit.sessions=1 limit.chunks=11", says="1 sessions (0 skipped), 11 chunks"),
    "python -m ticktock.calibrate model=embedded talker=espeak out=results/profiles/cpu-espeak.yaml":
        Rule(LIMIT, "'query_tokens=[1]' 'context_tokens=[0]' warmup=0 repeats=1 'batch_sizes=[]' talker_repeats=1",
             says="talker", why="the full grid takes minutes"),
    "python -m ticktock.tables results/talk --out results/talk-tables --listen fdb_v3-eval-0-0000":
        Rule(RUN, says="onset"),
    # docs/real-data.md
    "export TICKTOCK_DATA=$PWD/data": Rule(ENV),
    "python -m ticktock.corpus.convert fdb_v3 --src ~/dl/fdb_v3_data_released --check":
        Rule(RUN, needs=("downloads",), says="fdb_v3"),
    "python -m ticktock.corpus.convert openaudiobench --src ~/dl/OpenAudioBench "
    "--out $TICKTOCK_DATA/tickbench/openaudiobench": Rule(RUN, needs=("downloads",)),
    "python -m ticktock.corpus.convert voicebench_alpacaeval --src ~/dl/voicebench "
    "--out $TICKTOCK_DATA/tickbench/voicebench_alpacaeval": Rule(RUN, needs=("downloads",)),
    "python -m ticktock.corpus.convert big_bench_audio --src ~/dl/big_bench_audio "
    "--out $TICKTOCK_DATA/tickbench/big_bench_audio": Rule(RUN, needs=("downloads",)),
    "python -m ticktock.corpus.convert fdb_v1 --src ~/dl/fdb --out $TICKTOCK_DATA/tickbench/fdb_v1 "
    "--backchannel-gt ~/src/Full-Duplex-Bench/v1_v1.5/evaluation/icc_gt_distribution.json":
        Rule(RUN, needs=("downloads",)),
    "python -m ticktock.corpus.convert fdb_v1_5 --src ~/dl/fdb --out $TICKTOCK_DATA/tickbench/fdb_v1_5":
        Rule(RUN, needs=("downloads",)),
    "python -m ticktock.corpus.convert fdb_v3 --src ~/dl/fdb_v3_data_released --out $TICKTOCK_DATA/tickbench/fdb_v3":
        Rule(RUN, needs=("downloads",)),
    "python -m ticktock.run task=ticktock_bench": Rule(LIMIT, ONE_SESSION),
    # docs/datasets.md
    "python -m ticktock.corpus.bench export manifests/ticktock-mini --out mini-dataset --name TickTock-Bench-mini":
        Rule(RUN, says="sessions= 104 chunks=  1890"),
    "python -c 'from datasets import Audio, load_dataset; rows = load_dataset(\"mini-dataset\", \"fdb_v3\", "
    "split=\"test\").cast_column(\"audio\", Audio(decode=False)); print(rows); print(rows[0][\"session_id\"], "
    "len(rows[0][\"audio\"][\"bytes\"]), \"bytes of FLAC\")'": Rule(RUN, says="num_rows: 13"),
    "python -m ticktock.run task=hf task.dataset=mini-dataset task.config=fdb_v3": Rule(LIMIT, ONE_SESSION),
    "python -m ticktock.corpus.bench fetch":
        Rule(RUN, exit_code=3, says="fetch it once online with: ticktock bench fetch openaudiobench",
             why="no network here: the one line it gives offline, with nothing cached"),
    "python -m ticktock.corpus.bench build --out $TICKTOCK_DATA/tickbench --src fdb_v3=~/dl/fdb_v3_data_released":
        Rule(RUN, needs=("downloads",), says="paper: 760 sessions, 15,883 chunks"),
    "python -m ticktock.corpus.bench export $TICKTOCK_DATA/tickbench --out tickbench-dataset": Rule(RUN, says="fdb_v3"),
    # docs/results.md
    "python -m ticktock.runs results/main/runs": Rule(RUN, needs=("main results",), says="complete"),
    "python -m ticktock.tables results/main/runs --out results/tables --case fdb_v3-eval-0-0000 "
    "--case-decoders ar,speclisten": Rule(RUN, needs=("main results",)),
    "python -m ticktock.probe task=ticktock_mini": Rule(LIMIT, ONE_SESSION),
    # docs/judging.md
    "ticktock judge results/main/runs judge=hf_local judge.path=models/my-judge":
        Rule(RUN, needs=("main results", "judge model")),
    # docs/extending.md
    ".venv/bin/pip install -e examples/ticktock-example-plugins":
        Rule(STAND_IN, needs=("example plug-ins",),
             why="installing would change the environment the tests run in: CI installs it, this checks it is"),
    "python -m ticktock.run decoder=pool_rank experiment=smoke":
        Rule(RUN, needs=("example plug-ins",), says="1 sessions (0 skipped), 4 chunks"),
    "python -m ticktock.certify decoder=pool_rank --quick":
        Rule(ELSEWHERE, where="tests/examples/test_example_plugins.py", why="2 minutes: run there, not twice"),
    "python -m ticktock.certify model=lws_fixture": Rule(ELSEWHERE, where="tests/examples/test_example_plugins.py"),
    # docs/errors.md
    "python -m ticktock.run limit.sessions=-1":
        Rule(RUN, exit_code=2, says="ticktock: error: limit.sessions: must be null or an integer >= 1, got -1"),
    # docs/endpoints.md (and the README)
    "python -m ticktock.serve decoder=ar serve.port=8099":
        Rule(ELSEWHERE, where="tests/endpoints/test_endpoints_quickstart.py",
             why="the quick start's two terminals: a server runs until Ctrl-C, and the live run needs it"),
    "python -m ticktock.run model=endpoint model.url=ws://127.0.0.1:8099/v1/realtime limit.sessions=2":
        Rule(ELSEWHERE, where="tests/endpoints/test_endpoints_quickstart.py", why="needs the quick start's server"),
    "python -m ticktock.tables results/runs --out results/tables":
        Rule(ELSEWHERE, where="tests/endpoints/test_endpoints_quickstart.py", why="reads the quick start's live run"),
    "python -m ticktock.run model=endpoint protocol=openai_realtime model.url=ws://127.0.0.1:8099/v1/realtime "
    "limit.sessions=2": Rule(ELSEWHERE, where="tests/endpoints/test_endpoints_quickstart.py",
                             why="needs the quick start's server"),
    "python scripts/peers/vllm_omni.py build":
        Rule(ELSEWHERE, where="tests/peers/test_vllm_omni_server.py", why="minutes the first time; the suite's own"),
    "python -m ticktock.embedded.real_layout --out work_data/embedded-v9 --code2wav":
        Rule(ELSEWHERE, where="tests/peers/test_vllm_omni_server.py", why="the real server's checkpoint there"),
    "python scripts/peers/vllm_omni.py serve --checkpoint work_data/embedded-v9 --port 8091":
        Rule(ELSEWHERE, where="tests/peers/test_vllm_omni_server.py",
             why="vLLM-Omni's server runs until Ctrl-C, about 9.5 GB: started once, in that test"),
    "python -m ticktock.run model=endpoint model.url=ws://127.0.0.1:8091/v1/realtime task=fdb_v3 limit.sessions=2 "
    "limit.chunks=8 concurrency.sessions=2 model.modalities=[text] model.extra_body={force_listen_count:10}":
        Rule(ELSEWHERE, where="tests/peers/test_vllm_omni_server.py", why="needs vLLM-Omni's server"),
    'python -m ticktock.run model=embedded_v9 decoder=ar "task.tasks=[fdb_v3,llama_questions]" limit.chunks=6 '
    "hydra.run.dir=runs/v9-replay":
        Rule(ELSEWHERE, where="tests/peers/test_vllm_omni_server.py",
             why="the cross-check's replay, there on three of these sessions (26 take 1.5 minutes)"),
    'python -m ticktock.run model=endpoint model.url=ws://127.0.0.1:8091/v1/realtime "task.tasks=[fdb_v3,'
    'llama_questions]" limit.chunks=6 model.modalities=[text] model.unit_timeout_s=60 hydra.run.dir=runs/v9-served':
        Rule(ELSEWHERE, where="tests/peers/test_vllm_omni_server.py", why="needs vLLM-Omni's server"),
    "python -m ticktock.tables.crosscheck runs/v9-replay runs/v9-served --min-agreement 0.95":
        Rule(ELSEWHERE, where="tests/peers/test_vllm_omni_server.py", why="compares the two runs above"),
    "pip install vllm-omni==0.30.0":
        Rule(STAND_IN, needs=("vllm-omni",),
             why="on the GPU machine (it installs vLLM): CI installs the same release --no-deps, this checks it is"),
    "vllm-omni serve openbmb/MiniCPM-o-4_5 --omni --deploy-config vllm_omni/deploy/minicpmo_4_5.yaml --port 8091":
        Rule(GPU, needs=("vllm-omni deploy file",),
             why="a CUDA GPU and the model's weights: the deploy file it reads is checked to say what the page says"),
    "python -m ticktock.run model=endpoint model.url=ws://GPUHOST:8091/v1/realtime task=ticktock_bench":
        Rule(COMPOSE, why="a vLLM-Omni server on a GPU"),
    "python -m ticktock.run -m model=endpoint model.url=ws://GPUHOST:8091/v1/realtime task=ticktock_bench "
    "concurrency.sessions=1,2,4": Rule(COMPOSE, why="a vLLM-Omni server on a GPU"),
    "python -m ticktock.run model=endpoint model.url=wss://GPUHOST/v1/realtime model.token_env=MY_TOKEN_VAR "
    "task=fdb_v3": Rule(COMPOSE, why="a server behind a token"),
    "python -m ticktock.run model=endpoint model.url=ws://127.0.0.1:9/v1/realtime limit.sessions=1":
        Rule(RUN, exit_code=5, says="ticktock: error: endpoint ws://127.0.0.1:9/v1/realtime?duplex=1: cannot connect"),
    # docs/embedded-model.md
    "python -m ticktock.corpus.synth --out my-corpus --seed 7 --sessions-per-task 95":
        Rule(LIMIT, "--sessions-per-task 1", why="760 sessions take most of an hour"),
    "python -m ticktock.corpus.augment --in my-corpus --out my-corpus-noisy --profile heldout --seed 3": Rule(RUN),
    "python -m ticktock.embedded.train --corpus my-train-corpus --generate 1000 --out my-model --steps 2800 "
    "--warmup 150 --task-weight fdb_v3=2":
        Rule(LIMIT, "--generate 3 --steps 1 --warmup 0 --batch-tokens 1000",
             why="~90 minutes: 3 sessions per task (the fewest it takes), one step of a small batch"),
}


# --- reading the docs ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Command:
    """One command shown in a ```bash block: continuation lines joined, its trailing comment dropped."""

    page: str
    line: int
    text: str


def code_blocks(path: Path) -> list[tuple[str, int, list[str]]]:
    """Every fenced block of a Markdown page: (info string, line of its first line, its lines)."""
    blocks, info, start, lines = [], None, 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            if info is None:
                info, start, lines = line[3:].strip(), number + 1, []
            else:
                blocks.append((info, start, lines))
                info = None
        elif info is not None:
            lines.append(line)
    return blocks


def without_comment(line: str) -> str:
    """A shell line without its trailing ``# comment`` (a ``#`` outside quotes, at the start or after a blank).

    >>> without_comment("python -m ticktock.run   # AR, 'quoted' # not")
    'python -m ticktock.run'
    >>> without_comment("echo '#not a comment' x#y")
    "echo '#not a comment' x#y"
    """
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def shown_commands(path: Path) -> list[Command]:
    """The commands of a page's ```bash blocks, in order."""
    page = str(path.relative_to(ROOT))
    commands = []
    for info, start, lines in code_blocks(path):
        if info != "bash":
            continue
        pending, first = "", 0
        for offset, line in enumerate(lines):
            text = without_comment(line)
            if not pending:
                first = start + offset
            if text.endswith("\\"):
                pending += text[:-1].strip() + " "
                continue
            text = (pending + text.strip()).strip()
            pending = ""
            if text:
                commands.append(Command(page, first, " ".join(text.split())))
    return commands


ALL_COMMANDS = [command for page in PAGES for command in shown_commands(page)]
PAGES_WITH_COMMANDS = [page for page in PAGES if shown_commands(page)]


# --- running them -------------------------------------------------------------------------------------------------

@dataclass
class Checkout:
    """A fresh folder standing for the checkout a user types the commands in, with its own HOME and environment."""

    folder: Path
    home: Path
    env: dict

    @classmethod
    def make(cls, base: Path) -> "Checkout":
        folder, home = base / "checkout", base / "home"
        folder.mkdir(parents=True)
        home.mkdir()
        for name in LINKED:
            (folder / name).symlink_to(ROOT / name)
        (folder / ".venv").symlink_to(VENV)
        env = {key: value for key, value in os.environ.items() if not key.startswith("TICKTOCK_")}
        env.update(HOME=str(home), PATH=f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}", OMP_NUM_THREADS="1",
                   HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MPLBACKEND="Agg")
        return cls(folder, home, env)

    def bash(self, text: str, timeout: int = 600) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-c", text], cwd=self.folder, env=self.env, capture_output=True, text=True,
                              timeout=timeout)


def command_line(command: Command, rule: Rule) -> str:
    """What is run for a RUN or LIMIT rule: the command (less CI's own venv setup line) and the added limits."""
    text = command.text
    setup = SETUP.fullmatch(text)
    if setup:
        assert set(setup.group(1).split(",")) <= set(ci_extras()), f"{command.text}: extras beyond CI's install"
        text = setup.group("rest")
    return f"{text} {rule.args}".strip() if rule.how == LIMIT else text


def run_checked(checkout: Checkout, command: Command, rule: Rule) -> None:
    done = checkout.bash(command_line(command, rule))
    output = done.stdout + done.stderr
    where = f"{command.page}:{command.line}: {command.text}\n{output[-3000:]}"
    assert done.returncode == rule.exit_code, f"exit code {done.returncode}, expected {rule.exit_code}\n{where}"
    assert "Traceback (most recent call last)" not in output, where
    assert rule.says in output, f"its output does not say {rule.says!r}\n{where}"


def export(checkout: Checkout, command: Command) -> None:
    """``export NAME=VALUE``: bash evaluates VALUE (in the checkout), and later commands see NAME."""
    name = re.fullmatch(r"export (\w+)=.*", command.text).group(1)
    done = checkout.bash(f'{command.text}; printf %s "${name}"')
    assert done.returncode == 0, done.stderr
    checkout.env[name] = done.stdout


def shell_words(checkout: Checkout, text: str) -> list[str]:
    """The words bash makes of a command line (quotes removed, ``$HOME`` and ``~`` expanded), as a program sees them."""
    done = checkout.bash(f"printf '%s\\0' {text}")
    assert done.returncode == 0, done.stderr
    return done.stdout.split("\0")[:-1]


def compose_every_job(checkout: Checkout, command: Command) -> int:
    """Compose and resolve every job of a Hydra command (its sweep expanded), launcher settings included, as the
    command would before launching; returns the number of jobs."""
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.utils import setup_globals
    from omegaconf import OmegaConf

    from ticktock.replay.resources import register_resolver
    from ticktock.shipped import resource_path

    words = shell_words(checkout, command.text)
    assert words[:2] == ["python", "-m"], command.text
    config = {"ticktock.run": "run", "ticktock.calibrate": "calibrate", "ticktock.probe": "probe"}[words[2]]
    overrides = [word for word in words[3:] if word not in ("-m", "--multirun")]
    jobs = sweep_jobs(overrides, OverridesParser.create()) if len(overrides) < len(words) - 3 else [overrides]
    setup_globals()
    register_resolver()
    with initialize_config_dir(config_dir=str(resource_path("configs")), version_base=None):
        for job in jobs:
            cfg = compose(config_name=config, overrides=job, return_hydra_config=True)
            HydraConfig.instance().set_config(cfg)
            OmegaConf.to_container(OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"]), resolve=True)
            OmegaConf.to_container(cfg.hydra.launcher, resolve=True)  # hydra.job.* is set only when a job runs
    return len(jobs)


def sweep_jobs(overrides: list[str], parser) -> list[list[str]]:
    """The jobs of a Hydra multirun: the product of its sweep overrides (``a=1,2``, ``range(0,8)``)."""
    choices = []
    for override in parser.parse_overrides(overrides):
        key = override.get_key_element()
        values = override.sweep_string_iterator() if override.is_sweep_override() else \
            [override.get_value_element_as_str()]
        choices.append([f"{key}={value}" for value in values])
    return [list(job) for job in product(*choices)]


def ci_extras() -> list[str]:
    """The extras CI installs, read from the README test command that .ci/run runs."""
    line = next(text for text, rule in RULES.items() if rule.how == CI)
    install, _ = install_and_rest(line)
    (extras,) = [re.fullmatch(r"'\.\[([a-z,-]+)\]'", word).group(1) for word in install if word.startswith("'.[")]
    return extras.split(",")


# --- what the docs tell the user to have first --------------------------------------------------------------------

def main_job_results(shared_dir: Path) -> Path:
    """The README's main job, run (shortened by its rule) once per test session: its ``results/main``."""
    command = next(c for c in ALL_COMMANDS if c.page == "README.md" and RULES[c.text].once)

    def make(folder: Path) -> None:
        checkout = Checkout.make(folder)
        run_checked(checkout, command, RULES[command.text])
        shutil.move(checkout.folder / "results" / "main", folder / "main")

    return made_once(shared_dir, "main-job", make) / "main"


def copy_main_results(checkout: Checkout, shared_dir: Path) -> None:
    shutil.copytree(main_job_results(shared_dir), checkout.folder / "results" / "main", dirs_exist_ok=True)


def paper_grid_sweeps(checkout: Checkout, shared_dir: Path) -> None:
    """The two SLURM sweeps' folders cannot be made here: the main job's AR run stands in one, its Speculative
    Listening run in the other."""
    runs = main_job_results(shared_dir) / "runs"
    for sweep, decoder in (("paper-grid", "ar"), ("paper-grid-lws", "speclisten")):
        (source,) = [run for run in runs.iterdir() if run.name.endswith(f"-{decoder}")]
        shutil.copytree(source, checkout.folder / "results" / "sweeps" / sweep / source.name)


def corpus_test_builders():
    """The converter tests' builders of small copies in the published layouts (tests/corpus/)."""
    sys.path.insert(0, str(ROOT / "tests" / "corpus"))
    import test_convert_big_bench_audio as big_bench_audio
    import test_convert_fdb_v1 as fdb_v1
    import test_convert_fdb_v1_5 as fdb_v1_5
    import test_convert_fdb_v3 as fdb_v3
    import test_convert_openaudiobench as openaudiobench
    import test_convert_voicebench_alpacaeval as voicebench

    return big_bench_audio, fdb_v1, fdb_v1_5, fdb_v3, openaudiobench, voicebench


def downloads(checkout: Checkout, shared_dir: Path) -> None:
    """Small copies of the published datasets where docs/real-data.md's commands read them (~/dl, ~/src)."""
    big_bench_audio, fdb_v1, fdb_v1_5, fdb_v3, openaudiobench, voicebench = corpus_test_builders()
    dl = checkout.home / "dl"
    openaudiobench.make_copy(dl / "OpenAudioBench")
    voicebench.write_encoded(dl / "voicebench" / "alpacaeval" / "test-00000-of-00001.parquet")
    big_bench_audio.make_copy(dl / "big_bench_audio")
    fdb_v1.make_copy(dl / "fdb")
    fdb_v1_5.make_sample(dl / "fdb" / "user_interruption" / "4")
    fdb_v3.make_sample(dl, "ecommerce_02_5f4a4da1575d605c43bef871", fdb_v3.ORDER)
    truth = checkout.home / "src" / "Full-Duplex-Bench" / "v1_v1.5" / "evaluation" / "icc_gt_distribution.json"
    truth.parent.mkdir(parents=True)
    truth.write_text(json.dumps({"1": fdb_v1.gt_windows(5.0, 2.0)}))


def gander_miniature(checkout: Checkout, shared_dir: Path) -> None:
    """What `hf download Gander-Omni/Gander` would leave in ~/ckpt/gander: here the Gander miniature in its real
    layout that the page's `scripts/make_miniature.py` command wrote before (docs/gpu.md: ``real_model_miniatures``
    wrote it there already)."""
    if (checkout.home / "ckpt" / "gander" / "config.json").is_file():
        return
    miniature = checkout.folder / "work_data" / "mini-gander"
    assert (miniature / "config.json").is_file(), "docs/real-models.md makes the Gander miniature before this"
    shutil.copytree(miniature, checkout.home / "ckpt" / "gander")


def gander_base(checkout: Checkout, shared_dir: Path) -> None:
    """The base that `hf download openbmb/MiniCPM-o-4_5` puts in ~/ckpt/gander/base: the miniature wrote it."""
    assert (checkout.home / "ckpt" / "gander" / "base" / "config.json").is_file()


def real_model_miniatures(checkout: Checkout, shared_dir: Path) -> None:
    """What docs/gpu.md's downloads leave in ~/ckpt: each real model's miniature in its real layout, in the folder
    the page names (Gander with its base in base/, Realtime-Venus in its Realtime-Venus-Audio/ folder)."""
    ckpt, written = checkout.home / "ckpt", shared_miniatures(shared_dir)
    for family, folder in (("minicpmo45", "minicpmo45"), ("gander", "gander"),
                           ("realtime_venus", "realtime-venus/Realtime-Venus-Audio"),
                           ("streaming_slm", "qwen2.5-omni-7b")):
        shutil.copytree(written[family], ckpt / folder)


def gander_miniature_sweep(checkout: Checkout, shared_dir: Path) -> None:
    """docs/gpu.md's sweep cannot run here: AR and Speculative Listening on the Gander miniature (one session, four
    chunks, on the CPU) stand in for it in results/sweeps/gander."""
    done = checkout.bash("python -m ticktock.run -m hydra.sweep.dir=results/sweeps/gander model=gander "
                         f"model.path=$HOME/ckpt/gander decoder=ar,speclisten {ONE_SESSION}")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def judge_model(checkout: Checkout, shared_dir: Path) -> None:
    """A tiny causal LM and tokenizer in models/my-judge (the judge tests' model)."""
    sys.path.insert(0, str(ROOT / "tests" / "judges"))
    from judge_model import write_judge_model

    write_judge_model(checkout.folder / "models" / "my-judge")


def example_plugins(checkout: Checkout, shared_dir: Path) -> None:
    """The example plug-in package is installed (CI installs it; elsewhere the page is skipped, saying how)."""
    from importlib import metadata

    try:
        metadata.distribution("ticktock-example-plugins")
    except metadata.PackageNotFoundError:
        message = "ticktock-example-plugins is not installed (pip install -e examples/ticktock-example-plugins)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}: CI must install it before the tests")
        pytest.skip(message)


def vllm_omni_release(checkout: Checkout, shared_dir: Path) -> None:
    """The vLLM-Omni release docs/endpoints.md installs is the one CI installs (``--no-deps``; elsewhere skipped)."""
    from importlib import metadata

    try:
        installed = metadata.version("vllm-omni")
    except metadata.PackageNotFoundError:
        if os.environ.get("CI"):
            pytest.fail("vllm-omni is not installed: CI must install it before the tests")
        pytest.skip("vllm-omni is not installed (pip install --no-deps vllm-omni==0.30.0)")
    shown = re.search(r"pip install vllm-omni==(\S+)", (ROOT / "docs" / "endpoints.md").read_text(encoding="utf-8"))
    assert shown and shown.group(1) == installed, f"docs/endpoints.md installs {shown and shown.group(1)}, CI {installed}"


def vllm_omni_deploy_file(checkout: Checkout, shared_dir: Path) -> None:
    """The MiniCPM-o 4.5 deploy file that ``vllm-omni serve --deploy-config`` reads serves duplex sessions, 4 at once,
    as docs/endpoints.md says."""
    from importlib import metadata

    import yaml

    vllm_omni_release(checkout, shared_dir)
    # the installed file, found through the distribution (the serve tests put a bare vllm_omni module in sys.modules)
    deploy_file = Path(metadata.distribution("vllm-omni").locate_file("vllm_omni/deploy/minicpmo_4_5.yaml"))
    deploy = yaml.safe_load(deploy_file.read_text(encoding="utf-8"))
    assert deploy["session_mode"] == "duplex" and deploy["duplex_session"]["max_sessions"] == 4, deploy


NEEDS = {"main results": lambda checkout, shared_dir: copy_main_results(checkout, shared_dir),
         "vllm-omni": vllm_omni_release, "vllm-omni deploy file": vllm_omni_deploy_file,
         "paper-grid sweeps": paper_grid_sweeps, "downloads": downloads,
         "gander miniature": gander_miniature, "gander base": gander_base, "judge model": judge_model,
         "real-model miniatures": real_model_miniatures, "gander miniature sweep": gander_miniature_sweep,
         "example plug-ins": example_plugins}


# --- the tests ----------------------------------------------------------------------------------------------------

def test_every_command_has_exactly_one_rule():
    shown = {command.text for command in ALL_COMMANDS}
    unmatched = [f"{c.page}:{c.line}: {c.text}" for c in ALL_COMMANDS if c.text not in RULES]
    assert not unmatched, "commands in the docs that no rule of RULES runs:\n" + "\n".join(unmatched)
    assert not set(RULES) - shown, f"rules for commands no page shows any more: {sorted(set(RULES) - shown)}"
    assert all(set(rule.needs) <= set(NEEDS) for rule in RULES.values())


def test_code_blocks_are_labelled():
    """A command hides in no unlabelled block: every fenced block says its language (bash blocks are run)."""
    unlabelled = [f"{page.relative_to(ROOT)}:{start - 1}" for page in PAGES
                  for info, start, _ in code_blocks(page) if not info or info in ("sh", "shell", "console")]
    assert not unlabelled, f"fenced blocks without a language, or shell code not labelled bash: {unlabelled}"


def test_ci_runs_the_readme_test_command():
    """The one command not run here is this suite: CI runs it as the README shows it (its install may add packages,
    such as the example plug-ins, and pip's -q)."""
    (line,) = [text for text, rule in RULES.items() if rule.how == CI]
    assert line in [c.text for c in shown_commands(ROOT / "README.md")]
    readme_install, readme_rest = install_and_rest(line)
    ci_commands = [install_and_rest(ci_line) for ci_line in (ROOT / ".ci" / "run").read_text().splitlines()
                   if ci_line.startswith("python3 -m venv .venv && ")]
    assert any(rest == readme_rest and readme_install <= install for install, rest in ci_commands), ci_commands


def install_and_rest(line: str) -> tuple[set[str], str]:
    """``python3 -m venv .venv && .venv/bin/pip install ARGS && REST``: (the install's arguments less -q, REST)."""
    match = re.fullmatch(r"python3 -m venv \.venv && \.venv/bin/pip install (?P<args>.+?) && (?P<rest>.+)", line)
    assert match, line
    return set(match.group("args").split()) - {"-q"}, match.group("rest")


def test_a_sweep_is_composed_job_by_job(tmp_path):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    checkout = Checkout.make(tmp_path)
    text = "python -m ticktock.run -m decoder=ar,pld 'shard.index=range(0,2)' model.path=$HOME/x"
    words = shell_words(checkout, text)
    assert words[3:] == ["-m", "decoder=ar,pld", "shard.index=range(0,2)", f"model.path={checkout.home}/x"]
    assert sweep_jobs(words[4:6], OverridesParser.create()) == [
        ["decoder=ar", "shard.index=0"], ["decoder=ar", "shard.index=1"],
        ["decoder=pld", "shard.index=0"], ["decoder=pld", "shard.index=1"]]
    assert compose_every_job(checkout, Command("x", 1, text)) == 4
    with pytest.raises(Exception, match="nope"):  # a bad override fails the composition, as `--cfg job` would
        compose_every_job(checkout, Command("x", 1, "python -m ticktock.run decoder=ar,nope"))


@pytest.mark.parametrize("page", PAGES_WITH_COMMANDS, ids=lambda page: str(page.relative_to(ROOT)))
def test_page_commands_run(page, tmp_path, shared_dir):
    checkout = Checkout.make(tmp_path)
    prepared = set()
    for command in shown_commands(page):
        rule = RULES[command.text]
        for need in rule.needs:
            if need not in prepared:
                NEEDS[need](checkout, shared_dir)
                prepared.add(need)
        if rule.how == ENV:
            export(checkout, command)
        elif rule.how == COMPOSE:
            assert compose_every_job(checkout, command) >= 1
        elif rule.once:
            copy_main_results(checkout, shared_dir)  # the main job, run once for every page
        elif rule.how in (RUN, LIMIT):
            run_checked(checkout, command, rule)
        elif rule.how == ELSEWHERE:
            assert command.text in (ROOT / rule.where).read_text(encoding="utf-8"), f"{rule.where} runs no {command}"
        else:
            assert rule.how in (STAND_IN, CI, GPU), rule
