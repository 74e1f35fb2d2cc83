"""The code files a MiniCPM-o 4.5 miniature ships beside its weights, as the published checkpoint ships its own.

``config.json``'s ``auto_map`` names them, so a runtime that loads the checkpoint with ``trust_remote_code``
(vLLM-Omni: ``AutoConfig``, ``AutoTokenizer``, ``AutoProcessor``) finds the classes in the folder itself.
``ticktock.miniatures.minicpmo`` copies every ``*.py`` here except this one into the folder it writes. Each file
stands alone (numpy, torch and transformers only; nothing of ``ticktock``): it runs in the runtime's environment.

=============================  ===============================================================================
``configuration_minicpmo.py``  ``MiniCPMOConfig`` (Qwen3 fields at the top level) and the sub-configs a runtime
                               reads: ``vision_config`` (SigLIP), ``audio_config`` (Whisper), ``tts_config``
                               (``MiniCPMTTSConfig``), ``slice_config``
``tokenization_minicpmo.py``   ``MiniCPMOTokenizer``: the Qwen2 byte-level BPE with the family's token ids
``processing_minicpmo.py``     ``MiniCPMOProcessor``: text + images + audio for a turn, and the streaming audio
                               state machine a duplex session feeds (1 s units, mel windows of 102 / 104 frames)
=============================  ===============================================================================

The TickTock adapter does not use them (it loads the folder natively, ``ticktock.adapters.minicpmo``).
"""
