"""Read a real profile: a BERT-base training step recorded on an H200, joined to its speed of light.

The trace (data/profiles/bert_train.json.gz) was recorded with torch.profiler(record_shapes=True)
by benchmarks/profiling/record.py: BertForMaskedLM, batch 8 x seq 512, bf16 autocast, fused AdamW.
solkit links each kernel to the ATen op that launched it, maps the op call to a registered
operator's workload, and reports where the time goes against T_SOL and the calibrated prediction.
Record your own with sk.measure(fn, *args, gpu="h200") or torch.profiler's export_chrome_trace.

Run: python examples/profile_report.py
"""

import json
from pathlib import Path

import solkit as sk

DATA = Path(__file__).resolve().parents[1] / "data" / "profiles"
TRACE = DATA / "bert_train.json.gz"

profile = sk.load_profile(TRACE, gpu="h200")
print(profile.report(top=8))

# the step as one workload: roofline, predict and mfu apply unchanged
step = profile.workload
print(f"\nmodel FLOPs of the step: {profile.flops:.4g} "
      f"(BERT-base by hand: 3 x 9.697e11 = 2.909e12 for 4096 tokens); "
      f"T_SOL of the step {sk.roofline(step, 'h200').t_sol * 1e3:.2f} ms")
wall = json.loads((DATA / "manifest.json").read_text())["programs"]["bert_train"]["wall_ms"]
print(f"kernels alone take {profile.kernel_seconds * 1e3:.2f} ms; the GPU sat idle "
      f"{profile.idle_seconds * 1e3:.2f} ms of the {profile.span_seconds * 1e3:.2f} ms span under the profiler, and "
      f"the same step took {wall:.1f} ms unprofiled: at this size the host, not the GPU, sets the pace")
best = profile.opportunities(top=1)[0]
print(f"biggest opportunity: {best['group']} {best['shapes']}: {best['recoverable_s'] * 1e6:.0f} us above its "
      f"calibrated prediction ({best['verdict']})")
