"""Plausible ranges of spec figures (issue 10): wide enough for every real GPU, narrow enough to catch a unit slip.

The real figures below are typed by hand from the vendors' datasheets (each cites its source), never
read from the shipped YAML files or from the range table under test.
"""

from __future__ import annotations

import copy
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

import solkit as sk
from solkit.errors import SpecConsistencyWarning, SpecError
from solkit.hardware import spec_dirs
from solkit.hardware.plausibility import PEAK_RANGES, RANGES, Range, out_of_range, peak_range

SHIPPED = spec_dirs()[-1]
README = Path(__file__).resolve().parents[1] / "hardware_specs" / "README.md"

#: (part, field, value in the file's unit); the field is a RANGES key or "peak <precision> <unit>"
REAL: list[tuple[str, str, float]] = [
    # NVIDIA A2 Tensor Core GPU datasheet (nvidia.com/content/dam/en-zz/solutions/data-center/a2/pdf/a2-datasheet.pdf):
    # 1,280 CUDA cores = 10 SMs, 16 GB GDDR6 at 200 GB/s, 40-60 W, FP32 4.5, TF32 9, BF16/FP16 18, INT8 36 (dense)
    ("A2", "chip.compute_units", 10),
    ("A2", "memory.capacity_gb", 16),
    ("A2", "memory.bandwidth_tb_s", 0.2),
    ("A2", "chip.tdp_w", 60),
    ("A2", "chip.boost_clock_mhz", 1770),  # A2 datasheet: boost clock 1770 MHz
    ("A2", "peak fp32 vector", 4.5),
    ("A2", "peak tf32 matrix", 9),
    ("A2", "peak bf16 matrix", 18),
    ("A2", "peak fp16 matrix", 18),
    ("A2", "peak int8 matrix", 36),
    # NVIDIA A40 datasheet: NVLink bridge 112.5 GB/s bidirectional, PCIe Gen4 64 GB/s, 696 GB/s, 300 W
    ("A40", "interconnect.bandwidth_gb_s", 112.5),
    ("A40", "interconnect.pcie_bandwidth_gb_s", 64),
    ("A40", "memory.bandwidth_tb_s", 0.696),
    # NVIDIA V100 datasheet (SXM2): 900 GB/s, 32 GB, NVLink 300 GB/s, 300 W, FP64 7.8, FP32 15.7, tensor 125
    ("V100", "memory.bandwidth_tb_s", 0.9),
    ("V100", "memory.capacity_gb", 32),
    ("V100", "interconnect.bandwidth_gb_s", 300),
    ("V100", "chip.tdp_w", 300),
    ("V100", "peak fp64 vector", 7.8),
    ("V100", "peak fp32 vector", 15.7),
    ("V100", "peak fp16 matrix", 125),
    ("V100", "chip.compute_units", 80),  # Volta whitepaper: Tesla V100 has 80 SMs
    ("V100", "chip.l2_cache_mb", 6),  # Volta whitepaper: 6144 KB L2
    # NVIDIA Ada GPU architecture whitepaper, appendix A (GeForce RTX 4090): 128 SMs, 2520 MHz boost, 72 MB L2,
    # 24 GB GDDR6X at 1008 GB/s, 450 W, FP32 82.6, FP64 1.3, bf16/fp16 tensor (FP32 accumulate) 165.2, FP8 330.3,
    # INT8 660.6 TOPS, non-tensor FP16 82.6
    ("RTX 4090", "chip.compute_units", 128),
    ("RTX 4090", "chip.boost_clock_mhz", 2520),
    ("RTX 4090", "chip.l2_cache_mb", 72),
    ("RTX 4090", "memory.capacity_gb", 24),
    ("RTX 4090", "memory.bandwidth_tb_s", 1.008),
    ("RTX 4090", "chip.tdp_w", 450),
    ("RTX 4090", "peak fp64 vector", 1.3),
    ("RTX 4090", "peak fp32 vector", 82.6),
    ("RTX 4090", "peak bf16 matrix", 165.2),
    ("RTX 4090", "peak fp8 matrix", 330.3),
    ("RTX 4090", "peak int8 matrix", 660.6),
    ("RTX 4090", "peak fp16 vector", 82.6),
    # NVIDIA A100 datasheet (SXM 80GB): 2,039 GB/s, FP64 tensor 19.5, 400 W, NVLink 600 GB/s, PCIe Gen4 64 GB/s;
    # Ampere whitepaper table 1: 108 SMs, 1410 MHz, 40 MB L2, BF16 non-tensor 39
    ("A100", "memory.bandwidth_tb_s", 2.039),
    ("A100", "peak fp64 matrix", 19.5),
    ("A100", "chip.boost_clock_mhz", 1410),
    ("A100", "chip.l2_cache_mb", 40),
    ("A100", "peak bf16 vector", 39),
    ("A100", "interconnect.bandwidth_gb_s", 600),
    # NVIDIA H100 product page (SXM): 3.35 TB/s, NVLink 900 GB/s, PCIe Gen5 128 GB/s, 700 W;
    # Hopper whitepaper: 132 SMs, bf16 non-tensor 133.8
    ("H100 SXM", "memory.bandwidth_tb_s", 3.35),
    ("H100 SXM", "interconnect.bandwidth_gb_s", 900),
    ("H100 SXM", "interconnect.pcie_bandwidth_gb_s", 128),
    ("H100 SXM", "chip.tdp_w", 700),
    ("H100 SXM", "peak bf16 vector", 133.8),
    # HGX B200 page (preliminary): 180 GB, 7.7 TB/s, NVLink 1.8 TB/s, up to 1,000 W; with sparsity TF32 2.2 PF,
    # FP16/BF16 4.5 PF, FP8 9 PF, INT8 9 POPS, FP4 18 PF (dense = half); FP64 37
    ("B200", "memory.capacity_gb", 180),
    ("B200", "memory.bandwidth_tb_s", 7.7),
    ("B200", "interconnect.bandwidth_gb_s", 1800),
    ("B200", "chip.tdp_w", 1000),
    ("B200", "peak tf32 matrix", 1100),
    ("B200", "peak bf16 matrix", 2250),
    ("B200", "peak fp8 matrix", 4500),
    ("B200", "peak int8 matrix", 4500),
    ("B200", "peak fp4 matrix", 9000),
    ("B200", "peak fp64 matrix", 37),
    # AMD Instinct MI300X data sheet: 304 CUs, 2100 MHz, 192 GB HBM3 at 5.3 TB/s, 750 W, FP64 vector 81.7,
    # FP64/FP32 matrix 163.4, FP16/BF16 1307.4, FP8 2614.9 (dense), Infinity Fabric 896 GB/s
    ("MI300X", "chip.compute_units", 304),
    ("MI300X", "chip.boost_clock_mhz", 2100),
    ("MI300X", "memory.capacity_gb", 192),
    ("MI300X", "memory.bandwidth_tb_s", 5.3),
    ("MI300X", "chip.tdp_w", 750),
    ("MI300X", "peak fp64 vector", 81.7),
    ("MI300X", "peak fp64 matrix", 163.4),
    ("MI300X", "peak fp32 matrix", 163.4),
    ("MI300X", "peak fp32 vector", 163.4),
    ("MI300X", "peak bf16 matrix", 1307.4),
    ("MI300X", "peak fp8 matrix", 2614.9),
    ("MI300X", "interconnect.bandwidth_gb_s", 896),
    # AMD Instinct MI355X (AMD at ISC 2025, as reported by Tom's Hardware): 288 GB HBM3E, 8 TB/s, 1,400 W
    ("MI355X", "memory.capacity_gb", 288),
    ("MI355X", "memory.bandwidth_tb_s", 8),
    ("MI355X", "chip.tdp_w", 1400),
]


