"""TickTock-Bench as a Hugging Face dataset: fetch its sources, build it, export it (``ticktock bench ...``).

- ``fetch`` (:mod:`~ticktock.corpus.bench.sources`): puts the sources published on the Hub into the local Hugging
  Face cache, so that the conversions run offline later;
- ``build`` (:mod:`~ticktock.corpus.bench.build`): converts every available source (a Hub id by default, a local
  folder by option) with the shipped selection into one manifest per source, then prints per task the sessions and
  chunks found against the paper's, and what is missing and why; a rerun resumes;
- ``export`` (:mod:`~ticktock.corpus.bench.export`): writes a corpus (a folder with ``manifest.jsonl``) as a dataset
  in the Hub's layout: one config per task, split ``test``, the columns of :mod:`ticktock.sessions.dataset_rows`,
  and a dataset card (:mod:`~ticktock.corpus.bench.card`); ``--push-to-hub REPO`` uploads it.

A dataset written by ``export`` (a folder or a Hub id) is replayed without manifests by ``task=hf``
(:class:`ticktock.sessions.dataset_task.DatasetTask`). Command line: ``python -m ticktock.corpus.bench`` (or
``ticktock bench``), see :mod:`ticktock.corpus.bench.__main__`.
"""

from ticktock.errors import ConfigError, InputDataError


class BenchError(InputDataError):
    """A source, corpus or dataset the bench commands cannot use; the message names it (exit code 3)."""


class BenchOptionError(ConfigError):
    """A bench command's option that cannot be used (``--src nope=DIR``); the message names it (exit code 2)."""
