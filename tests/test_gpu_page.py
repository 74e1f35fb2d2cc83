"""docs/gpu.md, the GPU user's page, holds what it promises on a machine without a GPU.

The page's commands are run by ``tests/test_docs_commands.py`` (its RULES); this file checks the rest of the page
against its sources: every GPU line is marked and stops early in one line without leaving a run folder, the
figures under "What to expect" follow from what they say they are derived from (the published shapes, the shipped
profile, the paper's numbers), the README points to the page first and says how to use the venv, and
docs/datasets.md's snippets read a row the way that works without FFmpeg.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import table_rows
from test_docs_commands import COMPOSE, ENV, RULES, RUN, code_blocks, shown_commands, without_comment

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "gpu.md"
CHUNKS, SESSIONS = 15883, 760  # TickTock-Bench (the paper's totals: tests/tables/test_tables_composition.py)
NO_GPU = {**{k: v for k, v in os.environ.items() if not k.startswith("TICKTOCK_")}, "CUDA_VISIBLE_DEVICES": "",
          "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def page_text() -> str:
    return PAGE.read_text(encoding="utf-8")


def numbers(cell: str) -> list[float]:
    """The numbers written in a table cell (``1,827`` is one number).

    >>> numbers("1827 / 513"), numbers("6.0 GB (40,960 tokens)"), numbers("-")
    ([1827.0, 513.0], [6.0, 40960.0], [])
    """
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", cell)]


# --- the README ---------------------------------------------------------------------------------------------------

def test_the_readme_points_to_the_gpu_page_first():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Where to read on", 1)[1]
    first = re.search(r"^- \[([^\]]+)\]", section, re.MULTILINE)
    assert first and first.group(1) == "docs/gpu.md", section[:300]


def test_the_readme_says_how_to_use_the_venv_and_why_torch_is_pinned():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "source .venv/bin/activate" in readme and ".venv/bin/python" in readme
    assert "CPU build on disk" not in readme
    assert re.search(r"torch==2\.13\.0.*comparable", readme, re.DOTALL)
    assert "CUDA build of the same version" in readme and "docs/gpu.md" in readme


# --- the page's commands ------------------------------------------------------------------------------------------

def bash_lines(path: Path) -> list[str]:
    return [line for info, _, lines in code_blocks(path) if info == "bash" for line in lines if line.strip()]


def needs_a_gpu(command: str) -> bool:
    return "device=cuda" in command or "--gpu" in command.split()


def test_every_gpu_line_is_marked_and_every_marked_line_needs_a_gpu():
    lines = bash_lines(PAGE)
    gpu_lines = [line for line in lines if needs_a_gpu(without_comment(line))]
    assert len(gpu_lines) >= 3, lines
    for line in lines:
        marked = line.rstrip().endswith("# GPU")
        assert marked == needs_a_gpu(without_comment(line)), line


def test_every_gpu_command_of_the_page_is_tried_here_up_to_the_gpu():
    """A GPU command is run and must stop in one line (exit 2) or, a sweep, be composed job by job; the download
    lines stand in with miniatures; everything else runs as written."""
    for command in shown_commands(PAGE):
        rule = RULES[command.text]
        if needs_a_gpu(command.text):
            assert (rule.how == RUN and rule.exit_code == 2 and rule.says.startswith("ticktock: error: ")) or \
                rule.how == COMPOSE, (command.text, rule)
        elif not command.text.startswith("hf download"):
            assert rule.how in (RUN, ENV) and rule.exit_code == 0, (command.text, rule)


def test_the_pages_first_gpu_run_stops_in_one_line_and_leaves_no_run_folder(tmp_path, miniatures):
    (command,) = [c.text for c in shown_commands(PAGE) if c.text.startswith("python -m ticktock.run model=gander")]
    weights = tmp_path / "ckpt" / "gander"
    shutil.copytree(miniatures["gander"], weights)
    run_dir = tmp_path / "results" / "first-run"
    words = command.replace("$HOME/ckpt/gander", str(weights)).split()[1:]
    done = subprocess.run([sys.executable, *words, f"hydra.run.dir={run_dir}"], cwd=tmp_path, env=NO_GPU,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("ticktock: error: device: cuda asked for, but this process sees no CUDA device"), line
    assert not run_dir.exists(), sorted(p.name for p in run_dir.rglob("*"))


# --- What to expect: GPU memory -----------------------------------------------------------------------------------

def parameters_built(*modules) -> int:
    return sum(tensor.numel() for module in modules for tensor in module.parameters())


def minicpmo_family_parameters() -> tuple[int, int]:
    """(parameters, KV bytes per token) of what the MiniCPM-o adapter builds at the published shapes, on the meta
    device (nothing allocated)."""
    import torch

    from ticktock.adapters.minicpmo import PUBLISHED_CONFIG, build_frontend, build_llm

    llm = build_llm(PUBLISHED_CONFIG, Path("published"), "sdpa", torch.bfloat16, "meta")
    frontend = build_frontend(PUBLISHED_CONFIG, Path("published"), torch.bfloat16, "meta", "sdpa")
    config = llm.config
    kv = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * 2
    return parameters_built(llm, frontend), kv


#: Qwen2.5-Omni-7B's published config.json (thinker_config), the shapes the streaming SLM's adapter builds
QWEN25_OMNI_7B_THINKER = {
    "text_config": {"vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                    "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 32768},
    "audio_config": {"d_model": 1280, "encoder_layers": 32, "encoder_attention_heads": 20, "encoder_ffn_dim": 5120,
                     "num_mel_bins": 128, "output_dim": 3584},
}


def streaming_slm_parameters() -> tuple[int, int]:
    """(parameters, KV bytes per token) of the Qwen2.5-Omni-7B Thinker without its vision tower (the adapter drops
    it), built on the meta device."""
    import torch
    from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration

    with torch.device("meta"):
        thinker = Qwen2_5OmniThinkerForConditionalGeneration(Qwen2_5OmniThinkerConfig(**QWEN25_OMNI_7B_THINKER))
    text = thinker.config.text_config
    head_dim = text.hidden_size // text.num_attention_heads
    kv = 2 * text.num_hidden_layers * text.num_key_value_heads * head_dim * 2
    visual = thinker.visual if hasattr(thinker, "visual") else thinker.model.visual
    return parameters_built(thinker) - parameters_built(visual), kv


@pytest.mark.parametrize("row, count, context", [(0, minicpmo_family_parameters, 40960),
                                                 (1, streaming_slm_parameters, 32768)])
def test_the_memory_figures_follow_from_the_published_shapes(row, count, context):
    parameters, kv_per_token = count()
    cells = table_rows(page_text(), "| model | parameters in use")[row]
    assert numbers(cells[1]) == [round(parameters / 1e9, 2)], (cells, parameters)
    assert numbers(cells[2]) == [round(2 * parameters / 1e9, 1)], (cells, parameters)
    assert numbers(cells[3]) == [kv_per_token / 1024], (cells, kv_per_token)
    assert numbers(cells[4]) == [round(kv_per_token * context / 1e9, 1), context], cells


# --- What to expect: wall time ------------------------------------------------------------------------------------

def test_the_wall_times_are_the_charged_time_per_chunk_over_the_benchmarks_chunks():
    """Each decoder's hours are its charged milliseconds per chunk times 15,883 chunks, and no decoder is charged
    less per chunk than the shipped profile's audio encoding plus one forward."""
    from ticktock.clocks.modeled import CostProfile
    from ticktock.shipped import resource_path

    profile = CostProfile.load(resource_path("configs/profiles/a100-8b-derived.yaml"))
    floor = profile.encode_ms + min(min(row) for row in profile.forward_table)
    rows = table_rows(page_text(), "| decoder | charged per chunk")
    assert [row[0] for row in rows] == ["AR", "PLD", "Token Recycling", "Lookahead", "Speculative Listening"]
    for name, per_chunk, total in rows:
        (ms,) = numbers(per_chunk)
        (hours,) = numbers(total)
        assert ms >= floor, (name, ms, floor)
        assert math.isclose(hours, round(ms * CHUNKS / 3.6e6, 1), abs_tol=1e-9), (name, ms, hours)
    total = sum(numbers(row[2])[0] for row in rows)
    assert f"the sweep is about {total:.1f} h in all" in " ".join(page_text().split())


