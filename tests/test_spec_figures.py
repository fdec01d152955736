"""Datasheet figures of every shipped GPU, checked through the public API.

Every expected value below is typed by hand from the vendor document named in the comment on its
row, never read from the YAML files, so a typo in a spec file fails here. Dense is the default; a
datasheet "with sparsity" figure (marked * there) is checked with ``sparse=True``.
"""

from __future__ import annotations

import pytest

import solkit as sk
from solkit.errors import UnsupportedPrecisionError

T = 1e12  # TFLOP/s (TOPS for int8) -> FLOP/s

CANONICAL = [
    "a100-pcie-80gb",
    "a100-sxm4-40gb",
    "a100-sxm4-80gb",
    "b200",
    "h100-nvl",
    "h100-pcie",
    "h100-sxm",
    "h200-nvl",
    "h200-sxm",
    "l40s",
    "mi300x",
]


@pytest.fixture(autouse=True)
def _only_shipped_specs(monkeypatch):
    """A user's $SOLKIT_SPEC_PATH must not change what the shipped files say."""
    monkeypatch.delenv("SOLKIT_SPEC_PATH", raising=False)


# (gpu, precision, unit, sparse, expected TFLOP/s or TOPS)
PEAKS = [
    # ---- A100 SXM4 80GB -----------------------------------------------------------------
    ("a100-sxm4-80gb", "fp64", "vector", False, 9.7),     # A100 datasheet: FP64 9.7 TFLOPS
    ("a100-sxm4-80gb", "fp64", "matrix", False, 19.5),    # A100 datasheet: FP64 Tensor Core 19.5 TFLOPS
    ("a100-sxm4-80gb", "fp32", "vector", False, 19.5),    # A100 datasheet: FP32 19.5 TFLOPS
    ("a100-sxm4-80gb", "tf32", "matrix", False, 156),     # A100 datasheet: TF32 Tensor Core 156 TFLOPS dense (312 sparse)
    ("a100-sxm4-80gb", "tf32", "matrix", True, 312),      # A100 datasheet: TF32 Tensor Core 312* TFLOPS with sparsity
    ("a100-sxm4-80gb", "bf16", "matrix", False, 312),     # A100 datasheet: BF16 Tensor Core 312 TFLOPS dense (624 sparse)
    ("a100-sxm4-80gb", "bf16", "matrix", True, 624),      # A100 datasheet: BF16 Tensor Core 624* TFLOPS with sparsity
    ("a100-sxm4-80gb", "fp16", "matrix", False, 312),     # A100 datasheet: FP16 Tensor Core 312 TFLOPS dense (624 sparse)
    ("a100-sxm4-80gb", "int8", "matrix", False, 624),     # A100 datasheet: INT8 Tensor Core 624 TOPS dense (1,248 sparse)
    ("a100-sxm4-80gb", "int8", "matrix", True, 1248),     # A100 datasheet: INT8 Tensor Core 1,248* TOPS with sparsity
    ("a100-sxm4-80gb", "fp16", "vector", False, 78),      # A100 whitepaper Table 1: Peak FP16 (non-Tensor) 78 TFLOPS
    ("a100-sxm4-80gb", "bf16", "vector", False, 39),      # A100 whitepaper Table 1: Peak BF16 (non-Tensor) 39 TFLOPS
    # ---- A100 SXM4 40GB: same peaks as the 80GB part --------------------------------------
    ("a100-sxm4-40gb", "fp64", "matrix", False, 19.5),    # A100 datasheet r4, 40GB SXM: FP64 Tensor Core 19.5 TFLOPS
    ("a100-sxm4-40gb", "fp32", "vector", False, 19.5),    # A100 datasheet r4, 40GB SXM: FP32 19.5 TFLOPS
    ("a100-sxm4-40gb", "tf32", "matrix", False, 156),     # A100 datasheet r4: TF32 156 TFLOPS dense (312 sparse)
    ("a100-sxm4-40gb", "bf16", "matrix", False, 312),     # A100 datasheet r4: BF16 Tensor Core 312 TFLOPS dense (624 sparse)
    ("a100-sxm4-40gb", "int8", "matrix", False, 624),     # A100 datasheet r4: INT8 Tensor Core 624 TOPS dense (1,248 sparse)
    # ---- A100 80GB PCIe: same peaks as SXM4 -----------------------------------------------
    ("a100-pcie-80gb", "fp64", "vector", False, 9.7),     # A100 datasheet, 80GB PCIe: FP64 9.7 TFLOPS
    ("a100-pcie-80gb", "fp64", "matrix", False, 19.5),    # A100 datasheet, 80GB PCIe: FP64 Tensor Core 19.5 TFLOPS
    ("a100-pcie-80gb", "tf32", "matrix", False, 156),     # A100 datasheet, 80GB PCIe: TF32 156 TFLOPS dense (312 sparse)
    ("a100-pcie-80gb", "bf16", "matrix", False, 312),     # A100 datasheet, 80GB PCIe: BF16 312 TFLOPS dense (624 sparse)
    ("a100-pcie-80gb", "fp16", "matrix", True, 624),      # A100 datasheet, 80GB PCIe: FP16 Tensor Core 624* with sparsity
    ("a100-pcie-80gb", "int8", "matrix", False, 624),     # A100 datasheet, 80GB PCIe: INT8 624 TOPS dense (1,248 sparse)
    # ---- H100 SXM ---------------------------------------------------------------------------
    ("h100-sxm", "fp64", "vector", False, 34),            # H100 product page, SXM: FP64 34 TFLOPS
    ("h100-sxm", "fp64", "matrix", False, 67),            # H100 product page, SXM: FP64 Tensor Core 67 TFLOPS
    ("h100-sxm", "fp32", "vector", False, 67),            # H100 product page, SXM: FP32 67 TFLOPS
    ("h100-sxm", "tf32", "matrix", False, 494.7),         # H100 whitepaper: TF32 Tensor 494.7 dense (page: 989* sparse)
    ("h100-sxm", "tf32", "matrix", True, 989),            # H100 product page, SXM: TF32 Tensor Core 989* TFLOPS with sparsity
    ("h100-sxm", "bf16", "matrix", False, 989.4),         # H100 whitepaper: BF16 Tensor 989.4 dense (page: 1,979* sparse)
    ("h100-sxm", "bf16", "matrix", True, 1979),           # H100 product page, SXM: BF16 Tensor Core 1,979* TFLOPS with sparsity
    ("h100-sxm", "fp16", "matrix", False, 989.4),         # H100 whitepaper: FP16 Tensor 989.4 dense (page: 1,979* sparse)
    ("h100-sxm", "fp8", "matrix", False, 1978.9),         # H100 whitepaper: FP8 Tensor 1978.9 dense (page: 3,958* sparse)
    ("h100-sxm", "fp8", "matrix", True, 3958),            # H100 product page, SXM: FP8 Tensor Core 3,958* TFLOPS with sparsity
    ("h100-sxm", "int8", "matrix", False, 1978.9),        # H100 whitepaper: INT8 Tensor 1978.9 TOPS dense (page: 3,958* sparse)
    ("h100-sxm", "bf16", "vector", False, 133.8),         # H100 whitepaper: Peak BF16 (non-Tensor) 133.8 TFLOPS
    ("h100-sxm", "fp16", "vector", False, 133.8),         # H100 whitepaper: Peak FP16 (non-Tensor) 133.8 TFLOPS
    # ---- H100 PCIe --------------------------------------------------------------------------
    ("h100-pcie", "fp64", "vector", False, 26),           # H100 datasheet, PCIe: FP64 26 TFLOPS
    ("h100-pcie", "fp64", "matrix", False, 51),           # H100 datasheet, PCIe: FP64 Tensor Core 51 TFLOPS
    ("h100-pcie", "fp32", "vector", False, 51),           # H100 datasheet, PCIe: FP32 51 TFLOPS
    ("h100-pcie", "tf32", "matrix", False, 378),          # H100 datasheet, PCIe: TF32 Tensor Core 756* sparse -> 378 dense
    ("h100-pcie", "bf16", "matrix", False, 756.5),        # H100 datasheet, PCIe: BF16 Tensor Core 1,513* sparse -> 756.5 dense
    ("h100-pcie", "bf16", "matrix", True, 1513),          # H100 datasheet, PCIe: BF16 Tensor Core 1,513* TFLOPS with sparsity
    ("h100-pcie", "fp8", "matrix", False, 1513),          # H100 datasheet, PCIe: FP8 Tensor Core 3,026* sparse -> 1,513 dense
    ("h100-pcie", "int8", "matrix", True, 3026),          # H100 datasheet, PCIe: INT8 Tensor Core 3,026* TOPS with sparsity
    # ---- H100 NVL ---------------------------------------------------------------------------
    ("h100-nvl", "fp64", "vector", False, 30),            # H100 product page, NVL: FP64 30 TFLOPS
    ("h100-nvl", "fp64", "matrix", False, 60),            # H100 product page, NVL: FP64 Tensor Core 60 TFLOPS
    ("h100-nvl", "fp32", "vector", False, 60),            # H100 product page, NVL: FP32 60 TFLOPS
    ("h100-nvl", "tf32", "matrix", False, 417.5),         # H100 product page, NVL: TF32 Tensor Core 835* sparse -> 417.5 dense
    ("h100-nvl", "bf16", "matrix", False, 835.5),         # H100 product page, NVL: BF16 Tensor Core 1,671* sparse -> 835.5 dense
    ("h100-nvl", "bf16", "matrix", True, 1671),           # H100 product page, NVL: BF16 Tensor Core 1,671* TFLOPS with sparsity
    ("h100-nvl", "fp8", "matrix", False, 1670.5),         # H100 product page, NVL: FP8 Tensor Core 3,341* sparse -> 1,670.5 dense
    ("h100-nvl", "int8", "matrix", True, 3341),           # H100 product page, NVL: INT8 Tensor Core 3,341* TOPS with sparsity
    # ---- H200 SXM ---------------------------------------------------------------------------
    ("h200-sxm", "fp64", "vector", False, 34),            # H200 product page, SXM: FP64 34 TFLOPS
    ("h200-sxm", "fp64", "matrix", False, 67),            # H200 product page, SXM: FP64 Tensor Core 67 TFLOPS
    ("h200-sxm", "fp32", "vector", False, 67),            # H200 product page, SXM: FP32 67 TFLOPS
    ("h200-sxm", "tf32", "matrix", False, 494.7),         # H200 page: TF32 989* sparse; dense 494.7 = H100 whitepaper (same GH100)
    ("h200-sxm", "bf16", "matrix", False, 989.4),         # H200 page: BF16 1,979* sparse; dense 989.4 = H100 whitepaper
    ("h200-sxm", "bf16", "matrix", True, 1979),           # H200 product page, SXM: BF16 Tensor Core 1,979* TFLOPS with sparsity
    ("h200-sxm", "fp16", "matrix", False, 989.4),         # H200 page: FP16 1,979* sparse; dense 989.4 = H100 whitepaper
    ("h200-sxm", "fp8", "matrix", False, 1978.9),         # H200 page: FP8 3,958* sparse; dense 1978.9 = H100 whitepaper
    ("h200-sxm", "fp8", "matrix", True, 3958),            # H200 product page, SXM: FP8 Tensor Core 3,958* with sparsity
    ("h200-sxm", "int8", "matrix", False, 1978.9),        # H200 page: INT8 3,958* sparse; dense 1978.9 TOPS = H100 whitepaper
    ("h200-sxm", "bf16", "vector", False, 133.8),         # H100 whitepaper: Peak BF16 (non-Tensor) 133.8 (same chip, clocks)
    # ---- H200 NVL ---------------------------------------------------------------------------
    ("h200-nvl", "fp64", "vector", False, 30),            # H200 product page, NVL: FP64 30 TFLOPS
    ("h200-nvl", "fp64", "matrix", False, 60),            # H200 product page, NVL: FP64 Tensor Core 60 TFLOPS
    ("h200-nvl", "fp32", "vector", False, 60),            # H200 product page, NVL: FP32 60 TFLOPS
    ("h200-nvl", "tf32", "matrix", False, 417.5),         # H200 product page, NVL: TF32 Tensor Core 835* sparse -> 417.5 dense
    ("h200-nvl", "bf16", "matrix", False, 835.5),         # H200 product page, NVL: BF16 Tensor Core 1,671* sparse -> 835.5 dense
    ("h200-nvl", "fp16", "matrix", True, 1671),           # H200 product page, NVL: FP16 Tensor Core 1,671* with sparsity
    ("h200-nvl", "fp8", "matrix", False, 1670.5),         # H200 product page, NVL: FP8 Tensor Core 3,341* sparse -> 1,670.5 dense
    ("h200-nvl", "int8", "matrix", True, 3341),           # H200 product page, NVL: INT8 Tensor Core 3,341* with sparsity
    # ---- B200 (HGX B200 per-GPU, preliminary) -----------------------------------------------
    ("b200", "fp64", "vector", False, 37),                # HGX B200: FP64/FP64 Tensor Core 37 TFLOPS
    ("b200", "fp64", "matrix", False, 37),                # HGX B200: FP64/FP64 Tensor Core 37 TFLOPS
    ("b200", "fp32", "vector", False, 75),                # HGX B200: FP32 75 TFLOPS
    ("b200", "tf32", "matrix", False, 1100),              # HGX B200: TF32 Tensor Core 2.2 PFLOPS* sparse -> 1.1 PFLOPS dense
    ("b200", "tf32", "matrix", True, 2200),               # HGX B200: TF32 Tensor Core 2.2 PFLOPS with sparsity
    ("b200", "bf16", "matrix", False, 2250),              # HGX B200: FP16/BF16 Tensor Core 4.5 PFLOPS* sparse -> 2.25 dense
    ("b200", "bf16", "matrix", True, 4500),               # HGX B200: FP16/BF16 Tensor Core 4.5 PFLOPS with sparsity
    ("b200", "fp16", "matrix", False, 2250),              # HGX B200: FP16/BF16 Tensor Core 4.5 PFLOPS* sparse -> 2.25 dense
    ("b200", "fp8", "matrix", False, 4500),               # HGX B200: FP8/FP6 Tensor Core 9 PFLOPS* sparse -> 4.5 dense
    ("b200", "fp8", "matrix", True, 9000),                # HGX B200: FP8/FP6 Tensor Core 9 PFLOPS with sparsity
    ("b200", "int8", "matrix", False, 4500),              # HGX B200: INT8 Tensor Core 9 POPS* sparse -> 4.5 POPS dense
    ("b200", "fp4", "matrix", False, 9000),               # HGX B200: FP4 Tensor Core 18 PFLOPS* sparse -> 9 PFLOPS dense
    ("b200", "fp4", "matrix", True, 18000),               # HGX B200: FP4 Tensor Core 18 PFLOPS with sparsity
    # ---- L40S -------------------------------------------------------------------------------
    ("l40s", "fp32", "vector", False, 91.6),              # L40S datasheet: FP32 91.6 TFLOPS
    ("l40s", "tf32", "matrix", False, 183),               # L40S datasheet: TF32 Tensor Core 183 | 366* TFLOPS
    ("l40s", "tf32", "matrix", True, 366),                # L40S datasheet: TF32 Tensor Core 366* TFLOPS with sparsity
    ("l40s", "bf16", "matrix", False, 362.05),            # L40S datasheet: BFLOAT16 Tensor Core 362.05 | 733* TFLOPS
    ("l40s", "bf16", "matrix", True, 733),                # L40S datasheet: BFLOAT16 Tensor Core 733* TFLOPS with sparsity
    ("l40s", "fp16", "matrix", False, 362.05),            # L40S datasheet: FP16 Tensor Core 362.05 | 733* TFLOPS
    ("l40s", "fp8", "matrix", False, 733),                # L40S datasheet: FP8 Tensor Core 733 | 1,466* TFLOPS
    ("l40s", "fp8", "matrix", True, 1466),                # L40S datasheet: FP8 Tensor Core 1,466* TFLOPS with sparsity
    ("l40s", "int8", "matrix", False, 733),               # L40S datasheet: Peak INT8 Tensor 733 | 1,466* TOPS
    # ---- MI300X -----------------------------------------------------------------------------
    ("mi300x", "fp64", "vector", False, 81.7),            # ROCm MI300 table / MI300X data sheet: Vector FP64 81.7 TFLOPS
    ("mi300x", "fp64", "matrix", False, 163.4),           # ROCm MI300 table / MI300X data sheet: Matrix FP64 163.4 TFLOPS
    ("mi300x", "fp32", "vector", False, 163.4),           # ROCm MI300 table / MI300X data sheet: Vector FP32 163.4 TFLOPS
    ("mi300x", "fp32", "matrix", False, 163.4),           # ROCm MI300 table / MI300X data sheet: Matrix FP32 163.4 TFLOPS
    ("mi300x", "tf32", "matrix", False, 653.7),           # ROCm MI300 table / MI300X data sheet: TF32 653.7 TFLOPS
    ("mi300x", "fp16", "matrix", False, 1307.4),          # MI300X data sheet: FP16 1,307.4 TFLOPS (2,614.9 with sparsity)
    ("mi300x", "bf16", "matrix", False, 1307.4),          # MI300X data sheet: BF16 1,307.4 TFLOPS (2,614.9 with sparsity)
    ("mi300x", "bf16", "matrix", True, 2614.9),           # MI300X data sheet: BF16 with structured sparsity 2,614.9 TFLOPS
    ("mi300x", "fp8", "matrix", False, 2614.9),           # MI300X data sheet: FP8 2,614.9 TFLOPS (5,229.8 with sparsity)
    ("mi300x", "fp8", "matrix", True, 5229.8),            # MI300X data sheet: FP8 with structured sparsity 5,229.8 TFLOPS
    ("mi300x", "int8", "matrix", False, 2614.9),          # MI300X data sheet: INT8 2,614.9 TOPS (5,229.8 with sparsity)
]


