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
