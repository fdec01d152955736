"""What fusion and layout changes buy, on A100 and H200: the seed article's claims, stated exactly.

Run: python examples/fusion_analysis.py
"""

import solkit as sk
from solkit import ops
from solkit.report import format_table

# BERT-base: d 768, 12 heads, batch 8 x seq 512 = 4096 tokens. Llama-3-8B: d 4096, 32/8 heads, 8192 tokens.
CASES = {
    "QKV bert-base (3 GEMMs -> 1)": (ops.qkv_projection(4096, 768, heads=12, fused=False), ops.qkv_projection(4096, 768, heads=12)),
    "QKV llama3-8b (3 GEMMs -> 1)": (
        ops.qkv_projection(8192, 4096, heads=32, kv_heads=8, fused=False),
        ops.qkv_projection(8192, 4096, heads=32, kv_heads=8),
    ),
    "LN+residual bert-base": (ops.layernorm_residual(4096, 768, fused=False), ops.layernorm_residual(4096, 768)),
    "LN+residual llama3-8b": (ops.layernorm_residual(8192, 4096, fused=False), ops.layernorm_residual(8192, 4096)),
    "conv3x3 resnet50 NCHW -> NHWC": (
        ops.conv2d(32, 64, 56, 56, 64, 3, padding=1, layout="nchw"),
        ops.conv2d(32, 64, 56, 56, 64, 3, padding=1, layout="nhwc"),
    ),
    "conv3x3 resnet50 im2col -> NHWC": (
        ops.conv2d(32, 64, 56, 56, 64, 3, padding=1, layout="im2col"),
        ops.conv2d(32, 64, 56, 56, 64, 3, padding=1, layout="nhwc"),
    ),
    "attention llama3-8b 8k causal naive -> flash": (
        ops.attention(1, 32, 8192, head_dim=128, kv_heads=8, causal=True, impl="naive"),
        ops.attention(1, 32, 8192, head_dim=128, kv_heads=8, causal=True),
    ),
}

rows = []
for label, (baseline, variant) in CASES.items():
    for gpu in ("a100", "h200"):
        c = sk.compare(baseline, variant, gpu)
        rows.append((
            label, c.gpu, f"{c.kernels_baseline}->{c.kernels_variant}",
            f"{c.bytes_baseline / 1e6:,.1f}", f"{c.bytes_variant / 1e6:,.1f}", f"{100 * c.bytes_saved_fraction:.1f}",
            f"{c.t_sol_baseline * 1e6:,.2f}", f"{c.t_sol_variant * 1e6:,.2f}", f"{c.speedup:.2f}",
        ))
print(format_table(rows, ("change", "gpu", "kernels", "MB before", "MB after", "% bytes saved",
                          "T_SOL before us", "T_SOL after us", "T_SOL ratio")))

# "fusing QKV reduces memory accesses by 66%": true of the reads of x only (3 reads -> 1)
unfused = ops.qkv_projection(4096, 768, heads=12, fused=False)
x_reads = sum(float(k.gemm.m * k.gemm.k) for k in unfused.kernels)
print(f"\nQKV bert-base: reads of x fall {1 - (x_reads / 3) / x_reads:.1%}; all DRAM bytes fall "
      f"{sk.compare(unfused, ops.qkv_projection(4096, 768, heads=12), 'h200').bytes_saved_fraction:.1%}")
