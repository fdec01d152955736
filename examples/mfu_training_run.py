"""MFU of a training run: Llama-3-8B on 8 H100s, from a measured step time.

Model FLOPs come from solkit.models: the forward pass built from ops (embedding, 32 layers of
RMSNorm, GQA projection, causal flash attention, output projection, SwiGLU MLP; LM head), and a
training step that adds each kernel's backward (GEMMs: 2 x forward). Compare with the
6 * parameters * tokens rule of thumb, which ignores attention's quadratic term.

Run: python examples/mfu_training_run.py
"""

import solkit as sk
from solkit import models

seq, batch_per_gpu, n_gpus = 8192, 1, 8
tokens = seq * batch_per_gpu  # per GPU per step

step = models.training_step(models.preset("llama3-8b", batch=batch_per_gpu, seq=seq))
cfg = models.PRESETS["llama3-8b"]
d, ffn, vocab, layers = cfg["d_model"], cfg["ffn"], cfg["vocab"], cfg["layers"]
kv = cfg["kv_heads"] * cfg["head_dim"]
params = layers * (d * (d + 2 * kv) + d * d + 3 * d * ffn) + 2 * vocab * d  # incl. embedding and LM head
rule_of_thumb = 6 * params * tokens

step_seconds = 1.85  # replace with your measured optimizer-step time (an illustrative value here)
mfu = sk.mfu(step.flops * n_gpus, step_seconds, "h100", n_gpus=n_gpus)
mfu_6nd = sk.mfu(rule_of_thumb * n_gpus, step_seconds, "h100", n_gpus=n_gpus)

print(f"parameters: {params / 1e9:.2f} B; {len(step.kernels)} kernels per step")
print(f"model FLOPs per GPU per step: {step.flops:.4g} (6*N*T rule: {rule_of_thumb:.4g}; "
      f"attention and the counted details add {step.flops / rule_of_thumb - 1:+.1%})")
print(f"MFU at {step_seconds} s/step on {n_gpus} x H100 SXM (989.4 TFLOP/s dense bf16): {mfu:.1%} "
      f"(6*N*T rule: {mfu_6nd:.1%})")
r = sk.roofline(step, "h100")
p = sk.predict(step, "h100")
print(f"the step cannot beat {r.t_sol:.3f} s on an H100 ({r.bound}-bound); uncalibrated prediction "
      f"{p.seconds:.3f} s; on a calibrated H200: {sk.predict(step, 'h200').seconds:.3f} s")
