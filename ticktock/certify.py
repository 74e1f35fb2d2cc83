"""``python -m ticktock.certify``: prove a decoder lossless and honestly counted, or a model adapter exact.

    python -m ticktock.certify decoder=speclisten              # the fixture model, then the embedded model
    python -m ticktock.certify decoder=speclisten --quick      # the fixture model alone (about 15 s)
    python -m ticktock.certify decoder=my_decoder model=gander # the decoder checks on one model
    python -m ticktock.certify model=my_model                  # the adapter checks of a model
    python -m ticktock.certify decoder=pld decoder.num_pred=4 --out results/certify   # keep the replays
    python -m ticktock.certify decoder=pld --quick --settings greedy                  # one setting (seconds)
    python -m ticktock.certify decoder._target_=my_module.MyDecoder decoder.name=mine --quick   # not packaged

Says on stderr, a plain line each, as every check starts (with what it replays) and ends (its result, the seconds
it took and since certify began: ``ticktock.conformance.checks.Progress``); then prints one row per property and
setting (PASS, FAIL with its first counter-example, or SKIP with the reason), then a summary line. Exit code 0 when
every check passed, 1 when one failed, 2 for a bad configuration. The decoder checks are
``ticktock.conformance.decoder``; the adapter checks ``ticktock.conformance.adapter``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ticktock.errors import user_errors


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ticktock certify", description="Prove a decoder lossless and honestly counted "
                                "(decoder=NAME), or a model adapter exact (model=NAME).")
    p.add_argument("overrides", nargs="*", metavar="key=value",
                   help="decoder=NAME and/or model=NAME, then Hydra overrides of the replays (e.g. decoder.num_pred=4)")
    p.add_argument("--quick", action="store_true", help="the decoder checks on the fixture model alone")
    p.add_argument("--out", type=Path, default=None, help="keep the replays in this folder (default: a temporary one)")
    p.add_argument("--sessions", type=int, default=2,
                   help="sessions replayed (default 2: a tool call and a spoken answer; spoken ones on the fixture)")
    p.add_argument("--chunks", type=int, default=10, help="chunks replayed of each session (default 10)")
    p.add_argument("--cuts", type=int, default=1,
                   help="cuts of the audio per setting (default 1), each replayed with the audio after it replaced by "
                        "silence, noise, another session's audio and its own shifted")
    p.add_argument("--settings", default=None, metavar="NAMES",
                   help="only these settings, comma-separated: greedy, sampled, greedy-2-sessions, sampled-2-sessions "
                        "(default: all)")
    return p


def selection(overrides: list[str], name: str) -> str | None:
    """The value of ``name=...`` among the overrides (None when absent)."""
    values = [o.split("=", 1)[1] for o in overrides if o.startswith(f"{name}=")]
    return values[-1] if values else None


def certify(args: argparse.Namespace, progress=None) -> list:
    """The checks ``args`` ask for (``parser``), each said to ``progress`` (a ``Progress``; default: nowhere) as it
    starts and ends."""
    from ticktock.conformance.decoder import (MODELS, QUICK_MODELS, SETTINGS, CertifyError, certify_decoder,
                                              settings_named)

    decoder, model = selection(args.overrides, "decoder"), selection(args.overrides, "model")
    rest = [o for o in args.overrides if not o.startswith(("decoder=", "model="))]
    target = decoder_target(rest)
    if target is not None:
        check_decoder_class(target)
        if decoder is None:  # an unpackaged decoder: its class over the AR config, named after it unless named
            decoder = "ar"
            rest = rest if selection(rest, "decoder.name") else [*rest, f"decoder.name={default_name(target)}"]
    if decoder is None and model is None:
        raise CertifyError("nothing to certify: give decoder=NAME or decoder._target_=module.Class (its decoder "
                           "checks) and/or model=NAME")
    if decoder is None:
        return certify_model(model, rest, progress)
    models = (model,) if model is not None else QUICK_MODELS if args.quick else MODELS
    settings = settings_named(args.settings) if args.settings else SETTINGS
    return certify_decoder(decoder, models, tuple(rest), args.out, args.sessions, args.chunks, settings, args.cuts,
                           progress=progress)


def decoder_target(overrides: list[str]) -> str | None:
    """The class a ``decoder._target_=module.Class`` override names (None when there is none)."""
    return selection([o.lstrip("+~") for o in overrides], "decoder._target_")


def check_decoder_class(path: str) -> None:
    """``path`` names an importable subclass of ``ticktock.api.Decoder``; else a one-line ``CertifyError``, before
    any replay (an import that fails is a ``TargetError`` naming the override)."""
    import inspect

    from ticktock.conformance.decoder import CertifyError
    from ticktock.decoders.contract import Decoder
    from ticktock.replay.targets import locate

    found = locate(path, "decoder._target_")
    if not (inspect.isclass(found) and issubclass(found, Decoder)):
        raise CertifyError(f"decoder._target_={path}: {found!r} is not a subclass of ticktock.api.Decoder "
                           "(certify checks decoders)")


def default_name(path: str) -> str:
    """The name of a decoder certified by its class alone, when ``decoder.name`` is not given.

    >>> default_name("my_module.MyDecoder")
    'mydecoder'
    """
    return path.rsplit(".", 1)[-1].lower()


def certify_model(model: str, overrides: list[str], progress=None) -> list:
    """The adapter checks of ``model`` (``ticktock.conformance.adapter.adapter_checks``), each on a fresh adapter,
    on the torch threads certify's replays use (``ticktock.conformance.decoder.thread_overrides``)."""
    import torch

    from ticktock.conformance.adapter import adapter_checks
    from ticktock.conformance.decoder import thread_overrides
    from ticktock.replay.config import build, compose_run

    cfg = compose_run("ar", model, None, [*thread_overrides(overrides), *overrides])
    if cfg.get("threads") is not None:
        torch.set_num_threads(cfg.threads)
    return adapter_checks(lambda: build(cfg.model), model, progress)


def summary(results: list, what: str, seconds: float) -> str:
    """E.g. ``certify decoder=pld: 24 checks, 22 passed, 0 failed, 2 skipped (31 s)``."""
    counts = {kind: sum(c.result == kind for c in results) for kind in ("PASS", "FAIL", "SKIP")}
    verdict = "FAILED" if counts["FAIL"] else "certified"
    return (f"certify {what}: {verdict}: {len(results)} checks, {counts['PASS']} passed, {counts['FAIL']} failed, "
            f"{counts['SKIP']} skipped ({seconds:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    from ticktock.conformance.checks import Progress, all_passed, table

    args = parser().parse_args(argv)
    progress = Progress(sys.stderr, clock=time.perf_counter)  # its lines count the seconds from here, as the summary
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # one bar per model load of each replay: the table is the output
    with user_errors():
        results = certify(args, progress)
    what = " ".join(o for o in args.overrides if o.lstrip("+~").startswith(("decoder=", "model=", "decoder._target_=",
                                                                            "decoder.name="))) or "nothing"
    print(table(results))
    print(summary(results, what, time.perf_counter() - progress.began))
    return 0 if all_passed(results) else 1


if __name__ == "__main__":
    sys.exit(main())
