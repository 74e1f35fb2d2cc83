"""Judges of reply quality: plug-ins that grade each of the model's replies, as the paper's AlpacaEval-style judge.

Each is one module here + one config in ``configs/judge/`` + one test file: ``rule`` (the default: no judge
model; the quality table's rule-based task scores of ``ticktock.world.scoring`` only) and ``hf_local`` (a transformers
causal LM on this machine, scoring 1-5). The contract is ``ticktock.judges.base``; the replies a judge sees come
from ``ticktock.judges.replies``, its verdicts are stored by ``ticktock.judges.store`` and the command is
``python -m ticktock.judge``. This package imports neither torch nor transformers (only ``hf_local`` does).
"""