@pytest.mark.parametrize("gpu, precision, unit, sparse, expected", PEAKS)
def test_peak_matches_datasheet(gpu, precision, unit, sparse, expected):
    """Each datasheet peak, dense unless the row says sparse, in FLOP/s (OP/s for int8)."""
    assert sk.load_gpu(gpu).peak_flops(precision, unit=unit, sparse=sparse) == pytest.approx(expected * T, rel=1e-12)


# (gpu, bandwidth TB/s, capacity GB, SMs or CUs)
MEMORY_AND_UNITS = [
    ("a100-sxm4-40gb", 1.555, 40, 108),   # A100 datasheet r4, 40GB SXM: 1,555 GB/s, 40 GB HBM2; whitepaper: 108 SMs
    ("a100-sxm4-80gb", 2.039, 80, 108),   # A100 datasheet, 80GB SXM: 2,039 GB/s, 80 GB HBM2e; whitepaper: 108 SMs
    ("a100-pcie-80gb", 1.935, 80, 108),   # A100 datasheet, 80GB PCIe: 1,935 GB/s, 80 GB HBM2e; 108 SMs
    ("h100-sxm", 3.35, 80, 132),          # H100 product page, SXM: 80 GB, 3.35 TB/s; whitepaper: 132 SMs
    ("h100-pcie", 2.0, 80, 114),          # H100 PCIe product brief: 80 GB HBM2e, 2,000 GB/s; whitepaper: 114 SMs
    ("h100-nvl", 3.938, 94, 132),         # H100 NVL product brief: 94 GB HBM3, 3,938 GB/s, 16,896 CUDA cores = 132 SMs
    ("h200-sxm", 4.8, 141, 132),          # H200 product page, SXM: 141 GB HBM3e, 4.8 TB/s; 132 SMs
    ("h200-nvl", 4.813, 141, 132),        # H200 NVL product brief: 141 GB HBM3e, 4,813 GB/s (page: 4.8 TB/s)
    ("b200", 7.7, 180, 148),              # HGX B200 per GPU: 180 GB HBM3e, 7.7 TB/s; 148 SMs (device query)
    ("l40s", 0.864, 48, 142),             # L40S datasheet: 48 GB GDDR6, 864 GB/s; 18,176 CUDA cores = 142 SMs
    ("mi300x", 5.3, 192, 304),            # MI300X data sheet: 192 GB HBM3, 5.3 TB/s, 304 CUs
]


