"""GenSLM's input: nucleotide sequences read as codons by a WordLevel tokenizer (HF `tokenizers`).

Vocabulary of 69: [UNK] [CLS] [SEP] [PAD] [MASK] (ids 0-4, the order of GenSLM's
codon_wordlevel_69vocab) and the 64 codons AAA..TTT (ids 5-68, lexicographic). A sequence is
split into non-overlapping codons from its first base, a trailing partial codon dropped.
"""

from __future__ import annotations

import itertools
import random

SPECIAL = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")
CODONS = tuple("".join(c) for c in itertools.product("ACGT", repeat=3))
VOCAB = {t: i for i, t in enumerate(SPECIAL + CODONS)}


def codon_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab=dict(VOCAB), unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tok


def group_codons(seq: str) -> str:
    seq = seq.upper()
    return " ".join(seq[i:i + 3] for i in range(0, len(seq) - len(seq) % 3, 3))


def random_genes(n: int, codons: int, rng: random.Random) -> list[str]:
    return ["".join(rng.choices("ACGT", k=3 * codons)) for _ in range(n)]


def repeating_genes(n: int, codons: int, rng: random.Random, motif_codons: int = 9) -> list[str]:
    """A learnable task: one short random motif, repeated, each row from a random phase."""
    motif = "".join(rng.choices("ACGT", k=3 * motif_codons))
    out = []
    for _ in range(n):
        phase = 3 * rng.randrange(motif_codons)
        reps = (3 * codons + phase) // len(motif) + 2
        out.append((motif * reps)[phase:phase + 3 * codons])
    return out


def encode(tok, genes: list[str]) -> list[list[int]]:
    return [e.ids for e in tok.encode_batch([group_codons(g) for g in genes])]
