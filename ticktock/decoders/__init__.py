"""Decoding methods. Each is one module here + one config in configs/decoder/ + one test file."""
