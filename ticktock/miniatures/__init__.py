"""Miniature checkpoints: tiny random models in the real models' on-disk layouts (safetensors key names and
shards, config.json keys, tokenizer files with the special tokens at their published ids), so the real loading
paths run on a CPU in seconds. Used by ``scripts/make_miniature.py``, ``ticktock certify`` and the tests; no
production module imports from here.
"""
