"""A naive reference replay: every token from a full recompute of the whole sequence, no KV cache."""

from __future__ import annotations

import torch

from ticktock.sessions.audio import chunk_samples, load_audio
from ticktock.decoders.selection import Sampling


def naive_replay(adapter, session, sampling=Sampling(), max_chunks=None) -> list[list[int]]:
    protocol = adapter.protocol
    selector = sampling.selector(protocol, session.session_id, tools_enabled=bool(session.tools))
    embed = adapter.model.get_input_embeddings()
    frontend = adapter.frontend
    audio = load_audio(session.audio_path)
    with torch.inference_mode():
        prompt = adapter.encode_text(adapter.prompt_text(session.system_prompt, session.tools))
        pieces = [embed(torch.tensor(prompt))]
        state = frontend.initial_state()
        outputs, carry = [], []
        for i, span in enumerate(session.chunk_spans()[:max_chunks]):
            head = carry + protocol.unit_head(i)
            samples = torch.as_tensor(chunk_samples(audio, span.start_s, span.end_s))
            audio_embeds, state = frontend.encode(samples, state)
            pieces += [embed(torch.tensor(head)), audio_embeds]
            out: list[int] = []
            while not protocol.is_done(out):
                sequence = torch.cat(pieces + ([embed(torch.tensor(out))] if out else []))
                logits = adapter.model(inputs_embeds=sequence[None]).logits[0, -1].float()
                out.append(selector.choose(logits, out, i))
            if len(out) > 1:
                pieces.append(embed(torch.tensor(out[:-1])))
            carry = out[-1:]
            outputs.append(out)
    return outputs
