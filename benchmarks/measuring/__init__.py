"""The code of ``benchmarks/measure_h200.py``, the H200 measuring script (torch, triton, numpy and stdlib only)."""
