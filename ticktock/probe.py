"""``python -m ticktock.probe model=<m> task=<t>``: how often does the next chunk's audio change the output?

Every chunk is decoded twice from the same state (the real AR history): under the silence hypothesis and
with the real audio (``decoders/oracle_probe.py``, no time limit). The report gives the share of chunks
whose outputs are token-identical and, among the changed ones, the share whose first token changed, per
task, per chunk kind (of the real output) and by whether the user was speaking (the paper: 95.3% and
87.7% over four models).

Example::

    python -m ticktock.probe task=ticktock_mini limit.sessions=16
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from ticktock.errors import user_errors
from ticktock.replay.resources import register_resolver
from ticktock.shipped import resource_path
from ticktock.replay.run_folder import interrupted_note
from ticktock.replay.runner import run

register_resolver()


def probe_report(chunks) -> str:
    """Markdown tables from a probe run's chunks (a pandas DataFrame)."""
    data = chunks[chunks["draft_full_match"].notna()].copy()
    data["identical"] = data["draft_full_match"].astype(bool)
    data["first_changed"] = data["first_token_changed"].astype(bool)
    data["user"] = data["user_speaking"].map({True: "user speaking", False: "user silent"})
    sections = [("all", None), ("task", "task"), ("chunk kind", "kind"), ("user speech", "user")]
    lines = []
    for title, column in sections:
        groups = [("all", data)] if column is None else sorted(data.groupby(column), key=lambda g: str(g[0]))
        lines += [f"\n**by {title}**\n", "| group | chunks | identical under silence | changed: first token changed |",
                  "|---|---|---|---|"]
        for name, group in groups:
            changed = group[~group["identical"]]
            share = f"{changed['first_changed'].mean():.1%}" if len(changed) else "-"
            lines.append(f"| {name} | {len(group)} | {group['identical'].mean():.1%} | {share} ({len(changed)}) |")
    return "\n".join(lines)


@hydra.main(version_base=None, config_path=str(resource_path("configs")), config_name="probe")
def main(cfg: DictConfig) -> None:
    import pandas as pd
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    with user_errors(interrupted=lambda: interrupted_note([run_dir])):  # one line, not Hydra's traceback
        summary = run(cfg, run_dir)
    report = f"oracle probe: model {cfg.model.name}, task {cfg.task.name}\n" + probe_report(pd.read_parquet(run_dir / "chunks.parquet"))
    (run_dir / "probe.md").write_text(report + "\n")
    print(report)
    print(f"-> {summary.run_dir}")


if __name__ == "__main__":
    from ticktock.errors import user_errors
    from ticktock.plugins import register_selected

    with user_errors():  # plug-ins selected by name (ticktock.plugins) are registered before Hydra composes
        register_selected(sys.argv[1:])
    main()
