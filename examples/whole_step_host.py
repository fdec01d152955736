"""A whole eager training step: what the CPU issues, what the GPU runs, and your host's speed as an input.

Small eager steps are CPU-bound: the GPU waits for Python, the autograd engine and each launch. solkit counts the
launches eager PyTorch issues (eager autograd's included: gradient accumulations, casts, cuDNN's three-kernel SDPA
backward) and charges each the host time fitted on measured H200 steps. That time is the machine's: the same launch
took 5.7 us on the fit's machine and 8.1 us on a busier one. Pass your machine's launch probe (``sk.host_probe()``,
which needs torch and a GPU) and the host time scales with it.

Uses the frozen seed-2041 test draw (data/h200_steps_test_seed2041.json: 90 random steps measured on an H200 after
the model was frozen, each with the launch probe taken just before it).

Run: python examples/whole_step_host.py
"""

from pathlib import Path

import solkit as sk
from solkit.calibration.programs import load_steps, workload_of_step
from solkit.workload import issued_launches

DATA = Path(__file__).resolve().parents[1] / "data" / "h200_steps_test_seed2041.json"
steps = load_steps(DATA)
fit_probe = sk.load_gpu("h200").measured.host_probe_us

print(f"the fit machine's launch probe: {fit_probe} us per small torch.add launch\n")
print(f"{'measured step (frozen test)':38} {'launches':>8} {'probe':>7} {'measured':>9} {'predicted':>10} {'with probe':>11}")
shown = 0
for case in steps.cases:
    if not (case.ok and case.mode == "train" and case.cpu_bound) or shown == 6:
        continue
    step = workload_of_step(case)
    plain = sk.predict(step, "h200", warn=False)
    probed = sk.predict(step, "h200", warn=False, host_probe_us=case.probe_us)
    print(f"{case.id:38} {issued_launches(step):8,.0f} {case.probe_us:6.2f}u {case.wall_ms:7.1f}ms "
          f"{float(plain.seconds) * 1e3:8.1f}ms {float(probed.seconds) * 1e3:9.1f}ms")
    shown += 1

# the same step on your machine: measure the probe in this process, before any profiler session
try:
    probe = sk.host_probe()
except Exception as exc:  # no torch, or no GPU here: say so and go on
    print(f"\nno live probe here ({type(exc).__name__}): with torch on a GPU, sk.host_probe() measures yours")
else:
    print(f"\nthis machine's probe: {probe:.2f} us")