@pytest.mark.parametrize("gpu, bandwidth_tb_s, capacity_gb, units", MEMORY_AND_UNITS)
def test_memory_and_compute_units(gpu, bandwidth_tb_s, capacity_gb, units):
    """Datasheet bandwidth (bytes/s), capacity (bytes, decimal GB) and SM/CU count."""
    g = sk.load_gpu(gpu)
    assert g.memory_bandwidth == pytest.approx(bandwidth_tb_s * 1e12, rel=1e-12)
    assert g.memory_capacity == pytest.approx(capacity_gb * 1e9, rel=1e-12)
    assert g.sm_count == units


# (gpu, GPU-to-GPU GB/s total bidirectional or None, host link GB/s)
LINKS = [
    ("a100-sxm4-80gb", 600, 64),    # A100 datasheet: NVLink 600 GB/s, PCIe Gen4 64 GB/s
    ("a100-pcie-80gb", 600, 64),    # A100 datasheet: NVLink Bridge for 2 GPUs 600 GB/s, PCIe Gen4 64 GB/s
    ("h100-sxm", 900, 128),         # H100 product page: NVLink 900 GB/s, PCIe Gen5 128 GB/s
    ("h100-pcie", 600, 128),        # H100 datasheet, PCIe: NVLink 600 GB/s, PCIe Gen5 128 GB/s
    ("h100-nvl", 600, 128),         # H100 product page, NVL: NVLink 600 GB/s, PCIe Gen5 128 GB/s
    ("h200-sxm", 900, 128),         # H200 product page: NVLink 900 GB/s, PCIe Gen5 128 GB/s
    ("h200-nvl", 900, 128),         # H200 product page, NVL: 2- or 4-way NVLink bridge 900 GB/s, PCIe Gen5 128 GB/s
    ("b200", 1800, 128),            # HGX B200: 5th-gen NVLink 1.8 TB/s, PCIe Gen5 128 GB/s
    ("l40s", None, 64),             # L40S datasheet: no NVLink; PCIe Gen4 x16 64 GB/s bidirectional
    ("mi300x", 896, 128),           # MI300X data sheet: 7 Infinity Fabric links x 128 GB/s; PCIe Gen5 x16 128 GB/s
]


