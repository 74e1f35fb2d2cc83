"""Sources published on the Hugging Face Hub: ``--src`` is a Hub id or a local copy, read through the Hub libraries.

Three sources are Hub datasets (``HUB_IDS``). Their converters take a Hub id (the default) or a local folder:

- VoiceBench is a parquet dataset with an ``Audio`` column: :func:`load_split` reads it with ``datasets.load_dataset``
  (the datasets cache; ``Audio(decode=False)``, so the audio bytes are decoded by soundfile, not by torchcodec);
- OpenAudioBench and Big Bench Audio are file trees (CSV or JSONL beside MP3 files; ``datasets`` 5 can read their
  audio only through torchcodec and FFmpeg): :func:`snapshot` fetches the files a conversion needs into the Hub
  cache (``huggingface_hub.snapshot_download``) and the converter reads that folder like a local copy.

Offline (``HF_HUB_OFFLINE=1``, or no network): a source in the local cache is used; one that is not is a
:class:`SourceNotCached` error, one line naming the source and the command that fetches it (``fetch_command``).
A string is a Hub id when no file or folder of that name exists and it reads ``owner/name``
(``ticktock.sessions.hub.is_hub_id``).

Example::

    >>> fetch_command("voicebench_alpacaeval", "hlt-lab/voicebench")
    'ticktock bench fetch voicebench_alpacaeval'
    >>> fetch_command("big_bench_audio", "someone/bba-copy")
    'ticktock bench fetch big_bench_audio --src big_bench_audio=someone/bba-copy'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ticktock.corpus.convert import ConvertError
from ticktock.sessions.hub import offline, offline_reason, quiet

HUB_IDS = {"openaudiobench": "baichuan-inc/OpenAudioBench", "voicebench_alpacaeval": "hlt-lab/voicebench",
           "big_bench_audio": "ArtificialAnalysis/big_bench_audio"}


class SourceNotCached(ConvertError):
    """A Hub source that is neither in the local cache nor reachable; the message says how to fetch it."""


def fetch_command(source: str, hub_id: str) -> str:
    """The command that fetches ``hub_id`` (the Hub copy of ``source``) into the local cache."""
    if HUB_IDS.get(source) == hub_id:
        return f"ticktock bench fetch {source}"
    return f"ticktock bench fetch {source} --src {source}={hub_id}"


def not_cached(source: str, hub_id: str, err: BaseException) -> SourceNotCached:
    reason = offline_reason() if offline() else f"the Hub cannot be reached ({type(err).__name__})"
    return SourceNotCached(f"{hub_id}: {source} is not in the local Hugging Face cache and {reason}; fetch it once "
                           f"online with: {fetch_command(source, hub_id)}")


def load_split(source: str, hub_id: str, config: str | None, split: str | None = None) -> Any:
    """One split of a Hub dataset config with ``datasets.load_dataset`` (``split=None``: ``test``, or the only split).

    Errors are one line: the dataset is not cached offline (``SourceNotCached``), does not exist, has no such config
    or no such split (``ConvertError``, naming the configs or splits there are)."""
    import datasets
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

    try:
        with quiet():
            splits = datasets.load_dataset(hub_id, config)
    except (ConnectionError, LocalEntryNotFoundError, OfflineModeIsEnabled) as err:
        raise not_cached(source, hub_id, err) from None
    except datasets.exceptions.DatasetNotFoundError as err:
        raise ConvertError(f"{hub_id}: no such dataset on the Hub, or it is private ({err})") from None
    except ValueError as err:  # datasets' "BuilderConfig 'x' not found. Available: [...]", and the like
        raise ConvertError(f"{hub_id}: config {config!r}: {str(err).splitlines()[0]}") from None
    return pick_split(splits, split, f"{hub_id} config {config}")


def pick_split(splits: Any, split: str | None, where: str) -> Any:
    """``split`` of a ``DatasetDict`` (None: ``test``, or its only split); else ConvertError naming the splits."""
    names = list(splits)
    if split is None:
        split = "test" if "test" in names or len(names) != 1 else names[0]
    if split not in names:
        raise ConvertError(f"{where}: no split {split!r} (splits: {', '.join(names) or 'none'})")
    return splits[split]


def snapshot(source: str, hub_id: str, patterns: Sequence[str]) -> Path:
    """The local folder of ``hub_id`` in the Hub cache, holding (at least) the files matching ``patterns``; fetched
    when online, the cached copy when offline (``SourceNotCached`` when there is none)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (LocalEntryNotFoundError, OfflineModeIsEnabled, RepositoryNotFoundError,
                                        RevisionNotFoundError)

    try:
        folder = snapshot_download(hub_id, repo_type="dataset", allow_patterns=list(patterns))
    except (ConnectionError, LocalEntryNotFoundError, OfflineModeIsEnabled) as err:
        raise not_cached(source, hub_id, err) from None
    except (RepositoryNotFoundError, RevisionNotFoundError) as err:
        raise ConvertError(f"{hub_id}: no such dataset on the Hub, or it is private "
                           f"({str(err).splitlines()[0]})") from None
    return Path(folder)
