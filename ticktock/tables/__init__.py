"""``python -m ticktock.tables``: the paper's tables, figures and an HTML report from result folders.

A pure function of the run directories written by ``python -m ticktock.run``: it never imports torch,
transformers or model code and never re-runs a model. See ``__main__.py`` for the command line.

Example::

    >>> from ticktock.tables import load_results, print_headline
    >>> print_headline(load_results(["results/runs/*"]))   # doctest: +SKIP
"""

from ticktock.tables.build import Built, build_report, build_tables, print_headline, write_outputs
from ticktock.tables.load import Results, TablesError, load_results
from ticktock.tables.metrics import ChunkSetMismatch

__all__ = ["Built", "ChunkSetMismatch", "Results", "TablesError", "build_report", "build_tables", "load_results",
           "print_headline", "write_outputs"]
