"""The oracle probe (the paper's Observations 1 and 2): decode every chunk twice from the same state.

In the idle window before chunk t (with no time limit: run it under ``clock=free``) the chunk is decoded
to its end under the silence hypothesis; then, when the audio arrives, it is decoded autoregressively with
the real audio, which is what the session continues with. The diagnostics record whether the two outputs
are token-identical (``draft_full_match``) and whether the first token differs (``first_token_changed``);
``python -m ticktock.probe`` summarises them per task, chunk kind and user speech.
"""

from __future__ import annotations

from ticktock.decoders.ar import ARDecoder
from ticktock.decoders.step import ChunkStep
from ticktock.decoders.idle import IdleWindow


class OracleProbeDecoder(ARDecoder):
    name = "oracle_probe"

    def __init__(self, name: str | None = None):
        super().__init__(name)
        self.silence_output: list[int] | None = None

    def start_session(self, session) -> None:
        self.silence_output = None

    def idle(self, window: IdleWindow) -> None:
        state = window.adapter.snapshot()
        hypothesis = window.decoding()
        prefix = window.next_inputs.segments(window.silence(fresh=True))
        while not hypothesis.done:
            hypothesis.verify(prefix, None)
            prefix = [[hypothesis.output[-1]]]
        window.adapter.restore(state)
        self.silence_output = hypothesis.output

    def decode_chunk(self, step: ChunkStep) -> None:
        super().decode_chunk(step)
        silence, self.silence_output = self.silence_output, None
        if silence is not None:
            step.counters.record_silence_draft(silence, complete=True, output=step.output)
