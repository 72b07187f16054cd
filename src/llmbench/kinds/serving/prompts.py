"""Serving prompts: synthetic prompts of exact token lengths in the model's tokenizer (windows of
the bundled English text, all different unless a shared prefix is asked for), or prompts from
a ShareGPT-format JSON file."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Callable

from llmbench.errors import SpecError
from llmbench.loadgen.client import RequestSpec
from llmbench.kinds.serving.config import LengthDist
from llmbench.kinds.serving.tokenizer import Tokenizer


def exact_text(tok: Tokenizer, ids: list[int], fill: Callable[[int], list[int]]) -> tuple[str, int]:
    """Text whose encoding has len(ids) tokens: decode, re-encode, trim or top up, repeat."""
    want = len(ids)
    text = tok.decode(ids)
    for _ in range(8):
        got = tok.encode(text)
        if len(got) == want:
            return text, want
        got = got[:want] if len(got) > want else got + fill(want - len(got))
        text = tok.decode(got)
    return text, tok.count(text)


def token_corpus(tok: Tokenizer, text: str) -> list[int]:
    """The text in the model's tokens, to cut prompt windows from. A made-up vocabulary (a
    random-weight model's, models/synthetic_tokenizer.py) reads English as one unknown word
    repeated, which would make every prompt the same (and a prefix-cache hit): such a model gets
    random ids instead, as its offline prompts do (kinds/inference/prompts.py)."""
    ids = tok.encode(text)
    if len(set(ids)) * 20 >= len(ids):
        return ids
    rng = random.Random("serving/random-ids")
    hi = max(101, tok.vocab_size - 100)
    return [rng.randrange(100, hi) for _ in range(max(len(ids), 4096))]


def synthetic_prompts(tok: Tokenizer, n: int, input_len: LengthDist, output_len: LengthDist,
                      shared_prefix: float, seed: int, groups: int = 1) -> list[RequestSpec]:
    """`shared_prefix` of each prompt is common to its group (request i is in group
    i % groups); the rest is the prompt's own window."""
    from llmbench.data import bundled_text

    corpus = token_corpus(tok, bundled_text())
    m = len(corpus)
    rng = random.Random(f"serving/{seed}")
    lens = [input_len.sample(rng) for _ in range(n)]
    prefix_len = [round(shared_prefix * L) for L in lens]
    starts = rng.sample(range(m), k=min(n, m)) + [rng.randrange(m) for _ in range(max(0, n - m))]

    def window(s: int, k: int) -> list[int]:
        return [corpus[(s + i) % m] for i in range(k)]

    # group 0 starts at the text's beginning (as with one group); the others at their own place
    group_start = [0] + [random.Random(f"group/{seed}/{g}").randrange(m) for g in range(1, groups)]
    out = []
    for i, (L, p, s) in enumerate(zip(lens, prefix_len, starts)):
        ids = window(group_start[i % groups], p) + window(s, L - p)
        text, actual = exact_text(tok, ids, lambda k, s=s: window(s + L, k))
        out.append(RequestSpec(text, actual, output_len.sample(rng)))
    return out


def sharegpt_prompts(path: Path, tok: Tokenizer, n: int, output_len: LengthDist | None,
                     seed: int) -> tuple[list[RequestSpec], list[str]]:
    """First human turn as the prompt; the reply's token count as output length (unless given)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise SpecError([("--dataset", f"cannot read ShareGPT JSON {path}: {e}")]) from None
    if not isinstance(data, list):
        raise SpecError([("--dataset", "a ShareGPT file is a JSON list of conversations")])
    rng = random.Random(f"sharegpt/{seed}")
    rng.shuffle(data)
    out: list[RequestSpec] = []
    for conv in data:
        turns = conv.get("conversations") or conv.get("conversation") if isinstance(conv, dict) else None
        if not turns or len(turns) < 2:
            continue
        prompt, reply = turns[0].get("value") or "", turns[1].get("value") or ""
        pl = tok.count(prompt)
        ol = output_len.sample(rng) if output_len else tok.count(reply)
        if pl < 4 or ol < 4 or pl > 1024 or pl + ol > 2048:   # vLLM's ShareGPT filter
            continue
        out.append(RequestSpec(prompt, pl, ol))
        if len(out) == n:
            break
    notes = []
    if not out:
        raise SpecError([("--dataset", f"{path} holds no usable conversation (human turn then reply)")])
    if len(out) < n:
        notes.append(f"dataset gave {len(out)} usable prompts for {n} requests; prompts repeat")
    return out, notes


def trace_prompts(tok: Tokenizer, reqs: list, block_tokens: int | None, seed: int) -> list[RequestSpec]:
    """Prompts for replayed trace requests (loadgen/traces.py): each hash id is one fixed block
    of the bundled text, so requests whose hash ids agree share exactly that prefix, as in the
    trace; the rest of a prompt is its own window. Lengths are exact in `tok`."""
    from llmbench.data import bundled_text

    corpus = token_corpus(tok, bundled_text())
    m = len(corpus)
    rng = random.Random(f"trace/{seed}")
    blocks: dict[int, list[int]] = {}

    def window(s: int, k: int) -> list[int]:
        return [corpus[(s + i) % m] for i in range(k)]

    def block(h: int) -> list[int]:
        if h not in blocks:
            blocks[h] = window(random.Random(f"trace/{seed}/{h}").randrange(m), block_tokens or 0)
        return blocks[h]

    out = []
    for r in reqs:
        ids = [t for h in r.hash_ids for t in block(h)][:r.input_len] if block_tokens else []
        s, n = rng.randrange(m), len(ids)
        ids += window(s, r.input_len - n)
        text, actual = exact_text(tok, ids, lambda k, s=s, n=n: window(s + r.input_len - n, k))
        out.append(RequestSpec(text, actual, r.output_len))
    return out
