"""A made-up tokenizer covering a random-weight model's whole vocabulary.

A server must be able to decode every id the model can emit, and a borrowed smaller tokenizer
cannot (SmolLM2's 49,152 ids against LLaMA-3's 128,256). So a synthetic model gets a word-level
vocabulary `w0 .. w{V-1}`: one word is one token, words are split on whitespace and decoded
joined by spaces, no special tokens are added, so a prompt of N words is exactly N tokens in
the client, in the server and in its usage counts. Content is meaningless by design; the
weights are random anyway.
"""

from __future__ import annotations

import json
from pathlib import Path

FILES = ("tokenizer.json", "tokenizer_config.json")


def write_wordlevel_tokenizer(vocab_size: int, out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {f"w{i}": i for i in range(vocab_size)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="\x00", cleanup=False)  # joins words with spaces
    tok.save(str(out / "tokenizer.json"))
    # No bos/eos: nothing is ever prepended, so counts stay exact. The eos id only tells servers
    # when to stop; llmbench forces the output length (ignore_eos) anyway.
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1 << 30,
        "add_bos_token": False, "add_eos_token": False, "clean_up_tokenization_spaces": False,
        "unk_token": "w0", "eos_token": "w2"}, indent=1))


def has_tokenizer(model_dir: Path) -> bool:
    return all((model_dir / f).exists() for f in FILES)
