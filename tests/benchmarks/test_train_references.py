"""benchmarks/train_references.py: its statistics against scipy and by hand, torchtitan's log
read to the known figures, and the nanoGPT-style reference run beside llmbench on the CPU."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import train_references as tr  # noqa: E402

LOG = """\
[titan] 2026-12-05 01:30:00 - root - INFO - step:  1  loss: 11.9  grad_norm: 3.1  memory: 40.1GiB(29%)  tps: 1,204  tflops: 58.2  mfu: 5.88%
[titan] 2026-12-05 01:30:01 - root - INFO - step:  2  loss: 11.2  grad_norm: 2.9  memory: 40.1GiB(29%)  tps: 23,010  tflops: 1,110.1  mfu: 41.2%
[titan] 2026-12-05 01:30:02 - root - INFO - step:  3  loss: 10.8  grad_norm: 2.5  memory: 40.1GiB(29%)  tps: 23,500  tflops: 1,134.0  mfu: 42.0%
[titan] 2026-12-05 01:30:03 - root - INFO - step:  4  loss: 10.1  grad_norm: 2.2  memory: 40.1GiB(29%)  tps: 23,100  tflops: 1,115.0  mfu: 41.5%
"""


def test_torchtitan_log_is_read_to_its_figures():
    assert tr.parse_torchtitan_log(LOG) == {1: 1204.0, 2: 23010.0, 3: 23500.0, 4: 23100.0}
    assert tr.after_warmup_median(tr.parse_torchtitan_log(LOG), 1) == 23100.0   # median of 3
    with pytest.raises(ValueError, match="no step after"):
        tr.after_warmup_median({1: 5.0}, 1)


def test_torchtitan_command_holds_the_point():
    a = tr.argparse.Namespace(warmup=5, steps=20, seq_len=2048, micro_batch=2, compile=True)
    cmd = tr.torchtitan_cmd(a, Path("/t"), Path("/d"), Path("/o"))
    assert cmd[cmd.index("--training.steps") + 1] == "25"          # warm-up + timed, as llmbench
    assert cmd[cmd.index("--training.seq_len") + 1] == "2048"
    assert cmd[cmd.index("--training.local_batch_size") + 1] == "2"
    assert cmd[cmd.index("--experimental.custom_import") + 1] == "torchtitan_llama"
    assert cmd[cmd.index("--model.flavor") + 1] == "llmbench" and "--compile.enable" in cmd
    # llmbench's step recomputes nothing: torchtitan's default (selective checkpointing) would
    assert cmd[cmd.index("--activation_checkpoint.mode") + 1] == "none"


def test_torchtitan_assets_cover_the_model_vocabulary(tmp_path):
    """Every id the model has decodes, and the data is whole rows of in-vocabulary words."""
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer

    tok, data = tr.torchtitan_assets(tmp_path, vocab=1000, tokens=3 * 2048, seed=1)
    t = Tokenizer.from_file(str(tok / "tokenizer.json"))
    assert t.get_vocab_size() == 1000
    assert t.encode("w0 w999 w7").ids == [0, 999, 7]
    rows = [tr.json.loads(line)["text"].split() for line in (data / "train.json").read_text().splitlines()]
    assert len(rows) == 3 and all(len(r) == 2048 for r in rows)
    assert all(0 <= int(w[1:]) < 1000 for r in rows for w in r)


@pytest.mark.gpu
def test_torchtitan_builds_llmbench_parameters():
    """The same parameters and the same FLOP count per token on both sides (meta device).
    torchtitan 0.2.2 and its dependencies are carried to the GPU machine only, so this runs
    there (on the CPU with them on PYTHONPATH it printed the same counts: 3-8b at 2 layers,
    1,486,901,248 parameters, 5,970,714,624 FLOPs per token at s2048)."""
    try:    # not a test-environment module: carried to the GPU machine (this test is `gpu`)
        import torchtitan  # noqa: F401
    except ImportError:
        pytest.skip("torchtitan 0.2.2 is carried to the GPU machine only")
    torch = pytest.importorskip("torch")
    from torchtitan.models.llama3.model.model import Transformer
    from torchtitan_llama import llama_model_args

    from llmbench.kinds.training.config import TrainPoint
    from llmbench.kinds.training.llama import build
    from llmbench.roofline.flops import flops_per_token

    args = llama_model_args("3-8b", layers=2)
    with torch.device("meta"):
        m = Transformer(args)
    n, fpt = args.get_nparams_and_flops(m, 2048)
    w = build(TrainPoint(workload="llama", size="3-8b", layers=2, seq_len=2048),
              torch.device("meta"), torch.float32)
    assert n == w.total_params
    assert fpt == flops_per_token(w.flop_params, w.layers, w.hidden, 2048)
    with pytest.raises(ValueError, match="tied embedding"):
        llama_model_args("3.2-1b")


@pytest.mark.slow
def test_nanogpt_reference_beside_llmbench_on_the_cpu(capsys):
    pytest.importorskip("torch")
    res = tr.compare(tr.argparse.Namespace(
        reference="nanogpt", size="small", layers=1, seq_len=32, micro_batch=2, compile=False,
        repeats=2, steps=3, warmup=1, device="cpu", seed=0))
    assert len(res["llmbench_tok_s"]) == len(res["reference_tok_s"]) == 2
    assert all(v > 0 for v in res["llmbench_tok_s"] + res["reference_tok_s"])
    # the median of two rounds is their mean
    assert res["median_ratio"] == pytest.approx(sum(res["llmbench_tok_s"]) / sum(res["reference_tok_s"]))
    # the same FLOPs per token on both sides: 6N + 12 L h s with N of GPT-2 small at one layer
    n = res["llmbench"]["flop_params"]
    assert res["llmbench"]["flops_per_token"] == 6 * n + 12 * 1 * 768 * 32
    out = capsys.readouterr().out
    assert out.index("round 1 llmbench") < out.index("round 1 reference")
    assert out.index("round 2 reference") < out.index("round 2 llmbench")
    assert math.isfinite(res["mean"])