@pytest.mark.parametrize("gpu, link_gb_s, pcie_gb_s", LINKS)
def test_interconnect(gpu, link_gb_s, pcie_gb_s):
    ic = sk.load_gpu(gpu).interconnect
    assert ic.bandwidth_gb_s == link_gb_s
    assert ic.pcie_bandwidth_gb_s == pcie_gb_s


def test_list_gpus_is_exactly_the_shipped_canonical_names():
    assert sk.list_gpus() == CANONICAL


@pytest.mark.parametrize(
    "alias, canonical",
    [
        ("a100", "a100-sxm4-80gb"),
        ("A100", "a100-sxm4-80gb"),
        ("h100", "h100-sxm"),
        ("H100", "h100-sxm"),
        ("h200", "h200-sxm"),
        ("H200", "h200-sxm"),
        ("h100-sxm5", "h100-sxm"),
        ("a100-40gb", "a100-sxm4-40gb"),
        ("MI300X", "mi300x"),
        ("L40S", "l40s"),
        ("B200", "b200"),
        ("H200-NVL", "h200-nvl"),
    ],
)
def test_aliases_and_case(alias, canonical):
    assert sk.load_gpu(alias).name == canonical


def test_no_alias_collides():
    """Every name and alias (lower case) points at exactly one shipped file."""
    seen: dict[str, str] = {}
    for name in sk.list_gpus():
        g = sk.load_gpu(name)
        for key in (g.name, *g.aliases):
            key = key.lower()
            assert key not in seen, f"{key!r} is used by both {seen[key]} and {name}"
            seen[key] = name


