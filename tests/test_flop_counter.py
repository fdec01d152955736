"""solkit's FLOP counts against PyTorch's own counter (FlopCounterMode), recorded on the H200 machine.

``data/flop_counter.json`` is what ``benchmarks/flop_counter.py`` recorded with torch 2.11 (the
file says which versions): for each operator shape the tests use, the forward and the forward
plus backward counts, and for whole models (torchvision's ResNet-50, Hugging Face Llama-3-8B and
BERT-base from their configs) the same. FlopCounterMode counts matrix products, convolutions and
attention (2 FLOPs per multiply-add, attention over every (query, key) pair whatever the mask);
it counts no elementwise work. So each check compares it with solkit's matrix FLOPs, and for
attention with the unmasked count.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solkit import models, ops

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "flop_counter.json").read_text())
OPS = {row["id"]: row for row in DATA["ops"]}
MODELS = {row["id"]: row for row in DATA["models"]}

#: torch's convolution_backward formula ignores groups ("details involving ... groups ... I skip"),
#: so it counts a grouped conv's gradients as if ungrouped: not comparable (solkit: 2x the forward)
GROUPED = {row["id"] for row in DATA["ops"] if row["op"] == "conv2d" and row["params"]["groups"] > 1}


def _workload(row):
    return ops.REGISTRY[row["op"]].function(**row["params"])


def _unmasked(row):
    """The workload torch counts: attention over every pair (torch ignores the causal mask)."""
    if row["op"] == "attention" and row["params"]["impl"] != "naive":
        return ops.attention(**{**row["params"], "causal": False})
    return _workload(row)


def test_the_file_covers_every_counted_operator():
    """The recording has no errors and covers every operator that FlopCounterMode counts (products, convs, attention)."""
    assert DATA["errors"] == []
    assert {row["op"] for row in DATA["ops"]} == {"matmul", "qkv_projection", "conv2d", "attention"}
    assert DATA["meta"]["versions"]["torch"].startswith("2.")


@pytest.mark.parametrize("case", sorted(OPS))
def test_forward_counts_agree(case):
    """Forward: torch's count equals solkit's executed matrix FLOPs (attention: over every pair)."""
    row = OPS[case]
    assert row["forward"] == _unmasked(row).matrix_flops


@pytest.mark.parametrize("case", sorted(set(OPS) - GROUPED))
def test_backward_counts_agree(case):
    """Backward (forward + backward minus forward): torch's count equals solkit's backward matrix FLOPs.

    Fused attention kernels (cuDNN, flash, efficient) recompute S and P: five products for the
    forward's two (2.5x); the math backend and naive attention run four products (2x).
    """
    row = OPS[case]
    backward = row["step"] - row["forward"]
    fused = any("scaled_dot_product" in op for op in row["forward_ops"])
    if row["op"] == "attention" and not fused:  # SDPA's math backend: the naive products over every pair
        expected = models.backward(ops.attention(**{**row["params"], "causal": False, "impl": "naive"})).matrix_flops
    else:
        expected = models.backward(_unmasked(row)).matrix_flops
    assert backward == expected
    if fused:
        assert backward == 2.5 * row["forward"]


def test_grouped_conv_backward_is_torch_overcount():
    """Depthwise 3x3 on 256 x 14 x 14: solkit's dgrad + wgrad are 2 x 903,168; torch counts 232,114,176 (no groups)."""
    (depthwise,) = [OPS[c] for c in GROUPED if OPS[c]["params"]["groups"] == 256]
    forward = 2 * 256 * 14 * 14 * 9  # 903,168: one multiply-add per output and tap
    assert depthwise["forward"] == forward == _workload(depthwise).matrix_flops
    assert models.backward(_workload(depthwise)).matrix_flops == 2 * forward
    # torch: dgrad right (903,168), wgrad as if one group of 256 channels: 2*(256*14*14)*(3*3)*256 = 231,211,008
    assert depthwise["step"] - depthwise["forward"] == forward + 2 * (256 * 14 * 14) * (3 * 3) * 256  # 232,114,176


@pytest.mark.parametrize("batch", [1, 32])
def test_resnet50(batch):
    """torchvision ResNet-50: forward = solkit's conv + FC FLOPs; the step's backward lacks only the stem's dgrad."""
    row = MODELS[f"resnet50/batch={batch}"]
    forward = models.resnet50(batch)
    assert row["forward"] == forward.matrix_flops  # 8,178,368,512 per image: 4.089 GMACs
    stem_dgrad = 2 * batch * 64 * 112 * 112 * 3 * 7 * 7  # the images need no gradient: 236,027,904 per image
    assert row["step"] - row["forward"] == models.backward(forward).matrix_flops - stem_dgrad


def test_llama3_8b_forward():
    """HF LlamaForCausalLM (Llama-3-8B config), 8192 tokens: its matmuls are solkit's GEMMs; its bmm, attention over every pair.

    The one bmm solkit does not model: the rotary embedding's [64, 1] @ [1, 8192] frequency
    product, 2*64*8192 = 1,048,576 FLOPs.
    """
    row = MODELS["llama3-8b/batch=1,seq=8192"]
    w = models.transformer(32, 128256, 1, 8192, 4096, 32, kv_heads=8, head_dim=128, ffn=14336)
    gemms = sum(k.matrix_flops * n for k, n in w.counted if k.kind == "gemm")
    attention = 32 * ops.attention(1, 32, 8192, head_dim=128, kv_heads=8).flops  # every pair
    assert row["forward_ops"]["aten.mm"] == gemms  # 122,956,323,749,888
    assert row["forward_ops"]["aten.bmm"] == attention + 2 * 64 * 8192
    assert row["step_ops"]["aten.mm"] == 3 * gemms  # dgrad and wgrad of every projection, the LM head included


def test_bert_base_forward():
    """HF BertModel (no head), 8 x 512 tokens: its addmm are solkit's GEMMs plus the pooler [8, 768] @ [768, 768]."""
    row = MODELS["bert-base/batch=8,seq=512"]
    w = models.transformer(12, 30522, 8, 512, 768, 12, head_dim=64, ffn=3072, mlp="gelu", norm="layernorm",
                           causal=False, lm_head=False)
    gemms = sum(k.matrix_flops * n for k, n in w.counted if k.kind == "gemm")
    pooler = 2 * 8 * 768 * 768  # 9,437,184
    assert row["forward_ops"]["aten.addmm"] == gemms + pooler  # 695,794,139,136
    assert row["forward_ops"]["aten.bmm"] == 12 * ops.attention(8, 12, 512, head_dim=64).flops  # 77,309,411,328
