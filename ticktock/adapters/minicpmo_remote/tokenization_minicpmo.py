"""MiniCPM-o 4.5's tokenizer, as a miniature checkpoint ships it (``auto_map`` ``AutoTokenizer``).

The Qwen2 byte-level BPE of ``vocab.json`` + ``merges.txt`` with the family's added tokens at their published
ids (``tokenizer_config.json``'s ``added_tokens_decoder``), plus the ids a duplex runtime looks up by name.
Written for TickTock's miniatures; it stands alone.
"""

from transformers import Qwen2Tokenizer

#: attribute -> token: the ids a MiniCPM-o runtime reads off the tokenizer. As in the MiniCPM-V family, ``im_start_id``
#: and ``im_end_id`` bound an *image* (``<image>`` ``</image>``), not a chat turn; ``eot_id`` ends a chat turn, and
#: ``spk_start_id`` / ``spk_end_id`` bound a speaker embedding (vLLM's MiniCPM-o processor reads all of them).
NAMED_TOKENS = {"im_start_id": "<image>", "im_end_id": "</image>", "eot_id": "<|im_end|>",
                "spk_start_id": "<|spk_bos|>", "spk_end_id": "<|spk_eos|>", "unit_id": "<unit>",
                "unit_end_id": "</unit>", "listen_id": "<|listen|>", "speak_id": "<|speak|>",
                "tts_bos_id": "<|tts_bos|>", "tts_eos_id": "<|tts_eos|>", "tts_pad_id": "<|tts_pad|>",
                "turn_eos_id": "<|turn_eos|>", "chunk_eos_id": "<|chunk_eos|>", "audio_start_id": "<|audio_start|>",
                "audio_end_id": "<|audio_end|>", "image_start_id": "<image>", "image_end_id": "</image>",
                "slice_start_id": "<slice>", "slice_end_id": "</slice>"}


class MiniCPMOTokenizer(Qwen2Tokenizer):
    """``Qwen2Tokenizer`` with MiniCPM-o's named token ids (``tokenizer.unit_id``, ``tokenizer.listen_id``, ...) and
    ``tokenizer.bad_token_ids``, the ids ``tokenizer_config.json`` lists (pieces a duplex runtime never lets the model
    say: brackets, bytes outside ASCII)."""

    def __init__(self, *args, bad_token_ids=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.bad_token_ids = [int(i) for i in (bad_token_ids or [])]


def named_id(token: str) -> property:
    """A read-only attribute: the id of ``token``."""
    return property(lambda self: self.convert_tokens_to_ids(token))


for _name, _token in NAMED_TOKENS.items():
    setattr(MiniCPMOTokenizer, _name, named_id(_token))
MiniCPMOTokenizer.bos_id = property(lambda self: self.bos_token_id)
MiniCPMOTokenizer.eos_id = property(lambda self: self.eos_token_id)