@pytest.mark.parametrize(
    "gpu, precision",
    [
        ("a100-sxm4-80gb", "fp8"),   # Ampere has no FP8 tensor cores (A100 datasheet lists TF32/BF16/FP16/INT8/INT4)
        ("a100-sxm4-40gb", "fp8"),
        ("a100-pcie-80gb", "fp8_e5m2"),
        ("a100-sxm4-80gb", "fp4"),
        ("h100-sxm", "fp4"),         # FP4 arrived with Blackwell
        ("h100-pcie", "fp4"),
        ("h100-nvl", "nvfp4"),
        ("h200-sxm", "fp4"),
        ("h200-nvl", "fp4"),
        ("l40s", "fp4"),
        ("l40s", "fp64"),            # the L40S datasheet gives no FP64 figure
        ("mi300x", "fp4"),           # no FP4 on CDNA 3
    ],
)
def test_precision_the_part_lacks_raises(gpu, precision):
    with pytest.raises(UnsupportedPrecisionError):
        sk.load_gpu(gpu).peak_flops(precision)


@pytest.mark.parametrize("gpu", ["a100-sxm4-80gb", "a100-sxm4-40gb", "a100-pcie-80gb", "h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl"])
@pytest.mark.parametrize("precision", ["tf32", "bf16", "fp16", "int8"])
def test_sparse_is_twice_dense_on_ampere_and_hopper_tensor_cores(gpu, precision):
    """2:4 structured sparsity doubles the tensor-core rate (the printed figures round, hence rel=1e-3)."""
    g = sk.load_gpu(gpu)
    assert g.peak_flops(precision, sparse=True) == pytest.approx(2 * g.peak_flops(precision), rel=1e-3)


