"""The Llama-class training workload (kinds/training/llama.py) against independent truths:
the model cards' parameter counts, and Hugging Face's LlamaForCausalLM computing the same
loss from the same weights."""

import pytest

torch = pytest.importorskip("torch")

from llmbench.kinds.training.config import TrainPoint  # noqa: E402
from llmbench.kinds.training.llama import SIZES, Llama, build  # noqa: E402
from llmbench.models.catalog import get_arch  # noqa: E402


@pytest.mark.parametrize("size", list(SIZES))
def test_param_counts_are_the_model_cards(size):
    a = get_arch(SIZES[size])
    w = build(TrainPoint(workload="llama", size=size, seq_len=16), torch.device("meta"), torch.float32)
    assert w.total_params == a.public_params          # 1,235,814,400 / 3,212,749,824 / 8,030,261,248
    untied = 0 if a.tie_embeddings else a.vocab * a.hidden
    assert w.flop_params == a.public_params - untied
    assert w.name == a.name and w.info["kv_heads"] == a.kv_heads


def test_fewer_layers_and_narrower_are_named():
    w = build(TrainPoint(workload="llama", size="3-8b", layers=2, hidden=64, heads=4, kv_heads=2,
                         seq_len=16), torch.device("meta"), torch.float32)
    assert w.name == "llama-3-8b-L2-h64-a4-kv2" and w.layers == 2
    assert w.info["ffn"] == 14336 * 64 // 4096


def _tiny(tie: bool):
    torch.manual_seed(0)
    return Llama(layers=2, hidden=64, heads=4, kv_heads=2, ffn=160, vocab=96, seq_len=24,
                 rope_theta=500000.0, tie=tie, eps=1e-5, head_pad=False)


@pytest.mark.parametrize("tie", [True, False])
def test_same_loss_as_hugging_face_llama(tie):
    transformers = pytest.importorskip("transformers")
    ours = _tiny(tie).double()
    cfg = transformers.LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=160,
                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=24, rms_norm_eps=1e-5, rope_theta=500000.0,
                                   tie_word_embeddings=tie, attention_bias=False, mlp_bias=False)
    hf = transformers.LlamaForCausalLM(cfg).double().eval()
    sd = {"model.embed_tokens.weight": ours.tok.weight, "model.norm.weight": ours.head.norm.weight,
          "lm_head.weight": ours.head.proj.weight}
    for i, b in enumerate(ours.blocks):
        q, k, v = b.attn.qkv.weight.split([64, 32, 32])
        gate, up = b.mlp.gate_up.weight.chunk(2)
        sd |= {f"model.layers.{i}.self_attn.q_proj.weight": q, f"model.layers.{i}.self_attn.k_proj.weight": k,
               f"model.layers.{i}.self_attn.v_proj.weight": v,
               f"model.layers.{i}.self_attn.o_proj.weight": b.attn.proj.weight,
               f"model.layers.{i}.mlp.gate_proj.weight": gate, f"model.layers.{i}.mlp.up_proj.weight": up,
               f"model.layers.{i}.mlp.down_proj.weight": b.mlp.down.weight,
               f"model.layers.{i}.input_layernorm.weight": b.ln1.weight,
               f"model.layers.{i}.post_attention_layernorm.weight": b.ln2.weight}
    missing, unexpected = hf.load_state_dict({k: v.detach() for k, v in sd.items()}, strict=False)
    assert not unexpected and not [m for m in missing if "rotary" not in m]
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 96, (3, 21), generator=g)
    idx, targets = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    with torch.no_grad():
        logits = hf(input_ids=idx).logits
        truth = torch.nn.functional.cross_entropy(logits.reshape(-1, 96), targets.reshape(-1))
        mine = ours(idx, targets)
    # the head's cross-entropy runs in fp32 (head_loss.py): equal to fp32's precision
    assert mine.item() == pytest.approx(truth.item(), rel=1e-6)
    assert (ours.head.proj.weight is ours.tok.weight) == tie
