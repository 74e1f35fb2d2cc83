"""Decoding methods. Each is one module here + one config in configs/decoder/ + one test file.

``DECODERS`` names the benchmark's decoder configs in report order: the main job runs them in this order and
the tables list them in it (``oracle_probe`` is the probe's instrument, not a benchmarked decoder). This
module imports nothing, so the tables can use it without importing torch or model code.
"""

DECODERS = ("ar", "pld", "recycling", "lookahead", "speclisten_silence", "speclisten_runnerup", "speclisten",
            "speclisten_plus")
