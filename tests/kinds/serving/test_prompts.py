"""A random-weight model's made-up tokenizer (models/synthetic_tokenizer.py): N words are N
tokens both ways, and serving prompts built with it differ from each other (English text is
one unknown word to it, so windows of it would all be the same prompt)."""

from llmbench.models.synthetic_tokenizer import write_wordlevel_tokenizer
from llmbench.kinds.serving.prompts import synthetic_prompts
from llmbench.kinds.serving.config import LengthDist
from llmbench.kinds.serving.tokenizer import load_tokenizer


def test_made_up_vocabulary_counts_exactly_and_prompts_differ(tmp_path):
    write_wordlevel_tokenizer(128256, tmp_path)
    tok = load_tokenizer(str(tmp_path / "tokenizer.json"))
    assert tok.vocab_size == 128256
    ids = [0, 7, 128255, 4096]
    assert tok.encode(tok.decode(ids)) == ids
    specs = synthetic_prompts(tok, 16, LengthDist.parse("128"), LengthDist.parse("8"), 0.0, seed=1)
    assert len({s.prompt for s in specs}) == 16
    assert all(s.prompt_len == 128 == tok.count(s.prompt) for s in specs)
    assert all(0 not in tok.encode(s.prompt) for s in specs)  # never the unknown word


def test_a_real_tokenizer_keeps_the_bundled_text(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = {w: i for i, w in enumerate(sorted(set("the quick brown fox jumps over lazy dog".split())))}
    t = Tokenizer(models.WordLevel(vocab={**words, "[UNK]": len(words)}, unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.save(str(tmp_path / "tokenizer.json"))
    from llmbench.kinds.serving.prompts import token_corpus

    text = "the quick brown fox jumps over the lazy dog"
    assert token_corpus(load_tokenizer(str(tmp_path / "tokenizer.json")), text) == \
        load_tokenizer(str(tmp_path / "tokenizer.json")).encode(text)


def test_prompts_have_the_asked_length_as_the_served_tokenizer_counts_them(tmp_path):
    """A random-weight model's directory, as servers load it (transformers' AutoTokenizer, as
    vLLM does): its special tokens (eos "w2") match inside words, so "w2345" is two tokens to
    the server where tokenizer.json alone reads one. llmbench's 512-token prompts must be 512
    to the server (on 2026-12-02's H200 they read 555.1 and 553.7)."""
    from transformers import AutoTokenizer

    write_wordlevel_tokenizer(128256, tmp_path)
    served = AutoTokenizer.from_pretrained(tmp_path)
    assert len(served("w2345", add_special_tokens=True)["input_ids"]) == 2   # the cause
    tok = load_tokenizer(str(tmp_path))
    specs = synthetic_prompts(tok, 20, LengthDist.parse("512"), LengthDist.parse("8"), 0.0, seed=100)
    counted = [len(served(s.prompt)["input_ids"]) for s in specs]    # the server's count
    assert counted == [512] * 20 and all(s.prompt_len == 512 for s in specs)
    assert len({s.prompt for s in specs}) == 20
