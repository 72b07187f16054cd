"""Synthetic training batches: random tokens (throughput does not depend on the text), or with
`learnable` a counting pattern (next token = this token + 1, modulo a period, from a random
start per row) that a working training step learns within tens of steps."""

from __future__ import annotations

from collections.abc import Callable

import torch

POOL = 4          # distinct batches cycled through, so no step reuses the previous one's inputs
PERIOD = 61


def counting_rows(rows: int, length: int, vocab: int, g: torch.Generator) -> torch.Tensor:
    period = min(PERIOD, vocab)
    start = torch.randint(0, period, (rows, 1), generator=g)
    return (start + torch.arange(length)) % period


def token_batches(vocab: int, micro_batch: int, seq_len: int, device, seed: int,
                  learnable: bool) -> Callable[[int], tuple]:
    g = torch.Generator().manual_seed(seed)
    pool = []
    for _ in range(POOL):
        if learnable:
            ids = counting_rows(micro_batch, seq_len + 1, vocab, g)
        else:
            ids = torch.randint(0, vocab, (micro_batch, seq_len + 1), generator=g)
        pool.append(_split(ids, device))
    return lambda i: pool[i % POOL]


def _split(ids: torch.Tensor, device) -> tuple[torch.Tensor, torch.Tensor]:
    return (ids[:, :-1].contiguous().to(device, non_blocking=True),
            ids[:, 1:].contiguous().to(device, non_blocking=True))


def pool_from_rows(make_rows: Callable[[torch.Generator], torch.Tensor], device,
                   seed: int) -> Callable[[int], tuple]:
    g = torch.Generator().manual_seed(seed)
    pool = [_split(make_rows(g), device) for _ in range(POOL)]
    return lambda i: pool[i % POOL]
