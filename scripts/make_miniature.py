"""Write a tiny random checkpoint of a real model, in that model's real on-disk layout, for CPU smoke runs.

The miniature has the real file names, safetensors key names, config.json keys and tokenizer files with the
special tokens at their published ids; only the widths are small and the weights random. The real loading path
loads it, so every decoder, metric and table can be tried on a laptop before the real weights are downloaded::

    python scripts/make_miniature.py --model gander --out work_data/mini-gander
    python -m ticktock.run model=gander model.path=work_data/mini-gander decoder=speclisten limit.per_task=1

Models: minicpmo45, gander (the Thinker delta, with its base in ``base/``), realtime_venus, lws, streaming_slm.
Outputs of a miniature are random-model outputs: use it to check the pipeline and losslessness, not quality.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

#: model config name -> "module:function(out, seed)" that writes its miniature
WRITERS = {
    "minicpmo45": "ticktock.miniatures.minicpmo:write_minicpmo45",
    "gander": "ticktock.miniatures.minicpmo:write_gander",
    "realtime_venus": "ticktock.miniatures.minicpmo:write_realtime_venus",
    "lws": "ticktock.miniatures.minicpmo:write_lws",
    "streaming_slm": "ticktock.miniatures.qwen_omni:write_streaming_slm_miniature",
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=sorted(WRITERS))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    module, function = WRITERS[args.model].split(":")
    getattr(importlib.import_module(module), function)(args.out, seed=args.seed)
    print(f"{args.model} miniature written to {args.out}; run it with\n"
          f"  python -m ticktock.run model={args.model} model.path={args.out} decoder=speclisten limit.per_task=1")


if __name__ == "__main__":
    main()
