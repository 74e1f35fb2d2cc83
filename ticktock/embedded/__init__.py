"""The embedded default model: a small full-duplex speech LM trained here, shipped as package data."""
