"""MFU of a training run: Llama-3-8B on 8 H100s, from a measured step time.

Model FLOPs are counted from the ops (per layer: QKV, causal attention, output projection,
SwiGLU MLP; then the LM head), training = 3 x forward (the backward pass does twice the
forward's matmul work). Compare with the 6 * parameters * tokens rule of thumb, which ignores
attention's quadratic term.

Run: python examples/mfu_training_run.py
"""

import solkit as sk
from solkit import ops

# Llama-3-8B: 32 layers, d 4096, 32 query heads / 8 KV heads of 128, MLP 14336, vocab 128256
layers, d, heads, kv_heads, ffn, vocab = 32, 4096, 32, 8, 14336, 128256
seq, batch_per_gpu, n_gpus = 8192, 1, 8
tokens = seq * batch_per_gpu  # per GPU per step

layer = sk.chain(
    "layer",
    ops.rmsnorm(tokens, d),
    ops.qkv_projection(tokens, d, heads=heads, kv_heads=kv_heads),      # x [T,d] @ w_qkv [d, 6144]
    ops.attention(batch_per_gpu, heads, seq, head_dim=128, kv_heads=kv_heads, causal=True),
    ops.matmul(tokens, d, d),                                           # o-proj [T,4096] @ [4096,4096]
    ops.rmsnorm(tokens, d),
    ops.matmul(tokens, 2 * ffn, d),                                     # gate+up [T,4096] @ [4096,28672]
    ops.silu(tokens * ffn),
    ops.matmul(tokens, d, ffn),                                         # down [T,14336] @ [14336,4096]
)
head = ops.matmul(tokens, vocab, d)                                     # LM head [T,4096] @ [4096,128256]
forward_flops = layers * layer.flops + head.flops
train_flops_per_gpu = 3 * forward_flops

params = layers * (d * (d + 2 * kv_heads * 128) + d * d + 3 * d * ffn) + 2 * vocab * d
rule_of_thumb = 6 * params * tokens

step_seconds = 1.85  # replace with your measured optimizer-step time (an illustrative value here)
mfu = sk.mfu(train_flops_per_gpu * n_gpus, step_seconds, "h100", n_gpus=n_gpus)
mfu_6nd = sk.mfu(rule_of_thumb * n_gpus, step_seconds, "h100", n_gpus=n_gpus)

print(f"parameters: {params / 1e9:.2f} B")
print(f"model FLOPs per GPU per step: {train_flops_per_gpu:.4g} (6*N*T rule: {rule_of_thumb:.4g}; "
      f"attention adds {train_flops_per_gpu / rule_of_thumb - 1:+.1%})")
print(f"MFU at {step_seconds} s/step on {n_gpus} x H100 SXM (989.4 TFLOP/s dense bf16): {mfu:.1%} "
      f"(6*N*T rule: {mfu_6nd:.1%})")
r = sk.roofline(layer, "h100")
print(f"one layer's forward T_SOL on an H100: {r.t_sol * 1e3:.2f} ms ({r.bound}-bound); "
      f"the whole step cannot beat {3 * (layers * r.t_sol + sk.roofline(head, 'h100').t_sol):.3f} s")
