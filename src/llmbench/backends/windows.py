"""The sliding-window scheme a backend scores text with (the one transformers documents).

The text is tokenized without BOS. The first window is the first `context_len` tokens and
scores every target in it; each later window ends `stride` tokens further and scores only
those `stride` new targets, each conditioned on at least context_len - stride preceding
tokens. So every token after the first is scored exactly once (the first has no predictor).
"""

from __future__ import annotations

from collections.abc import Iterator

from llmbench.errors import SpecError


def windows(n_tokens: int, context_len: int, stride: int) -> Iterator[tuple[int, int, int]]:
    """(begin, end, score_from): run tokens[begin:end], score targets at positions >= score_from."""
    if stride >= context_len:
        raise SpecError([("perplexity.stride", f"{stride} must be below context_len {context_len}: "
                          "each window needs at least one token of context before its targets")])
    end = min(context_len, n_tokens)
    yield 0, end, 1
    while end < n_tokens:
        prev_end, end = end, min(end + stride, n_tokens)
        yield max(0, end - context_len), end, prev_end
