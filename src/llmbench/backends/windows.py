"""The sliding windows a backend scores text with (perplexity): exactly the scheme transformers documents
("Perplexity of fixed-length models", huggingface.co/docs/transformers/perplexity).

The text is tokenized without BOS. Window k runs tokens [k * stride, min(k * stride +
context_len, n)): windows begin at multiples of the stride, the first scores every target in
it, each later one only the targets after the previous window's end (the tokens not scored
before), and the last, which ends at the text's end, is shorter when the text runs out (n =
495, 256/128: [256, 495), 239 tokens, not the last 256). So every token after the first is
scored exactly once (the first has no predictor), conditioned on at least context_len -
stride preceding tokens. perplexity = exp(sum NLL / scored tokens), natural log. The
defaults, context 256 and stride 128, are PerplexityConfig's.
"""

from __future__ import annotations

from collections.abc import Iterator

from llmbench.errors import SpecError


def windows(n_tokens: int, context_len: int, stride: int) -> Iterator[tuple[int, int, int]]:
    """(begin, end, score_from): run tokens[begin:end], score targets at positions >= score_from."""
    if stride >= context_len:
        raise SpecError([("perplexity.stride", f"{stride} must be below context_len {context_len}: "
                          "each window needs at least one token of context before its targets")])
    prev_end = 1        # the first token has no predictor
    for begin in range(0, n_tokens, stride):
        end = min(begin + context_len, n_tokens)
        yield begin, end, prev_end
        if end == n_tokens:
            return
        prev_end = end