def _range(field: str) -> Range:
    if field.startswith("peak "):
        _, precision, unit = field.split()
        return peak_range(precision, unit)
    return RANGES[field]


def _id(row: tuple[str, str, float]) -> str:
    return f"{row[0]} {row[1]} {row[2]:g}"


@pytest.mark.parametrize("part, field, value", REAL, ids=[_id(r) for r in REAL])
def test_real_figure_is_plausible(part, field, value):
    """Every published figure of a real part, V100 to B200, A2 to MI355X, lies in its field's range."""
    assert out_of_range(value, _range(field)) is None, f"{part} {field} = {value}"


@pytest.mark.parametrize("part, field, value", REAL, ids=[_id(r) for r in REAL])
def test_real_figure_1000x_off_is_caught(part, field, value):
    """The same figure 1000x too large (GB/s in a TB/s field) or 1000x too small lands outside the range."""
    r = _range(field)
    assert out_of_range(value * 1000, r) is not None, f"{part} {field} x1000 = {value * 1000} passes"
    assert out_of_range(value / 1000, r) is not None, f"{part} {field} / 1000 = {value / 1000} passes"


@pytest.mark.parametrize(
    "value, r, expected",
    [
        (3350, RANGES["memory.bandwidth_tb_s"],
         "3350 TB/s is outside the plausible range 0.05 to 50 TB/s (1000x too large: GB/s typed into a TB/s field?)"),
        (0.00335, RANGES["memory.bandwidth_tb_s"], "0.00335 TB/s is outside the plausible range 0.05 to 50 TB/s (1000x too small?)"),
        (70, RANGES["measured.compute_efficiency.*"],
         "70 is outside the plausible range 0.01 to 1 (a percentage? 70 % is 0.7; an efficiency is a fraction of at most 1)"),
        (1.2, RANGES["measured.memory_efficiency.*"],
         "1.2 is outside the plausible range 0.01 to 1 (an efficiency is a fraction of at most 1)"),
        (989400, PEAK_RANGES["bf16", "matrix"],  # 989400 / 1000 = 989.4 lies in 3..15000: the hint names GFLOP/s
         "989400 TFLOP/s is outside the plausible range 3 to 15000 TFLOP/s (1000x too large: GFLOP/s typed into a "
         "TFLOP/s field?)"),
        (2e7, PEAK_RANGES["bf16", "matrix"],  # 2e7 / 1000 = 20000 is still above 15000: no hint
         "20000000 TFLOP/s is outside the plausible range 3 to 15000 TFLOP/s"),
    ],
    ids=["GB/s for TB/s", "PB/s for TB/s", "percentage", "efficiency above 1", "GFLOP/s", "far out"],
)
def test_out_of_range_message(value, r, expected):
    """The message gives the value, the plausible range with its unit, and the likely slip."""
    assert out_of_range(value, r) == expected


