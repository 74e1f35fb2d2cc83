"""The conformance suite behind ``ticktock certify``: properties every decoder and model adapter must have.

``decoder``: a decoder's checks (tokens equal AR's on every chunk, forwards charged and logged, counters that
agree with the forward log, no audio read before it arrives, the KV cache equal to AR's, determinism).
``adapter``: a model adapter's checks (exact snapshot/restore, chunked prefill equal to one-shot, tree forwards
equal to their chains, exact compaction, silence hypotheses, independent replicas). ``checks``: the result of one
check and the table ``ticktock certify`` prints.
"""
