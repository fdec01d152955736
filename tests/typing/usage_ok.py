"""Correct user code over solkit's main entry points: ``mypy --strict`` must report nothing here (tests/test_typing.py).

``assert_type`` pins each entry point's return type: a result typed ``Any`` (which any annotation accepts) fails it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import solkit as sk
from solkit import comm, models, ops, planning
from solkit.models import MemoryFootprint, Transformer
from solkit.workload import Workload

#: a figure that follows its inputs' shape (solkit's ``Figure``): a float for one shape, an array for a sweep
Figure = float | npt.NDArray[np.float64]

gpu = assert_type(sk.load_gpu("h200"), sk.GPU)
names = assert_type(sk.list_gpus(), list[str])
system = assert_type(sk.load_system("hgx-h200", nodes=2), sk.System)

w = assert_type(ops.matmul(4096, 4096, 4096, dtype="bf16", batch=1), Workload)
sweep = assert_type(ops.matmul(np.array([1024, 2048]), 4096, 4096), Workload)
a = assert_type(ops.attention(1, 32, 2048, head_dim=128, causal=True, impl="flash"), Workload)
c = assert_type(ops.conv2d(8, 64, 56, 56, 64, kernel=(3, 3), padding=1, layout="nhwc"), Workload)
n = assert_type(ops.rmsnorm(8192, 4096), Workload)
q = assert_type(ops.qkv_projection(8192, 4096, heads=32, kv_heads=8, fused=True), Workload)
typed_dtype = assert_type(ops.matmul(1024, 1024, 1024, dtype=np.float16), Workload)
named = [ops.matmul(1024, 1024, 1024, dtype=d) for d in ("bf16", "fp16")]  # a precision held in a str variable

r = assert_type(sk.roofline(w, gpu), sk.Roofline)
frac = assert_type(sk.sol_fraction(w, "h200", 1.6e-3), Figure)
u = assert_type(sk.mfu(w.flops, 1.6e-3, gpu, dtype="bf16"), Figure)
rate = assert_type(sk.achieved_flops(w, 1.6e-3, gpu="h200"), Figure)
p = assert_type(sk.predict(w, gpu), sk.Prediction)
cmp = assert_type(sk.compare(ops.layernorm_residual(8192, 4096, fused=False),
                             ops.layernorm_residual(8192, 4096, fused=True), gpu), sk.Comparison)

m = assert_type(models.preset("llama3-8b"), Transformer)
fwd = assert_type(m.forward(batch=1, seq=2048, kernels="fused"), Workload)
dec = assert_type(m.decode(batch=8, context=4096, quant="fp8"), Workload)
kv = assert_type(m.kv_cache_bytes(batch=8, context=4096, dtype="fp8"), Figure)
per_token = assert_type(m.flops_per_token(training=True, seq=4096), Figure)
footprint = assert_type(m.memory(batch=8, seq=4096, gpu=gpu), MemoryFootprint)
smaller = assert_type(m.with_(layers=16), Transformer)
step = assert_type(models.training_step(fwd, optimizer="adamw"), Workload)
h = assert_type(sk.hfu(step, 1.0, system, n_gpus=1), Figure)
res = assert_type(models.resnet50(32, layout="nhwc"), Workload)
ar = assert_type(comm.all_reduce(1 << 30, n_gpus=8), Workload)
est = assert_type(planning.inference(m, gpu, batch=4, prompt=512, output=64, kernels="fused"),
                  planning.InferenceEstimate)

prof = assert_type(sk.load_profile("trace.json.gz", gpu="h200"), sk.Profile)
print(r.t_sol, frac, u, rate, p.seconds, cmp, est.ttft, prof.kernels, kv, per_token, footprint, smaller, h, names, a, c,
      n, q, dec, res, ar, sweep, typed_dtype, named)

# the public aliases annotate a user's own variables
from solkit.typing import ConvLayout, KernelStyle  # noqa: E402

style: KernelStyle = "fused"
fused_forward = assert_type(m.forward(batch=1, seq=2048, kernels=style), Workload)
for layout in ("nhwc", "nchw"):
    chosen: ConvLayout = layout
    assert_type(ops.conv2d(8, 64, 56, 56, 64, layout=chosen), Workload)
