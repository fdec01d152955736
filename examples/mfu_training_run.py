"""MFU of a training run: Llama-3-8B on 8 H100s, from a measured step time.

Model FLOPs come from solkit.models: the architecture (``preset("llama3-8b")``, a Transformer), its
forward pass built kernel by kernel, and the training step eager PyTorch runs (AMP casts, loss,
each kernel's backward, fused AdamW). Model FLOPs are 3x the forward's whatever else the step runs.
Compare with the 6 * parameters * tokens rule of thumb, which ignores attention's quadratic term,
and with the closed form ``flops_per_token`` (causal, and PaLM's full-attention convention).

Run: python examples/mfu_training_run.py
"""

import solkit as sk
from solkit import models

seq, batch_per_gpu, n_gpus = 8192, 1, 8
tokens = seq * batch_per_gpu  # per GPU per step

llama = models.preset("llama3-8b")
step = models.training_step(llama.forward(batch=batch_per_gpu, seq=seq))
rule_of_thumb = 6 * llama.params * tokens

step_seconds = 1.85  # replace with your measured optimizer-step time (an illustrative value here)
mfu = sk.mfu(step.flops * n_gpus, step_seconds, "h100", n_gpus=n_gpus)
mfu_6nd = sk.mfu(rule_of_thumb * n_gpus, step_seconds, "h100", n_gpus=n_gpus)
closed = llama.flops_per_token(training=True, seq=seq) * tokens
palm = llama.flops_per_token(training=True, seq=seq, attention="full") * tokens

print(f"parameters: {llama.params / 1e9:.3f} B; {len(step):,} kernels per step")
print(f"model FLOPs per GPU per step: {step.flops:.4g} (6*N*T rule: {rule_of_thumb:.4g}; "
      f"attention and the counted details add {step.flops / rule_of_thumb - 1:+.1%})")
print(f"closed form, matrix FLOPs only: causal {closed:.4g}, full attention (PaLM/Megatron tables) {palm:.4g}")
print(f"MFU at {step_seconds} s/step on {n_gpus} x H100 SXM (989.4 TFLOP/s dense bf16): {mfu:.1%} "
      f"(6*N*T rule: {mfu_6nd:.1%})")
r = sk.roofline(step, "h100")
p = sk.predict(step, "h100", warn=False)
mem = llama.memory(batch=batch_per_gpu, seq=seq, training=True, gpu="h100")
print(f"the step cannot beat {r.t_sol:.3f} s on an H100 ({r.bound}-bound); uncalibrated prediction "
      f"{p.seconds:.3f} s; on a calibrated H200: {sk.predict(step, 'h200', warn=False).seconds:.3f} s")
print(f"memory on one GPU without sharding: {mem.total / 1e9:.0f} GB of {mem.capacity / 1e9:.0f} GB "
      f"({'fits' if mem.fits else 'does not fit: shard the optimizer states (ZeRO) or use more GPUs'})")