@pytest.mark.parametrize("gpu", ["h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl", "b200", "l40s"])
def test_fp8_formats_share_one_rate(gpu):
    """e4m3 and e5m2 run at the same tensor-core rate."""
    g = sk.load_gpu(gpu)
    assert g.peak_flops("fp8_e4m3") == g.peak_flops("fp8_e5m2") == g.peak_flops("fp8")


@pytest.mark.parametrize(
    "gpu, fp32_vector",
    [
        ("a100-sxm4-80gb", 19.5),   # A100 datasheet: FP32 19.5 TFLOPS
        ("h100-sxm", 67),           # H100 product page: FP32 67 TFLOPS
        ("h200-sxm", 67),           # H200 product page: FP32 67 TFLOPS
        ("b200", 75),               # HGX B200: FP32 75 TFLOPS
        ("l40s", 91.6),             # L40S datasheet: FP32 91.6 TFLOPS
    ],
)
def test_fp32_matmul_without_tf32_falls_back_to_cuda_cores(gpu, fp32_vector):
    """No FP32 tensor path on NVIDIA: matrix fp32 is the vector fp32 rate."""
    g = sk.load_gpu(gpu)
    assert g.peak_flops("fp32", unit="matrix") == pytest.approx(fp32_vector * T, rel=1e-12)
    assert g.peak_record("fp32").unit == "vector"


