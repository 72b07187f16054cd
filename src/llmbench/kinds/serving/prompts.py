"""Serving prompts: synthetic prompts of exact token lengths as the server counts them (windows of
the bundled English text in the served tokenizer's ids, all different unless a shared prefix is
asked for), or prompts from a ShareGPT-format JSON file.

A prompt of `input_len` tokens is built from token ids: the tokens the server adds to every
prompt (its BOS: Tokenizer.added_per_prompt) are taken off the window, the window decoded, the
text encoded again and trimmed or topped up until the round trip decode -> encode gives the
length asked (a window cut mid-word merges differently). RequestSpec.prompt_len is the length
the server will count (kinds/serving/parity.py compares them)."""

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
    """(text, the server's count of it): text whose encoding has len(ids) tokens, plus the
    tokens the server adds (BOS). Decode, re-encode, trim or top up, until the round trip
    gives the length; after 16 tries the text's own count is returned (parity then flags it)."""
    want = len(ids)
    text = tok.decode(ids)
    for _ in range(16):
        got = tok.encode(text)
        if len(got) == want:
            return text, want + tok.added_per_prompt
        got = got[:want] if len(got) > want else got + fill(want - len(got))
        text = tok.decode(got)
    return text, tok.count_prompt(text)


def text_len(tok: Tokenizer, asked: int) -> int:
    """The tokens of text a prompt of `asked` tokens holds, the server's own (BOS) taken off."""
    return max(1, asked - tok.added_per_prompt)


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
    drawn = [rng.randrange(100, hi) for _ in range(max(len(ids), 4096))]
    # only ids that are one token again when decoded alone: the served tokenizer matches its
    # special tokens inside words ("w2" in "w2345": two tokens to the server)
    return [i for i in drawn if tok.encode(tok.decode([i])) == [i]]


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
        n = text_len(tok, L)
        p = min(p, n)
        ids = window(group_start[i % groups], p) + window(s, n - p)
        text, actual = exact_text(tok, ids, lambda k, s=s, n=n: window(s + n, k))
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
        pl = tok.count_prompt(prompt)
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
        want = text_len(tok, r.input_len)
        ids = [t for h in r.hash_ids for t in block(h)][:want] if block_tokens else []
        s, n = rng.randrange(m), len(ids)
        ids += window(s, want - n)
        text, actual = exact_text(tok, ids, lambda k, s=s, n=n, want=want: window(s + want - n, k))
        out.append(RequestSpec(text, actual, r.output_len))
    return out


# -- prompts for speculative decoding (--prompts copy | random) --------------------------------
COPY_HEAD = "Repeat the following text exactly, word for word.\n\nText: "
COPY_TAIL = "\n\nThe same text, repeated exactly: "


def copy_prompts(tok: Tokenizer, n: int, input_len: LengthDist, output_len: LengthDist,
                 seed: int) -> list[RequestSpec]:
    """Prompts that ask the model to repeat a passage of the bundled text (each its own
    window): what the answer should say is already in the prompt, so n-gram (prompt-lookup)
    speculation has something to find. The passage fills the prompt to its asked length
    (instruction and passage together, counted as the server counts them)."""
    from llmbench.data import bundled_text

    corpus = token_corpus(tok, bundled_text())
    m = len(corpus)
    rng = random.Random(f"serving/copy/{seed}")
    frame = tok.count_prompt(COPY_HEAD + COPY_TAIL)
    out = []
    for _ in range(n):
        want, s = input_len.sample(rng), rng.randrange(m)
        k = max(1, want - frame)
        for _ in range(8):   # the passage's words merge with the frame's: fit by its count
            text = COPY_HEAD + tok.decode([corpus[(s + i) % m] for i in range(k)]).strip() + COPY_TAIL
            got = tok.count_prompt(text)
            if got == want or k + want - got < 1:
                break
            k += want - got
        out.append(RequestSpec(text, got, output_len.sample(rng)))
    return out


def random_id_prompts(tok: Tokenizer, n: int, input_len: LengthDist, output_len: LengthDist,
                      seed: int) -> list[RequestSpec]:
    """Prompts of random token ids (ids that stay one token when decoded alone): text with
    nothing for a model to repeat, the opposite of copy_prompts."""
    rng = random.Random(f"serving/random/{seed}")
    hi = max(101, tok.vocab_size - 100)

    def draw(k: int) -> list[int]:
        ids: list[int] = []
        while len(ids) < k:
            i = rng.randrange(100, hi)
            if tok.encode(tok.decode([i])) == [i]:
                ids.append(i)
        return ids

    out = []
    for _ in range(n):
        text, actual = exact_text(tok, draw(text_len(tok, input_len.sample(rng))), draw)
        out.append(RequestSpec(text, actual, output_len.sample(rng)))
    return out
