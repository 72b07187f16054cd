import pytest

torch = pytest.importorskip("torch")

from llmbench.models.catalog import get_arch  # noqa: E402
from llmbench.kinds.training.block import Block, llama_ffn  # noqa: E402
from llmbench.kinds.training.codon import VOCAB, codon_tokenizer, encode, group_codons  # noqa: E402
from llmbench.kinds.training.config import TrainPoint  # noqa: E402
from llmbench.kinds.training.genslm import NeoX  # noqa: E402
from llmbench.kinds.training.gpt2 import GPT  # noqa: E402


@pytest.mark.parametrize("size", ["small", "medium", "large", "xl"])
def test_gpt2_param_counts_match_catalog(size):
    a = get_arch(f"gpt2-{size}")
    with torch.device("meta"):
        m = GPT(a.layers, a.hidden, a.heads, a.vocab, a.max_position)
    padding = (m.vocab_padded - a.vocab) * a.hidden
    assert sum(p.numel() for p in m.parameters()) - padding == a.public_params
    assert m.flop_params() == a.public_params - a.max_position * a.hidden


def test_gpt2_small_flop_params_by_hand():
    with torch.device("meta"):
        m = GPT(12, 768, 12, 50257, 1024)
    assert m.flop_params() == 123_653_376


def test_genslm_250m_counts_and_rotary():
    with torch.device("meta"):
        m = NeoX(12, 1840, 16, 69, 2048, ffn=2048)
    h, L, f = 1840, 12, 2048
    per_layer = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h)
    assert m.flop_params() == L * per_layer + 2 * h + 69 * h
    assert m.blocks[0].attn.rot == 28          # int(115 * 0.25), even


@pytest.mark.parametrize("size", ["25m", "250m", "2.5b"])
def test_genslm_counts_match_catalog(size):
    from llmbench.kinds.training.genslm import shape

    L, h, a, f, r = shape(size)
    with torch.device("meta"):
        m = NeoX(L, h, a, 69, 2048, f, r)
    n = sum(p.numel() for p in m.parameters()) - (m.vocab_padded - 69) * h
    arch = get_arch(f"genslm-{size}")
    assert n == arch.param_count()
    if arch.public_params:                      # 25M and 2.5B: the published counts
        assert n == arch.public_params


def test_block_shapes():
    b = Block(64, 4)
    assert sum(p.numel() for p in b.parameters()) == 12 * 64 * 64 + 13 * 64
    assert llama_ffn(4096) == 11008
    lb = Block(64, 4, style="llama", kv_heads=2)
    x = torch.randn(2, 16, 64)
    assert lb(x).shape == x.shape


def test_block_is_causal():
    torch.manual_seed(0)
    b = Block(32, 4)
    x = torch.randn(1, 8, 32)
    y = b(x)
    x2 = x.clone()
    x2[:, 5:] = torch.randn(1, 3, 32)
    y2 = b(x2)
    assert torch.allclose(y[:, :5], y2[:, :5], atol=1e-6)
    assert not torch.allclose(y[:, 5:], y2[:, 5:])


def test_codon_tokenizer():
    tok = codon_tokenizer()
    assert tok.get_vocab_size() == 69 == len(VOCAB)
    assert group_codons("atgAAAtg") == "ATG AAA"
    assert encode(tok, ["ATGAAATTT"]) == [[VOCAB["ATG"], VOCAB["AAA"], VOCAB["TTT"]]]
    assert tok.encode("ATG NNN").ids == [VOCAB["ATG"], VOCAB["[UNK]"]]
    assert [VOCAB[t] for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")] == [0, 1, 2, 3, 4]


def test_point_validation():
    from pydantic import ValidationError

    assert TrainPoint().precision == "fp32"
    assert TrainPoint(device="cuda").precision == "bf16"
    with pytest.raises(ValidationError):
        TrainPoint(workload="gpt2", size="huge")
    with pytest.raises(ValidationError):
        TrainPoint(sparsity="2:4")                 # CPU
    with pytest.raises(ValidationError):
        TrainPoint(workload="block", learnable=True)
    assert TrainPoint(workload="block").mode == "fwdbwd"


def test_lever_validation():
    from pydantic import ValidationError

    lm = TrainPoint(workload="gpt2")
    assert (lm.optimizer, lm.loss, lm.compile_mode, lm.head_pad) == ("fused", "full", "default", True)
    blk = TrainPoint(workload="block")
    assert (blk.optimizer, blk.loss) == (None, None)      # no optimizer, no LM head
    for bad in ({"optimizer": "foreach"}, {"loss": "chunked"}):
        with pytest.raises(ValidationError, match="language model"):
            TrainPoint(workload="block", **bad)
    with pytest.raises(ValidationError, match="needs compile=true"):
        TrainPoint(workload="gpt2", compile_mode="max-autotune")
    assert TrainPoint(workload="gpt2", compile=True, compile_mode="reduce-overhead").compile_mode == "reduce-overhead"
    with pytest.raises(ValidationError):
        TrainPoint(workload="gpt2", optimizer="sgd")
    # a lever is part of the point's identity
    assert TrainPoint(workload="gpt2", loss="chunked").key != lm.key
