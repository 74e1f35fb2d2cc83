"""TickTock-Bench session corpus: spoken sessions for the 8 task types, synthesized with eSpeak NG.

Modules (import them directly; this package imports nothing heavy):

* ``knowledge``  the closed knowledge base and question templates
* ``splits``     evaluation/training seeds and item hold-outs
* ``speech``     eSpeak NG through ctypes: 16 kHz audio with word timings
* ``script``     session scripts (utterances, timing anchors, expected model behaviour)
* ``tasks``      one script builder per task type
* ``layout``     placing utterances on the timeline, resolving time references
* ``mixing``     room tone, mixing, FLAC output
* ``synth``      the generator and its CLI: ``python -m ticktock.corpus.synth --help``
* ``convert``    converters from the published sources (local copies): ``python -m ticktock.corpus.convert --help``
"""
