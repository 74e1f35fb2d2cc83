"""``lws_fixture``: TickTock's tiny test model in a Listen-Write-Speak unit layout.

TickTock's fixture model (a seeded two-layer Llama of width 32 over a character tokenizer, with the
frame-energy audio front-end) speaks the MiniCPM-o unit: a decision among listen, speak, backchannel and
interrupt (or a tool call), then at most 8 characters. This adapter builds the same kind of model with another
unit grammar, in the style of LWS (Listen-Write-Speak), whose units may write text while listening::

    <unit> [audio] <|listen|> </unit>
    <unit> [audio] <|write|> w1 .. wJ [<|speak|> t1 .. tK [<|turn_eos|>]] <|chunk_eos|> </unit>
    <unit> [audio] <|speak|> t1 .. tK [<|turn_eos|>] <|chunk_eos|> </unit>
    <unit> [audio] <tool_call> {json} </tool_call> <|chunk_eos|> </unit>

Its decision set is listen, speak and write (its vocabulary has no backchannel or interrupt token), J is
``max_write_tokens`` (6) and K ``max_text_tokens`` (4); ``<unk>`` is never generated. It is built from TickTock's
building blocks (``ticktock.api``): ``protocol_from_tokenizer`` reads the unit tokens' ids from the tokenizer, and
``HFUnitAdapter`` drives the model (KV cache, tree forwards, snapshots, replicas for shared devices). The one fact
it declares itself: a silent chunk's embeddings depend on the audio before it (``silence_depends_on_state``).

Example::

    >>> adapter = LwsFixtureAdapter(seed=3)
    >>> p = adapter.protocol
    >>> adapter.decode_tokens(p.decisions), p.max_write_tokens, p.max_text_tokens, p.max_tokens_per_chunk
    ('<|listen|><|speak|><|write|>', 6, 4, 24)
    >>> kind, ids = p.allowed([p.write, *adapter.encode_text("hello!")])    # J characters written:
    >>> kind, adapter.decode_tokens(sorted(ids))                            # speak, or end the unit
    ('only', '<|speak|><|chunk_eos|>')
"""

from __future__ import annotations

import string

from ticktock.api import FrameEnergyFrontend, HFUnitAdapter, protocol_from_tokenizer

# Special tokens of the vocabulary: padding and chat markers, then the unit protocol's tokens.
UNIT_TOKENS = ["<unit>", "</unit>", "<|listen|>", "<|speak|>", "<|write|>", "<|chunk_eos|>", "<|turn_eos|>",
               "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
SPECIAL_TOKENS = ["<|pad|>", "<|im_start|>", "<|im_end|>", *UNIT_TOKENS]
CHARACTERS = string.ascii_letters + string.digits + string.punctuation + " \n"


def character_tokenizer():
    """A fast tokenizer with the special tokens above (ids 0 .. 13), ``<unk>``, then one token per character."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocabulary = {token: i for i, token in enumerate([*SPECIAL_TOKENS, "<unk>", *CHARACTERS])}
    core = Tokenizer(models.WordLevel(vocab=vocabulary, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("(?m)."), behavior="isolated")
    core.decoder = decoders.Fuse()
    core.add_special_tokens(SPECIAL_TOKENS)
    return PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<|pad|>")


def seeded_model(vocab_size: int, seed: int, device: str | None):
    """The Llama (fp32, eager attention) and the audio front-end, seeded; the global torch generator is left as
    it was."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                         tie_word_embeddings=False)
    config._attn_implementation = "eager"
    outside = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config).float().to(torch.device(device or "cpu"))
        frontend = FrameEnergyFrontend(config.hidden_size)
    finally:
        torch.random.set_rng_state(outside)
    return model, frontend


class LwsFixtureAdapter(HFUnitAdapter):
    """The fixture model in the LWS unit layout; the keyword arguments are the keys of ``model=lws_fixture``.

    ``seed``: the weights' seed (3: its outputs mix listen, write and write-then-speak units); ``device``: None is
    the CPU.
    """

    api_version = 1

    def __init__(self, seed: int = 3, max_write_tokens: int = 6, max_text_tokens: int = 4, max_tool_tokens: int = 24,
                 device: str | None = None):
        tokenizer = character_tokenizer()
        model, frontend = seeded_model(len(tokenizer), seed, device)
        protocol = protocol_from_tokenizer(tokenizer, names={"write": "<|write|>"}, max_write_tokens=max_write_tokens,
                                           max_text_tokens=max_text_tokens, max_tool_tokens=max_tool_tokens,
                                           content_forbidden=frozenset({tokenizer.unk_token_id}))
        super().__init__(model, tokenizer, frontend, protocol, name="lws_fixture", system_prompt="test")

    @property
    def silence_depends_on_state(self) -> bool:
        """True: the front-end gives each frame the energies of the frame before it as context, so a silent chunk
        after speech is not encoded as a silent chunk after silence (a silence hypothesis is encoded fresh)."""
        return True
