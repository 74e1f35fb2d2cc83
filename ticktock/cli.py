"""The ``ticktock`` command: one entry point for every ``python -m ticktock.<module>`` command.

``ticktock <command> [args...]`` runs the module named in ``COMMANDS`` exactly as ``python -m`` would, with
the remaining arguments (Hydra overrides or argparse options).

Example::

    ticktock run decoder=speclisten limit.per_task=2     # == python -m ticktock.run decoder=speclisten ...
    ticktock synth --out my-corpus --seed 7 --sessions-per-task 95
    ticktock tables results/main/runs
"""

from __future__ import annotations

import runpy
import sys

from ticktock.errors import user_errors

COMMANDS = {
    "run": ("ticktock.run", "replay sessions with one model, decoder, task and clock (Hydra overrides)"),
    "main-job": ("ticktock.main_job", "every decoder on the embedded model and corpus, then the tables and report"),
    "tables": ("ticktock.tables", "paper tables, figures and the HTML report from result folders"),
    "judge": ("ticktock.judge", "grade every reply of result folders with a local judge model (quality table)"),
    "runs": ("ticktock.runs", "list the runs under a folder: status, sessions done, last heartbeat"),
    "probe": ("ticktock.probe", "oracle probe: how often the next chunk's audio changes the output"),
    "serve": ("ticktock.serve", "serve a model and decoder over the full-duplex WebSocket contract, in real time"),
    "certify": ("ticktock.certify", "prove a decoder lossless and honestly counted, or a model adapter exact"),
    "calibrate": ("ticktock.calibrate", "measure a cost profile for the modeled clock on this device"),
    "doctor": ("ticktock.adapters.doctor", "what this machine has (GPU, torch build, weights) and which real-model runs it can start"),
    "synth": ("ticktock.corpus.synth", "generate a spoken session corpus (eSpeak NG)"),
    "convert": ("ticktock.corpus.convert", "convert a published dataset (local copy) into a manifest"),
    "bench": ("ticktock.corpus.bench", "TickTock-Bench as a Hugging Face dataset: fetch its sources, build, export"),
    "augment": ("ticktock.corpus.augment", "an augmented copy of a corpus (speed, pitch, room, band, noise, pauses)"),
    "train": ("ticktock.embedded.train", "train the embedded model"),
    "evaluate": ("ticktock.embedded.evaluate", "the embedded model's quality gates"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: ticktock <command> [args...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_text}" for name, (_, help_text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"ticktock: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = COMMANDS[name][0]
    sys.argv = [f"ticktock {name}", *rest]
    try:
        with user_errors():  # expected errors of any command: one line and their exit code (ticktock.errors)
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        if isinstance(done.code, str):  # sys.exit("message"): Python prints it only when the process ends with it
            print(done.code, file=sys.stderr)
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