def test_readme_table_matches_the_code():
    """hardware_specs/README.md prints every range of RANGES and PEAK_RANGES, with the same bounds and unit."""
    rows = [line for line in README.read_text().splitlines() if line.startswith("| `")]
    for field, r in RANGES.items():
        row = next((x for x in rows if x.startswith(f"| `{field}` |")), None)
        assert row is not None, f"README has no row for {field}"
        assert f"| {r.low:g} to {r.high:g}" in row and (not r.unit or f"| {r.unit} |" in row), row
    for (precision, unit), r in PEAK_RANGES.items():
        row = next((x for x in rows if x.startswith(f"| `peaks.N.tflops`, {precision} {unit} |")), None)
        assert row is not None, f"README has no row for {precision} {unit} peaks"
        assert f"| {r.low:g} to {r.high:g} | {r.unit} |" in row, row


def test_shipped_specs_load_without_warnings():
    """All 11 shipped specs pass every range and check, and warn nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sk.clear_cache()
        names = sk.list_gpus()
        for name in names:
            sk.load_gpu(name)
    assert names == sorted(p.stem for p in SHIPPED.glob("*.yaml"))  # every shipped file, none skipped


# ---- whole specs of real parts, built in Python ------------------------------------------------


def _h200() -> dict[str, Any]:
    return yaml.safe_load((SHIPPED / "h200-sxm.yaml").read_text())


def _rtx4090() -> dict[str, Any]:
    """An RTX 4090 spec from the Ada whitepaper, appendix A (figures above), on the H200 file's skeleton."""
    data = _h200()
    del data["measured"]
    data.update(name="rtx-4090", full_name="NVIDIA GeForce RTX 4090", architecture="ada", aliases=[])
    data["chip"].update(compute_units=128, boost_clock_mhz=2520, l2_cache_mb=72, tdp_w=450)
    data["memory"].update(type="GDDR6X", capacity_gb=24, bandwidth_tb_s=1.008)
    data["interconnect"].update(name="none (PCIe only)", bandwidth_gb_s=None, pcie_bandwidth_gb_s=64)
    src = data["sources"][0]["id"]
    data["peaks"] = [
        {"precision": "fp64", "unit": "vector", "tflops": 1.3, "source": src},
        {"precision": "fp32", "unit": "vector", "tflops": 82.6, "source": src},
        {"precision": "tf32", "unit": "matrix", "tflops": 82.6, "sparse_tflops": 165.2, "source": src},
        {"precision": "bf16", "unit": "matrix", "tflops": 165.2, "sparse_tflops": 330.4, "source": src},
        {"precision": "fp8", "unit": "matrix", "tflops": 330.3, "sparse_tflops": 660.6, "source": src},
        {"precision": "int8", "unit": "matrix", "tflops": 660.6, "sparse_tflops": 1321.2, "source": src},
    ]
    return data