# --- What to expect: the paper's figures --------------------------------------------------------------------------

def test_the_papers_figures_on_the_page_are_the_papers():
    from ticktock.tables.paper import paper_numbers

    rows = table_rows(page_text(), "| model | Table 2")
    assert [row[0] for row in rows] == ["Gander", "Realtime-Venus", "LWS", "Streaming SLM"]
    columns = [("speak speedup",), ("tool speedup",), ("tool-call ms",), ("mean max lag ms",), ("AlpacaEval judge",)]
    for model, *cells in rows:
        for cell, (column,) in zip(cells, columns):
            paper = sorted(float(e["value"]) for e in paper_numbers() if e["column"] == column and model in str(e["row"]))
            shown = sorted(numbers(cell))
            assert shown == paper, (model, column, shown, paper)


# --- docs/datasets.md ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mini_dataset(tmp_path_factory) -> Path:
    """The page's export of the mini corpus, as its first command writes it."""
    folder = tmp_path_factory.mktemp("datasets-page")
    done = subprocess.run([sys.executable, "-m", "ticktock.corpus.bench", "export", str(ROOT / "manifests" /
                           "ticktock-mini"), "--out", "mini-dataset", "--name", "TickTock-Bench-mini"],
                          cwd=folder, env=NO_GPU, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


def test_the_datasets_snippet_reads_a_row_without_ffmpeg(mini_dataset):
    """The page's Python snippet runs as written (beside the export): its row's audio is decoded by soundfile."""
    (snippet,) = [lines for info, _, lines in code_blocks(ROOT / "docs" / "datasets.md") if info == "python"]
    done = subprocess.run([sys.executable, "-c", "\n".join(snippet)], cwd=mini_dataset, env=NO_GPU,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    session, rate, seconds, unit = done.stdout.split()
    assert session.startswith("fdb_v3") and rate == "16000" and float(seconds) > 1 and unit == "s", done.stdout


def test_an_export_is_read_by_load_dataset_and_load_from_disk_says_what_the_page_says(mini_dataset):
    from datasets import load_dataset, load_from_disk

    with pytest.raises(FileNotFoundError, match="is neither a `?Dataset`? directory nor a `?DatasetDict`? directory"):
        load_from_disk(str(mini_dataset / "mini-dataset"))
    page = " ".join((ROOT / "docs" / "datasets.md").read_text(encoding="utf-8").split())
    assert "neither a Dataset directory nor a DatasetDict directory" in page
    rows = load_dataset(str(mini_dataset / "mini-dataset"), "fdb_v3", split="test")
    rows.save_to_disk(str(mini_dataset / "fdb_v3-saved"))
    assert load_from_disk(str(mini_dataset / "fdb_v3-saved")).num_rows == rows.num_rows == 13
