"""One training point in its own process: `python -m llmbench.train.worker POINT.json OUT.json`.

torchrun starts one per device (`llmbench train --nproc N`); rank 0 writes the result."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from llmbench.train.config import TrainPoint
    from llmbench.train.loop import run

    point = TrainPoint.model_validate_json(Path(argv[0]).read_text())
    result = run(point)
    import torch.distributed as dist

    if result["rank"] == 0:
        Path(argv[1]).write_text(json.dumps(result))
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
