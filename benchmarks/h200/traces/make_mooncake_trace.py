"""Writes mooncake_h200.jsonl: a Mooncake-format trace (timestamp ms, input_length,
output_length, hash_ids of 512-token blocks) written for llmbench, not taken from anywhere: 240
requests over ~30 s of bursty (gamma, shape 0.5) arrivals at 8 req/s; 4 conversations' worth of
shared system prefixes (1-3 blocks), then each request's own blocks; inputs 1-3 blocks long (under the server's 2048-token context with the output),
outputs 32-256 tokens. Deterministic (seed 0).

    python benchmarks/h200/traces/make_mooncake_trace.py > benchmarks/h200/traces/mooncake_h200.jsonl
"""

import json
import random

rng = random.Random(0)
t_ms, next_block = 0.0, 100
for i in range(240):
    t_ms += rng.gammavariate(0.5, 1 / (0.5 * 8)) * 1e3
    group = rng.randrange(4)
    shared = list(range(group * 10, group * 10 + rng.randint(1, 3)))
    own = list(range(next_block, next_block + rng.randint(0, 3 - len(shared))))
    next_block += len(own)
    blocks = shared + own
    print(json.dumps({"timestamp": round(t_ms), "input_length": 512 * len(blocks) - rng.randrange(0, 200),
                      "output_length": rng.randint(32, 256), "hash_ids": blocks}))
