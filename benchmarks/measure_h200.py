#!/usr/bin/env python3
"""Raw H200 measurements that solkit's cost models (``solkit.ops``) and calibrated predictor are tested against.

Runs on the device machine with torch, triton, numpy and the standard library only: it never imports
solkit. Every measured case names the solkit op and the exact keyword arguments of the solkit op
function that models it, so ``getattr(solkit.ops, row["op"])(**row["params"])`` rebuilds the
modelled workload.

    python3 benchmarks/measure_h200.py --out "$OUT/h200_measurements.json"    # on the H200
    python3 benchmarks/measure_h200.py --dry-run                              # anywhere, no torch needed

Phases, all under one global time budget (``--budget``, seconds since the process started):
  1. ceilings: copy and read bandwidth, dense matmul rate per precision, the launch floor;
  2. cases, most important first (tier 0, then 1, then 2), each with a fresh random input set; a
     few per family are also checked against a float64 reference before they are timed;
  3. kernel census (if time is left): one profiled call per measured case, naming the kernels torch
     launched, so that a row can be compared with the kernels its solkit model assumes.
The output JSON is rewritten after every case, so a run cut short still leaves its rows behind.
torch is imported lazily (``load_torch``), so ``--dry-run`` works on a machine without it.

This file only puts its own folder on ``sys.path`` and calls ``measuring.runner.main``. The code is in
the ``measuring`` package: ``cases`` (the case catalogue, no torch), ``builders`` (case -> tensors and
the callable to time, float64 spot checks), ``timing`` (do_bench and its fallbacks, kernel census),
``ceilings`` (bandwidth, matmul rates, launch floor), ``output`` (the JSON and log files) and ``runner``
(command line, budget, phases, meta). ``meta.script_sha256`` hashes this file and every
``measuring/*.py``, concatenated in sorted path order.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from measuring.runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(doc=__doc__ or ""))
