"""Consistency of a spec's figures: the bf16 peak against SMs x clock x the architecture's rate, and precision ratios.

Catches a sparse figure entered as dense, or a typo: the implied per-clock rate and each matrix
precision's ratio to bf16 must agree with the architecture's published rates.
"""

from __future__ import annotations

from .schema import GPU, TERA

__all__ = ["consistency_issues", "MATRIX_BF16_FLOP_PER_CLOCK", "MATRIX_RATIO_TO_BF16"]

#: dense bf16 matrix FLOP per clock per SM/CU by architecture (a multiply-add is 2):
#: A100 whitepaper 1024 FMA/clk/SM; H100 whitepaper 2048; Ada (L40S) 512; CDNA 3 1024 per CU;
#: Blackwell (B200) 4096, as its 2.25 PFLOP/s over 148 SMs at ~1.9 GHz implies
MATRIX_BF16_FLOP_PER_CLOCK: dict[str, int] = {"ampere": 2048, "ada": 1024, "hopper": 4096, "blackwell": 8192, "cdna3": 2048}

#: dense matrix peak of a rate class relative to bf16, where the architecture has it
MATRIX_RATIO_TO_BF16: dict[str, float] = {"fp16": 1.0, "tf32": 0.5, "fp8": 2.0, "int8": 2.0, "fp4": 4.0}

#: the implied per-clock rate may fall this far below the table (peaks quoted at a lower clock
#: than the max boost: H100 SXM tensor figures at 1830 MHz of 1980) and no further; a sparse
#: figure entered as dense lands at about 2x
PER_CLOCK_TOLERANCE = (0.7, 1.15)
RATIO_TOLERANCE = 0.12


def consistency_issues(gpu: GPU) -> list[str]:
    """Figures that disagree with the part's own SM count and clock, or with each other.

    Catches a sparse figure entered as dense: the bf16 matrix peak against SM count x boost
    clock x the architecture's per-SM rate, and each other matrix precision against bf16.
    """
    issues: list[str] = []
    bf16 = gpu._peak("bf16", "matrix")
    if bf16 is None:
        return issues
    expected = MATRIX_BF16_FLOP_PER_CLOCK.get(gpu.architecture.lower())
    if expected is not None:
        implied = bf16.tflops * TERA / (gpu.chip.compute_units * gpu.chip.boost_clock_mhz * 1e6)
        low, high = PER_CLOCK_TOLERANCE
        if not low * expected <= implied <= high * expected:
            issues.append(
                f"{gpu.name}: bf16 matrix peak {bf16.tflops:g} TFLOP/s implies {implied:.0f} FLOP/clock/"
                f"{gpu.chip.compute_unit_name} at {gpu.chip.boost_clock_mhz:g} MHz on {gpu.chip.compute_units} "
                f"{gpu.chip.compute_unit_name}s; {gpu.architecture} does {expected} (a sparse figure entered as dense?)"
            )
    for rate, ratio in MATRIX_RATIO_TO_BF16.items():
        peak = gpu._peak(rate, "matrix")
        if peak is None:
            continue
        actual = peak.tflops / bf16.tflops
        if abs(actual / ratio - 1.0) > RATIO_TOLERANCE:
            issues.append(
                f"{gpu.name}: {rate} matrix peak {peak.tflops:g} is {actual:.3g} x bf16 ({bf16.tflops:g}); "
                f"expected {ratio:g} x (a sparse figure entered as dense, or a typo?)"
            )
    return issues
