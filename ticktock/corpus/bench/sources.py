"""Where TickTock-Bench's six sources are, and fetching the three on the Hub into the local cache.

``HUB_IDS`` (``ticktock.corpus.convert.hub``) are the defaults of the Hub sources; the Full-Duplex-Bench sources
(Google Drive zips) have no default and are only used when given a folder (``--src fdb_v3=DIR``). ``fetch`` reads
each Hub source as a conversion would (the files of the converted subsets into the Hub cache, VoiceBench's config
into the datasets cache), so the same conversion later runs offline (``HF_HUB_OFFLINE=1``).

Example::

    >>> locations({"fdb_v3": "downloads/fdb_v3"})["voicebench_alpacaeval"], locations({})["fdb_v3"]
    ('hlt-lab/voicebench', None)
"""

from __future__ import annotations

from typing import Iterator, Sequence

from ticktock.corpus.bench import BenchError
from ticktock.corpus.convert import SOURCES
from ticktock.corpus.convert.hub import HUB_IDS

SOURCE_TASKS = {"openaudiobench": ("llama_questions", "web_questions", "trivia_qa"),
                "voicebench_alpacaeval": ("alpaca_eval",), "big_bench_audio": ("big_bench_audio",),
                "fdb_v1": ("fdb_v1",), "fdb_v1_5": ("fdb_v1_5",), "fdb_v3": ("fdb_v3",)}  # the task types of each
FDB_DOWNLOADS = {  # what a Full-Duplex-Bench source needs, for the "missing" line of a build
    "fdb_v1": "Full-Duplex-Bench v1.0 (a Google Drive zip, linked from its v1_v1.5 README)",
    "fdb_v1_5": "Full-Duplex-Bench v1.5 (a Google Drive zip, linked from its v1_v1.5 README)",
    "fdb_v3": "Full-Duplex-Bench v3's fdb_v3_data_released/ (a Google Drive zip, linked from its v3 README)",
}


def locations(chosen: dict[str, str]) -> dict[str, str | None]:
    """Per source, the Hub id or folder it is read from (``chosen`` first, then the Hub id; None: not given)."""
    return {source: chosen.get(source, HUB_IDS.get(source)) for source in SOURCES}


def fetch(sources: Sequence[str] | None, chosen: dict[str, str]) -> Iterator[str]:
    """Fetch ``sources`` (None: every Hub source) into the local caches; one line per source."""
    from ticktock.corpus.convert import prepare

    unknown = [s for s in sources or () if s not in HUB_IDS]
    if unknown:
        raise BenchError(f"fetch: {', '.join(unknown)} not on the Hugging Face Hub (the Hub sources: "
                         f"{', '.join(HUB_IDS)}; the Full-Duplex-Bench data is downloaded by hand)")
    where = locations(chosen)
    for source in sources or list(HUB_IDS):
        module, options = prepare(source, where[source], None, None, 1.0, 8.0, None, None)
        items = module.read_items(options)
        kept = "in the local Hugging Face cache" if options.hub_id else "a local copy"
        yield f"{source:22s} {where[source]}: {len(items)} items, {kept}"