def test_rtx_4090_loads_with_a_half_rate_warning():
    """A GeForce RTX 4090 is plausible; its fp32-accumulate tensor rates are half Ada's (512 of 1024 FLOP/clk/SM): a warning."""
    with pytest.warns(SpecConsistencyWarning, match=r"bf16 matrix peak 165.2 TFLOP/s implies 512 FLOP/clock/SM"):
        gpu = sk.GPU(**_rtx4090())  # 165.2e12 / (128 * 2.52e9) = 512
    assert gpu.memory_bandwidth == 1.008e12
    assert gpu.peak_flops("int8") == 660.6e12


def test_v100_loads_silently():
    """A V100 (architecture volta: no per-clock table, no bf16 for a ratio) loads without a warning."""
    data = _h200()
    del data["measured"]
    data.update(name="v100-sxm2", full_name="NVIDIA Tesla V100 SXM2", architecture="volta", aliases=[],
                structured_sparsity=False)
    data["chip"].update(compute_units=80, boost_clock_mhz=1530, l2_cache_mb=6, tdp_w=300)  # Volta whitepaper, V100 datasheet
    data["memory"].update(type="HBM2", capacity_gb=32, bandwidth_tb_s=0.9)
    data["interconnect"].update(name="NVLink 2", bandwidth_gb_s=300, pcie_bandwidth_gb_s=32)
    src = data["sources"][0]["id"]
    data["peaks"] = [{"precision": "fp64", "unit": "vector", "tflops": 7.8, "source": src},
                     {"precision": "fp32", "unit": "vector", "tflops": 15.7, "source": src},
                     {"precision": "fp16", "unit": "matrix", "tflops": 125, "source": src}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gpu = sk.GPU(**data)
    assert gpu.peak_flops("fp16") == 125e12


# ---- the measured section against the datasheet -------------------------------------------------


def _with_measured(**changes: Any) -> dict[str, Any]:
    data = _h200()
    data["measured"].update(changes)
    return data


@pytest.mark.parametrize(
    "changes, expected",
    [
        # NVIDIA H200 datasheet: bf16 dense 989.4 TFLOP/s (the H100 SXM's tensor core, same GH100), 4.8 TB/s
        ({"matmul_rate_tflops": {"bf16": 1000.0}},
         "field 'measured.matmul_rate_tflops.bf16': 1000 TFLOP/s is above the datasheet's dense bf16 matrix peak "
         "(peaks.4.tflops) 989.4 TFLOP/s"),
        ({"matmul_rate_tflops": {"bf16": 98.0}},  # 98 < 0.1 x 989.4 = 98.94
         "field 'measured.matmul_rate_tflops.bf16': 98 TFLOP/s is below 0.1 x the datasheet's dense bf16 matrix peak"),
        ({"matmul_rate_tflops": {"fp32": 68.0}},  # no fp32 matrix peak on an H200: the fp32 vector 67 is the ceiling
         "field 'measured.matmul_rate_tflops.fp32': 68 TFLOP/s is above the datasheet's dense fp32 vector peak "
         "(peaks.2.tflops) 67 TFLOP/s"),
        ({"matmul_rate_tflops": {"fp4": 100.0}},  # Hopper has no fp4
         "field 'measured.matmul_rate_tflops.fp4': 100 TFLOP/s measured, but peaks lists no dense fp4 matrix figure"),
        ({"copy_bandwidth_tb_s": 4271}, "field 'measured.copy_bandwidth_tb_s': 4271 TB/s is above the datasheet's "
                                        "memory bandwidth (memory.bandwidth_tb_s) 4.8 TB/s"),
        ({"read_bandwidth_tb_s": 4.9}, "field 'measured.read_bandwidth_tb_s': 4.9 TB/s is above"),
        ({"copy_bandwidth_tb_s": 0.4271}, "field 'measured.copy_bandwidth_tb_s': 0.4271 TB/s is below 0.1 x"),
        ({"compute_efficiency": {"gemm": 1.2}}, "field 'measured.compute_efficiency.gemm': 1.2 is outside the "
                                                "plausible range 0.01 to 1"),
        ({"memory_efficiency": {"copy": 96.1}}, "field 'measured.memory_efficiency.copy': 96.1 is outside"),
        ({"misaligned_gemm_penalty": 0.5}, "field 'measured.misaligned_gemm_penalty': retired in solkit 0.3"),
        ({"overlap_exponent": 0.5}, "field 'measured.overlap_exponent': 0.5 is outside the plausible range 1 to 1000"),
        ({"launch_floor_us": 4480.0}, "field 'measured.launch_floor_us': 4480 us is outside the plausible range "
                                      "0.1 to 100 us (1000x too large: ns typed into a us field?)"),
        ({"kernel_latency_us": {"gemm": 2000.0}}, "field 'measured.kernel_latency_us.gemm': 2000 us is outside"),
    ],
    ids=["matmul above peak", "matmul below a tenth", "fp32 above vector", "no such peak", "copy in GB/s",
         "read above", "copy /10", "efficiency 1.2", "efficiency percent", "retired penalty", "overlap below 1",
         "launch floor in ns", "latency in ns"],
)
def test_measured_against_datasheet(tmp_path, changes, expected):
    """A measured ceiling above its datasheet figure (or 1000x off), an efficiency above 1: a SpecError naming file and field."""
    path = tmp_path / "h200-sxm.yaml"
    path.write_text(yaml.safe_dump(_with_measured(**changes), sort_keys=False))
    with pytest.raises(SpecError) as info:
        sk.load_gpu(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_measured_at_its_limits_loads(tmp_path):
    """Efficiencies of exactly 1, a copy bandwidth equal to the datasheet and p = inf are plausible."""
    data = _with_measured(compute_efficiency={"gemm": 1.0}, copy_bandwidth_tb_s=4.8, overlap_exponent="inf",
                          kernel_gap_us=0.0)
    path = tmp_path / "h200-sxm.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    m = sk.load_gpu(path).measured
    assert (m.copy_bandwidth_tb_s, m.overlap_exponent, m.kernel_gap_us) == (4.8, "inf", 0.0)


def test_every_error_on_every_load(tmp_path):
    """A refused file stays refused: the second and third loads raise the same SpecError (nothing is cached)."""
    path = tmp_path / "h200-sxm.yaml"
    path.write_text(yaml.safe_dump(_with_measured(copy_bandwidth_tb_s=4271), sort_keys=False))
    messages = set()
    for _ in range(3):
        with pytest.raises(SpecError) as info:
            sk.load_gpu(path)
        messages.add(str(info.value))
    assert len(messages) == 1


def test_python_built_gpu_names_the_field():
    """sk.GPU(...) and GPU.model_validate(...) raise SpecError (a ValueError), never pydantic's ValidationError."""
    data = _h200()
    data["memory"]["bandwidth_tb_s"] = "fast"
    for build in (lambda: sk.GPU(**copy.deepcopy(data)), lambda: sk.GPU.model_validate(copy.deepcopy(data))):
        with pytest.raises(SpecError, match=re.escape("GPU: field 'memory.bandwidth_tb_s': Input should be a valid "
                                                      "number (got 'fast')")) as info:
            build()
        assert isinstance(info.value, ValueError)


def test_every_calibration_parameter_has_a_range_or_a_datasheet_ceiling():
    """Each PARAMETERS file key is range-checked (RANGES) or checked against the datasheet (matmul rates, bandwidths)."""
    from solkit.hardware.consistency import BANDWIDTH_CEILINGS
    from solkit.hardware.parameters import PARAMETERS
    from solkit.hardware.plausibility import RANGES

    for p in PARAMETERS:
        key = f"measured.{p.file_key}" + (".*" if p.keyed else "")
        assert key in RANGES or p.file_key in BANDWIDTH_CEILINGS or p.name == "matmul_rate", p.file_key
    assert BANDWIDTH_CEILINGS == ("copy_bandwidth_tb_s", "read_bandwidth_tb_s")
