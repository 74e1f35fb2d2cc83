"""Autoregressive decoding (AR): one target forward per committed token; the baseline of every table.

The first forward is the chunk's audio prefill (head + audio + tail) and yields the decision token;
each later forward feeds the last committed token. #MAT = 1.00 by construction.
"""

from __future__ import annotations

from ticktock.decoders.contract import Decoder


class ARDecoder(Decoder):
    name = "ar"