@pytest.mark.parametrize(
    "gpu, fp64_matrix",
    [
        ("a100-sxm4-80gb", 19.5),   # A100 datasheet: FP64 Tensor Core 19.5 TFLOPS (vector 9.7)
        ("h100-sxm", 67),           # H100 product page: FP64 Tensor Core 67 TFLOPS (vector 34)
        ("h200-sxm", 67),           # H200 product page: FP64 Tensor Core 67 TFLOPS (vector 34)
        ("b200", 37),               # HGX B200: FP64/FP64 Tensor Core 37 TFLOPS
        ("mi300x", 163.4),          # MI300X: Matrix FP64 163.4 TFLOPS (vector 81.7)
    ],
)
def test_fp64_matmul_uses_fp64_tensor_cores(gpu, fp64_matrix):
    g = sk.load_gpu(gpu)
    assert g.peak_flops("fp64") == pytest.approx(fp64_matrix * T, rel=1e-12)
    assert g.peak_record("fp64").unit == "matrix"


def test_every_peak_cites_a_listed_source_with_a_url():
    for name in sk.list_gpus():
        g = sk.load_gpu(name)
        ids = {s.id for s in g.sources}
        for group in (g.chip, g.memory, g.interconnect, *g.peaks):
            assert group.source in ids
        for s in g.sources:
            assert s.url.startswith("https://")


def test_no_sparse_figure_entered_as_dense():
    """Where a stated sparse figure exists it is about twice the dense one, never equal to it."""
    for name in sk.list_gpus():
        for p in sk.load_gpu(name).peaks:
            if p.sparse_tflops is not None:
                assert 1.95 <= p.sparse_tflops / p.tflops <= 2.05, (name, p)


def test_b200_figures_are_marked_preliminary():
    g = sk.load_gpu("b200")
    assert g.source(g.peak_record("bf16").source).preliminary
