"""Adversarial cases: spec files and the spec loader (issue 10; see adversarial.py for how a case is judged).

Categories: ``spec-units`` (every numeric datasheet field 1000x off, negative, zero, NaN, text, a bool),
``spec-peaks`` and ``spec-sparse`` (peaks 1000x off, sparse figures entered as dense), ``spec-measured``
(ceilings against the datasheet, efficiencies, latencies, penalties), ``spec-yaml`` (YAML 1.1 surprises,
non-scalar keys, sizes, nesting, junk), ``spec-alias`` and ``spec-folder`` (collisions, shadowing, stray
files), ``spec-cache`` (read-only objects, rewritten files), ``spec-os`` (OS errors on paths) and
``spec-python`` (building a GPU in Python).

Every case writes its own files, in its own folder under one temporary root, when it runs: the cases
do not depend on each other or on their order. Expected outcomes are written by hand; the reasoning for
the systematic tables is in their comments (the ranges are in hardware_specs/README.md).
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import pickle
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional
from unittest import mock

import yaml

import solkit as sk
from adversarial import Adv
from solkit.errors import ArgumentTypeError, SpecConsistencyWarning, SpecError, UnknownGPUError
from solkit.hardware import MAX_SPEC_BYTES, SpecFolderWarning, load_spec_file, spec_dirs
from solkit.hardware.schema import GPU, Chip, Peak

SHIPPED = spec_dirs()[-1]
RAW = (SHIPPED / "h200-sxm.yaml").read_text()
H100_RAW = (SHIPPED / "h100-sxm.yaml").read_text()
DATA = yaml.safe_load(RAW)
ROOT = Path(tempfile.mkdtemp(prefix="solkit-adversarial-spec-"))
atexit.register(shutil.rmtree, ROOT, True)
ROOT_USER = os.geteuid() == 0 if hasattr(os, "geteuid") else False

CASES: list[Adv] = []


# ---- helpers ---------------------------------------------------------------------------------


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:80]


def _fresh(tag: str) -> Path:
    """An empty folder of its own for one case (emptied again on every run)."""
    folder = ROOT / _slug(tag)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def _write(tag: str, content: Any, name: str = "h200-sxm.yaml") -> Path:
    """A spec file (text, bytes or data to dump) in the case's own folder."""
    path = _fresh(tag) / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path


def _edited(*edits: tuple[tuple, Any]) -> dict:
    """The H200 spec's data with ``(path, value)`` edits (a value of KeyError deletes)."""
    data = copy.deepcopy(DATA)
    for where, value in edits:
        node = data
        for key in where[:-1]:
            node = node[key]
        if value is KeyError:
            del node[where[-1]]
        else:
            node[where[-1]] = value
    return data


def _line(key: str) -> str:
    """The shipped spec's ``measured:`` line of ``key`` (its value follows each refit)."""
    return next(line for line in RAW.splitlines() if line.startswith(f"  {key}: "))


def _latency_entry(key: str) -> str:
    """``key: value`` of the shipped spec's kernel latency table (the first table that has the key)."""
    start = RAW.index("kernel_latency_us:")
    match = re.compile(rf"\b{key}: [0-9.]+").search(RAW, start)
    assert match, f"adversarial_spec: no {key} in kernel_latency_us"
    return match.group(0)


def _sub(old: str, new: str, text: str = RAW) -> str:
    """``text`` with the first ``old`` replaced (``old`` must occur: a stale case fails loudly at import)."""
    assert old in text, f"adversarial_spec: {old!r} is not in the spec text"
    return text.replace(old, new, 1)


def _load(tag: str, content: Any, name: str = "h200-sxm.yaml") -> Callable[[], Any]:
    """A call that writes ``content`` and loads it by path."""
    return lambda: sk.load_gpu(_write(tag, content, name))


def add(id: str, call: Callable[[], Any], expect: Optional[type], *names: str, builtin: Optional[type] = None,
        seconds: float = 10.0) -> None:
    """Register one case; errors default to their builtin (SpecError: ValueError, UnknownGPUError: LookupError)."""
    if builtin is None and expect is not None:
        builtin = {SpecError: ValueError, UnknownGPUError: LookupError, ArgumentTypeError: TypeError}.get(expect)
    CASES.append(Adv(id=id, call=call, expect=expect, builtin=builtin, names=tuple(names), seconds=seconds))


# ---- spec-units: every numeric datasheet field -----------------------------------------------

#: (field path, value 1000x too large, value 1000x too small). Every range is narrower than 1000x around
#: the real parts (A2 to MI355X), so both are refused; compute_units / 1000 is not even an integer.
DATASHEET = [
    (("chip", "compute_units"), 132000, 0.132),  # H200: 132 SMs
    (("chip", "boost_clock_mhz"), 1980000, 1.98),  # 1980 MHz (1.98 = GHz typed)
    (("chip", "l2_cache_mb"), 60000, 0.06),  # 60 MB (60000 = KB-ish)
    (("chip", "tdp_w"), 700000, 0.7),  # 700 W (0.7 = kW typed)
    (("memory", "capacity_gb"), 141000, 0.141),  # 141 GB
    (("memory", "bandwidth_tb_s"), 4800, 0.0048),  # 4.8 TB/s (4800 = GB/s typed)
    (("interconnect", "bandwidth_gb_s"), 900000, 0.9),  # 900 GB/s (0.9 = TB/s typed)
    (("interconnect", "pcie_bandwidth_gb_s"), 128000, 0.128),  # 128 GB/s
]

for where, big, small in DATASHEET:
    field = ".".join(where)
    for label, value, shown in [("x1000", big, str(big)), ("/1000", small, str(small)), ("negative", -7, "-7"),
                                ("zero", 0, "got 0"), ("text", "fast", "'fast'"), ("bool", True, "True")]:
        add(f"spec-units: {field} {label} ({value!r})", _load(f"units {field} {label}", _edited((where, value))),
            SpecError, field, shown)
    add(f"spec-units: {field} nan", _load(f"units {field} nan", _edited((where, float("nan")))), SpecError, field, ".nan")
    add(f"spec-units: {field} inf", _load(f"units {field} inf", _edited((where, float("inf")))), SpecError, field, ".inf")

# the bandwidth typed in GB/s names the plausible range and its unit
add("spec-units: bandwidth 3350 names the range", _load("units range", _edited((("memory", "bandwidth_tb_s"), 3350))),
    SpecError, "memory.bandwidth_tb_s", "3350", "0.05 to 50 TB/s", "GB/s")
add("spec-units: 16896 CUDA cores as SMs", _load("units cores", _edited((("chip", "compute_units"), 16896))),
    SpecError, "chip.compute_units", "16896", "CUDA cores")
add("spec-units: a huge integer", _load("units huge", _edited((("chip", "compute_units"), 10**400))),
    SpecError, "chip.compute_units")
add("spec-units: a missing figure", _load("units missing", _edited((("memory", "bandwidth_tb_s"), KeyError))),
    SpecError, "memory.bandwidth_tb_s", "Field required")
add("spec-units: a list for a figure", _load("units list", _edited((("chip", "tdp_w"), [700]))), SpecError, "chip.tdp_w")
add("spec-units: null for a required figure", _load("units null", _edited((("chip", "tdp_w"), None))),
    SpecError, "chip.tdp_w", "None")
add("spec-units: null GPU link is allowed (no NVLink)",
    _load("units null link", _edited((("interconnect", "bandwidth_gb_s"), None))), None)
add("spec-units: an unknown key", _load("units typo", _edited((("memory", "bandwith_tb_s"), 4.8))),
    SpecError, "memory.bandwith_tb_s", "Extra inputs")

# ---- spec-peaks: each of the H200's ten peaks 1000x off ------------------------------------------

#: (index, dense TFLOP/s x 1000, / 1000): fp64 v, fp64 m, fp32 v, tf32, bf16, fp16, fp8, int8, bf16 v, fp16 v
#: (H200 product page and Hopper whitepaper figures: 34, 67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, 133.8, 133.8).
#: All 20 lie outside their precision's range (README: e.g. bf16 matrix 3 to 15000).
PEAKS = [(0, 34000, 0.034), (1, 67000, 0.067), (2, 67000, 0.067), (3, 494700, 0.4947), (4, 989400, 0.9894),
         (5, 989400, 0.9894), (6, 1978900, 1.9789), (7, 1978900, 1.9789), (8, 133800, 0.1338), (9, 133800, 0.1338)]
for i, big, small in PEAKS:
    for label, value in (("x1000", big), ("/1000", small)):
        add(f"spec-peaks: peaks.{i}.tflops {label} ({value})",
            _load(f"peaks {i} {label}", _edited((("peaks", i, "tflops"), value))), SpecError, f"peaks.{i}.tflops", str(value))
add("spec-peaks: negative peak", _load("peaks negative", _edited((("peaks", 4, "tflops"), -989.4))),
    SpecError, "peaks.4.tflops", "-989.4")
add("spec-peaks: a precision the schema lacks", _load("peaks fp7", _edited((("peaks", 0, "precision"), "fp7"))),
    SpecError, "peaks.0.precision", "'fp7'")

# ---- spec-sparse: sparse figures entered as dense --------------------------------------------------

#: (index, precision, sparse figure): the H200's stated "with sparsity" figures (product page)
SPARSE = [(3, "tf32", 989), (4, "bf16", 1979), (5, "fp16", 1979), (6, "fp8", 3958), (7, "int8", 3958)]
for i, precision, sparse in SPARSE:
    # the sparse figure typed as dense as well: sparse = dense (ratio 1, not 2), and 2x Hopper's per-clock rate
    add(f"spec-sparse: {precision} dense = its sparse figure",
        _load(f"sparse same {i}", _edited((("peaks", i, "tflops"), sparse))), SpecError, f"peaks.{i}", str(sparse))
    # the sparse figure as dense, no sparse figure: only the per-clock check can tell (2x the architecture's rate)
    add(f"spec-sparse: {precision} sparse figure as dense, sparse dropped",
        _load(f"sparse dropped {i}", _edited((("peaks", i, "tflops"), sparse), (("peaks", i, "sparse_tflops"), KeyError),
                                             (("measured",), KeyError))),
        SpecError, f"peaks.{i}.tflops", "FLOP/clock/SM", "sparse figure entered as dense")
add("spec-sparse: dense above sparse (swapped)",
    _load("sparse swapped", _edited((("peaks", 4, "tflops"), 1979), (("peaks", 4, "sparse_tflops"), 989.4))),
    SpecError, "peaks.4.sparse_tflops", "below the dense tflops")
add("spec-sparse: sparse 4x dense", _load("sparse 4x", _edited((("peaks", 4, "sparse_tflops"), 3957.6))),
    SpecError, "peaks.4.sparse_tflops", "3957.6", "1.9 to 2.1")
add("spec-sparse: sparse without structured_sparsity",
    _load("sparse flag", _edited((("structured_sparsity",), False))), SpecError, "sparse_tflops",
    "structured_sparsity is false")
add("spec-sparse: the same error on the second load",
    lambda: [_load("sparse twice", _edited((("peaks", 4, "tflops"), 1979)))() for _ in range(2)],
    SpecError, "peaks.4")

# ---- spec-measured: the measured section against the datasheet ----------------------------------

#: the H200's measured matmul rates (its spec's measured section); x1000 is above every datasheet peak,
#: /1000 below a tenth of it (README: 0.1 to 1 x the dense peak)
RATES: dict[str, float] = DATA["measured"]["matmul_rate_tflops"]
for p, rate in RATES.items():
    for label, value in (("x1000", round(rate * 1000, 6)), ("/1000", round(rate / 1000, 9))):
        add(f"spec-measured: matmul_rate_tflops.{p} {label}",
            _load(f"measured rate {p} {label}", _edited((("measured", "matmul_rate_tflops", p), value))),
            SpecError, f"measured.matmul_rate_tflops.{p}", f"{value:.12g}")
add("spec-measured: bf16 rate just above its peak 989.4",
    _load("measured rate above", _edited((("measured", "matmul_rate_tflops", "bf16"), 989.5))),
    SpecError, "measured.matmul_rate_tflops.bf16", "989.5", "989.4")
add("spec-measured: bf16 rate equal to its peak", _load("measured rate equal",
                                                        _edited((("measured", "matmul_rate_tflops", "bf16"), 989.4))), None)
add("spec-measured: a rate for fp4, which Hopper lacks",
    _load("measured fp4", _edited((("measured", "matmul_rate_tflops", "fp4"), 100.0))),
    SpecError, "measured.matmul_rate_tflops.fp4", "no dense fp4 matrix figure")

#: (field path, value, expected, a text the message names); reasoning in each comment
MEASURED: list[tuple[tuple, Any, Optional[type], str]] = [
    (("copy_bandwidth_tb_s",), 4271, SpecError, "4271"),  # GB/s typed: above the 4.8 TB/s datasheet
    (("copy_bandwidth_tb_s",), 0.004271, SpecError, "0.004271"),  # below a tenth of 4.8
    (("copy_bandwidth_tb_s",), 4.81, SpecError, "4.81"),  # above 4.8: no copy beats the datasheet
    (("copy_bandwidth_tb_s",), 4.8, None, ""),  # equal: the limit itself
    (("read_bandwidth_tb_s",), 4420, SpecError, "4420"),
    (("read_bandwidth_tb_s",), 0.00442, SpecError, "0.00442"),
    (("read_bandwidth_tb_s",), None, None, ""),  # optional
    (("launch_floor_us",), 4480, SpecError, "4480"),  # ns typed: above 100 us
    (("launch_floor_us",), 0.00448, SpecError, "0.00448"),  # ms typed: below 0.1 us
    (("launch_floor_us",), 0, SpecError, "got 0"),
    (("launch_floor_us",), -4.48, SpecError, "-4.48"),
    (("kernel_gap_us",), 3880, SpecError, "3880"),  # above 100 us
    (("kernel_gap_us",), 0.00388, None, ""),  # 3.88 ns: small but possible (0 to 100 us)
    (("kernel_gap_us",), 0.0, None, ""),  # no gap
    (("kernel_gap_us",), -1, SpecError, "-1"),
    (("kernel_latency_us", "gemm"), 2000, SpecError, "2000"),  # ns typed: above 1000 us
    (("kernel_latency_us", "flash_attention"), 20000, SpecError, "20000"),
    (("kernel_latency_us", "add"), -0.5, SpecError, "-0.5"),
    (("kernel_latency_us", "gemm"), 0.002, None, ""),  # 2 ns: possible
    (("compute_efficiency", "gemm"), 100, SpecError, "100"),  # a percentage
    (("compute_efficiency", "conv"), 75.9, SpecError, "75.9"),
    (("compute_efficiency", "attention"), 45.5, SpecError, "45.5"),
    (("compute_efficiency", "gemm"), 1.2, SpecError, "1.2"),  # above 1
    (("compute_efficiency", "gemm"), 1.0001, SpecError, "1.0001"),
    (("compute_efficiency", "conv"), 0.000759, SpecError, "0.000759"),  # /1000: below 0.01
    (("compute_efficiency", "gemm"), 0, SpecError, "got 0"),
    (("compute_efficiency", "gemm"), -0.5, SpecError, "-0.5"),
    (("memory_efficiency", "copy"), 96.1, SpecError, "96.1"),
    (("memory_efficiency", "softmax"), 47.3, SpecError, "47.3"),
    (("memory_efficiency", "im2col"), 1.57, SpecError, "1.57"),
    (("memory_efficiency", "gemm"), 0.01, None, ""),  # the range's floor
    # the retired penalties (always 1 since the fit models them otherwise): any value is refused, naming the key
    (("misaligned_gemm_penalty",), 4774, SpecError, "retired"),
    (("misaligned_gemm_penalty",), 0.004774, SpecError, "retired"),
    (("misaligned_gemm_penalty",), 0.99, SpecError, "retired"),
    (("misaligned_gemm_penalty",), 1.0, SpecError, "retired"),  # even the value it always had
    (("small_channel_penalty",), 5758, SpecError, "retired"),
    (("small_channel_penalty",), 0.5, SpecError, "retired"),
    (("overlap_exponent",), 0.5, SpecError, "0.5"),  # p < 1: more than the sum
    (("overlap_exponent",), 2000, SpecError, "2000"),  # above 1000
    (("overlap_exponent",), 0, SpecError, "overlap_exponent"),
    (("overlap_exponent",), "inf", None, ""),  # the word inf: a plain maximum
    (("overlap_exponent",), 1.0, None, ""),  # the sum
    (("overlap_exponent",), "infinity", SpecError, "infinity"),
    (("copy_bandwidth_tb_s",), "fast", SpecError, "'fast'"),
    (("copy_bandwidth_tb_s",), True, SpecError, "True"),
    (("copy_bandwidth_tb_s",), float("nan"), SpecError, ".nan"),
    (("launch_floor_us",), float("inf"), SpecError, ".inf"),
]
for rest, value, expect, shown in MEASURED:
    field = "measured." + ".".join(rest)
    add(f"spec-measured: {field} = {value!r}", _load(f"measured {field} {value!r}", _edited((("measured", *rest), value))),
        expect, *((field, shown) if expect else ()))

# ---- spec-yaml: YAML 1.1 surprises, keys, sizes, nesting, junk -----------------------------------

_BW = "  bandwidth_tb_s: 4.8 "
_TDP = "  tdp_w: 700 "
#: (label, text, field, literal): each literal YAML 1.1 reads unlike a person or YAML 1.2 does
LITERALS = [
    ("octal bandwidth", _sub(_BW, "  bandwidth_tb_s: 0132 "), "memory.bandwidth_tb_s", "0132"),
    ("octal tdp", _sub(_TDP, "  tdp_w: 0700 "), "chip.tdp_w", "0700"),
    ("octal SMs", _sub("  compute_units: 132 ", "  compute_units: 0204 "), "chip.compute_units", "0204"),
    ("octal in a table", _sub(_latency_entry("copy"), "copy: 02"), "measured.kernel_latency_us.copy", "02"),
    ("octal negative", _sub(_line("kernel_gap_us"), "  kernel_gap_us: -03"), "measured.kernel_gap_us", "-03"),
    ("octal with separators", _sub(_TDP, "  tdp_w: 07_00 "), "chip.tdp_w", "07_00"),
    ("base-60 int", _sub(_TDP, "  tdp_w: 11:40 "), "chip.tdp_w", "11:40"),
    ("base-60 float", _sub(_line("launch_floor_us"), "  launch_floor_us: 1:30.5"), "measured.launch_floor_us", "1:30.5"),
    ("base-60 SMs", _sub("  compute_units: 132 ", "  compute_units: 2:12 "), "chip.compute_units", "2:12"),
    ("hexadecimal", _sub(_TDP, "  tdp_w: 0x2BC "), "chip.tdp_w", "0x2BC"),
    ("binary", _sub(_TDP, "  tdp_w: 0b1010111100 "), "chip.tdp_w", "0b1010111100"),
    ("digit separators", _sub(_TDP, "  tdp_w: 7_00 "), "chip.tdp_w", "7_00"),
    ("float separators", _sub(_BW, "  bandwidth_tb_s: 4_8.0 "), "memory.bandwidth_tb_s", "4_8.0"),
    ("yes for a flag", _sub("structured_sparsity: true ", "structured_sparsity: yes "), "structured_sparsity", "yes"),
    ("Off for a flag", _sub("structured_sparsity: true ", "structured_sparsity: Off "), "structured_sparsity", "Off"),
    ("ON for a flag", _sub("structured_sparsity: true ", "structured_sparsity: ON "), "structured_sparsity", "ON"),
    ("yes for preliminary", _sub("    preliminary: true", "    preliminary: yes"), "sources.0.preliminary", "yes"),
    ("no as an alias (Norway)", _sub("aliases: [h200]", "aliases: [h200, no]"), "aliases.1", "no"),
    ("on as a memory type", _sub("  type: HBM3e", "  type: on"), "memory.type", "on"),
    ("off as a stack version", _sub("cudnn: '91900'", "cudnn: off"), "measured.stack.cudnn", "off"),
    (".inf bandwidth", _sub(_BW, "  bandwidth_tb_s: .inf "), "memory.bandwidth_tb_s", ".inf"),
    ("-.inf tdp", _sub(_TDP, "  tdp_w: -.inf "), "chip.tdp_w", "-.inf"),
    (".NaN copy", _sub(_line("copy_bandwidth_tb_s"), "  copy_bandwidth_tb_s: .NaN"), "measured.copy_bandwidth_tb_s",
     ".NaN"),
    (".inf overlap", _sub(_line("overlap_exponent"), "  overlap_exponent: .inf"), "measured.overlap_exponent", "the word inf"),
    (".inf peak", _sub("tflops: 989.4,  sparse_tflops: 1979, source: h200-page, note: \"sparse 1,979 from the page; dense "
                       "989.4 = H100 whitepaper exact value\"}\n  - {precision: fp16",
                       "tflops: .inf,  sparse_tflops: 1979, source: h200-page}\n  - {precision: fp16"),
     "peaks.4.tflops", ".inf"),
    ("explicit !!int octal", _sub(_TDP, "  tdp_w: !!int 0700 "), "chip.tdp_w", "0700"),
    ("yes as a key", RAW + "\nyes: 1\n", "yes", "boolean"),
]
for label, text, field, literal in LITERALS:
    add(f"spec-yaml: {label}", _load(f"yaml {label}", text), SpecError, field, literal)

# forms that must simply work
add("spec-yaml: 4.8e0 is a number (YAML 1.2)", _load("yaml exp", _sub(_BW, "  bandwidth_tb_s: 4.8e0 ")), None)
add("spec-yaml: 48E-1 is a number", _load("yaml exp2", _sub(_BW, "  bandwidth_tb_s: 48E-1 ")), None)
add("spec-yaml: explicit !!float", _load("yaml tag float", _sub(_BW, "  bandwidth_tb_s: !!float 4.8 ")), None)
add("spec-yaml: True and FALSE are booleans", _load("yaml True", _sub("structured_sparsity: true ", "structured_sparsity: True "
                                                                     )), None)
add("spec-yaml: a quoted 'no' alias is text", _load("yaml quoted no", _sub("aliases: [h200]", "aliases: [h200, 'no']")), None)
add("spec-yaml: 08 is text, not a number", _load("yaml 08", _sub(_TDP, "  tdp_w: 08 ")), SpecError, "chip.tdp_w", "'08'")
add("spec-yaml: 1e999 overflows to inf", _load("yaml 1e999", _sub(_BW, "  bandwidth_tb_s: 1e999 ")),
    SpecError, "memory.bandwidth_tb_s", "finite")
add("spec-yaml: explicit !!str for a figure", _load("yaml str", _sub(_BW, "  bandwidth_tb_s: !!str 4.8 ")),
    SpecError, "memory.bandwidth_tb_s", "'4.8'")
add("spec-yaml: a python tag", _load("yaml python", _sub(_TDP, "  tdp_w: !!python/object/apply:os.getpid [] ")),
    SpecError, "h200-sxm.yaml", "YAML error")
add("spec-yaml: the value tag '='", _load("yaml value", _sub(_TDP, "  tdp_w: = ")), SpecError, "h200-sxm.yaml")
add("spec-yaml: a list as a key", _load("yaml list key", RAW + "\n? [a, b]\n: 1\n"), SpecError, "h200-sxm.yaml",
    "not a list")
add("spec-yaml: a mapping as a key", _load("yaml map key", RAW + "\n{a: 1}: 2\n"), SpecError, "h200-sxm.yaml",
    "not a mapping")
add("spec-yaml: a flow list key inside measured",
    _load("yaml nested key", _sub(_line("kernel_gap_us"), _line("kernel_gap_us") + "\n  [x, y]: 1")), SpecError,
    "h200-sxm.yaml", "mapping key")
add("spec-yaml: a merge key", _load("yaml merge", _sub("chip:\n", "base: &b {tdp_w: 700}\nchip:\n  <<: *b\n")),
    SpecError, "h200-sxm.yaml", "merge key")
add("spec-yaml: a duplicate key", _load("yaml dup", _sub(_BW, "  bandwidth_tb_s: 4.8\n  bandwidth_tb_s: 48 ")),
    SpecError, "h200-sxm.yaml", "'bandwidth_tb_s' appears twice")
add("spec-yaml: a top-level list", _load("yaml top list", "- 1\n- 2\n"), SpecError, "h200-sxm.yaml", "got list")
add("spec-yaml: a top-level scalar", _load("yaml top scalar", "42\n"), SpecError, "h200-sxm.yaml", "got int")
add("spec-yaml: a top-level octal", _load("yaml top octal", "0132\n"), SpecError, "h200-sxm.yaml", "0132")
add("spec-yaml: an empty file", _load("yaml empty", ""), SpecError, "h200-sxm.yaml", "empty")
add("spec-yaml: only a comment", _load("yaml comment", "# nothing\n"), SpecError, "h200-sxm.yaml", "empty")
add("spec-yaml: two documents", _load("yaml two docs", RAW + "\n---\nname: x\n"), SpecError, "h200-sxm.yaml",
    "another document")
add("spec-yaml: binary junk", _load("yaml junk", bytes(range(256)) * 8), SpecError, "h200-sxm.yaml", "UTF-8")
add("spec-yaml: a gzip header", _load("yaml gzip", b"\x1f\x8b\x08\x00" + b"\x00" * 64), SpecError, "h200-sxm.yaml")
add("spec-yaml: UTF-16 text", _load("yaml utf16", RAW.encode("utf-16")), SpecError, "h200-sxm.yaml", "not UTF-8")
add("spec-yaml: a NUL character", _load("yaml nul", _sub("name: h200-sxm", "name: h200\x00sxm")), SpecError,
    "h200-sxm.yaml", "#x0000")
add("spec-yaml: a tab indent", _load("yaml tab", _sub("  tdp_w", "\ttdp_w")), SpecError, "h200-sxm.yaml", "syntax error")
# cut inside a flow mapping (a cut that happens to leave valid YAML and every required field is a shorter spec)
add("spec-yaml: truncated mid-file", _load("yaml truncated", RAW[: RAW.index("matmul_rate_tflops: {") + 30]), SpecError,
    "h200-sxm.yaml")
add("spec-yaml: an unclosed quote", _load("yaml quote", RAW + '\nnotes2: "open\n'), SpecError, "h200-sxm.yaml")
add("spec-yaml: not a GPU spec (other content)", _load("yaml other", "todo: buy GPUs\nowner: me\n"), SpecError,
    "h200-sxm.yaml", "not a GPU spec", "todo")
add("spec-yaml: 1 MiB + 1 byte is refused before parsing",
    _load("yaml big", RAW + "\n#" + "x" * (MAX_SPEC_BYTES - len(RAW.encode()) - 2) + "\n"), SpecError,
    "h200-sxm.yaml", "1,048,577 bytes", "1 MiB", seconds=5)
add("spec-yaml: exactly 1 MiB loads",
    _load("yaml at cap", RAW + "\n#" + "x" * (MAX_SPEC_BYTES - len(RAW.encode()) - 3) + "\n"), None, seconds=5)
add("spec-yaml: 64 MiB is refused at once", _load("yaml huge", b"#" * (64 << 20)), SpecError, "67,108,864 bytes",
    seconds=5)
add("spec-yaml: 5000-deep flow nesting", _load("yaml deep flow", RAW + "\nextra: " + "[" * 5000 + "]" * 5000 + "\n"),
    SpecError, "h200-sxm.yaml", "nesting depth", seconds=5)
add("spec-yaml: 300000-deep block nesting", _load("yaml deep block", "x: " + "- " * 300000 + "y\n"), SpecError,
    "h200-sxm.yaml", seconds=5)
add("spec-yaml: 900-deep nesting inside libyaml's limit",
    _load("yaml deep ok", RAW + "\nextra: " + "[" * 900 + "]" * 900 + "\n"), SpecError, "h200-sxm.yaml", "extra",
    seconds=5)
add("spec-yaml: a billion laughs of anchors",
    _load("yaml laughs", RAW + "\nlol0: &l0 [a, a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"lol{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 9)) + "notes2: *l8\n"),
    SpecError, "h200-sxm.yaml", "lol0", seconds=5)
add("spec-yaml: 1 MiB of one flow list stops at 20,000 nodes",
    _load("yaml long list", "notes: [" + "1, " * 300000 + "1]\n"), SpecError, "h200-sxm.yaml", "20,000", seconds=2)
add("spec-yaml: 60,000 keys stop at 20,000 nodes",
    _load("yaml many keys", "".join(f"k{i}: {i}\n" for i in range(60000))), SpecError, "20,000", seconds=2)
add("spec-yaml: a syntax error after 900 KB", _load("yaml late error", "notes: >-\n" + "  " + "x" * 900_000 + "\n: [\n"),
    SpecError, "h200-sxm.yaml", "line", seconds=5)
add("spec-yaml: a 500 KB note loads", _load("yaml long note", _sub("notes: >-\n", "notes: >-\n  " + "x" * 500_000 + "\n")),
    None, seconds=5)
add("spec-yaml: an impossible date", _load("yaml date", _sub("date: 2026-11-30", "date: 2026-13-45")), SpecError,
    "measured.date")


# ---- spec-alias: collisions between files ---------------------------------------------------------


def _h100_copy(name: str, aliases: str) -> str:
    """The H100 SXM spec renamed (canonical name and aliases)."""
    return _sub("aliases: [h100, h100-sxm5]", f"aliases: {aliases}", _sub("name: h100-sxm", f"name: {name}", H100_RAW))


def _folder(tag: str, files: dict[str, Any]) -> Path:
    folder = _fresh(tag)
    for name, content in files.items():
        (folder / name).write_text(content)
    return folder


add("spec-alias: a user copy keeping the shipped alias h100",
    lambda: sk.load_gpu("h100", spec_path=_folder("alias keep", {"my-h100.yaml": _h100_copy("my-h100", "[h100]")})),
    SpecError, "claimed by 2 spec files", "my-h100.yaml", "h100-sxm.yaml")
add("spec-alias: two files in one folder claim an alias",
    lambda: sk.load_gpu("fast", spec_path=_folder("alias two", {"gpu-a.yaml": _h100_copy("gpu-a", "[fast]"),
                                                                "gpu-b.yaml": _h100_copy("gpu-b", "[fast]")})),
    SpecError, "gpu-a.yaml", "gpu-b.yaml", "'fast'")
add("spec-alias: an alias equal to another file's canonical name",
    lambda: sk.load_gpu("gpu-b", spec_path=_folder("alias canon", {"gpu-a.yaml": _h100_copy("gpu-a", "[gpu-b]"),
                                                                   "gpu-b.yaml": _h100_copy("gpu-b", "[]")})),
    SpecError, "gpu-a.yaml", "gpu-b.yaml")
add("spec-alias: a file named like a shipped alias (h200)",
    lambda: sk.load_gpu("h200", spec_path=_folder("alias name", {"h200.yaml": _h100_copy("h200", "[]")})),
    SpecError, "h200.yaml", "h200-sxm.yaml")
add("spec-alias: the colliding file still loads by canonical name, with a warning",
    lambda: sk.load_gpu("my-h100", spec_path=_folder("alias canonical ok", {"my-h100.yaml": _h100_copy("my-h100", "[h100]")})),
    SpecFolderWarning, "both claim the name 'h100'")
add("spec-alias: list_gpus warns about the collision",
    lambda: sk.list_gpus(spec_path=_folder("alias list", {"my-h100.yaml": _h100_copy("my-h100", "[h100]")})),
    SpecFolderWarning, "my-h100.yaml", "h100-sxm.yaml")
add("spec-alias: a copy with the shipped canonical name shadows it, with a warning",
    lambda: sk.load_gpu("h200", spec_path=_folder("alias shadow", {"h200-sxm.yaml": RAW})),
    SpecFolderWarning, "shadows", "h200-sxm.yaml")
add("spec-alias: the shadowing file's aliases replace the shipped ones",
    lambda: sk.load_gpu("h200", spec_path=_folder("alias shadow drop", {"h200-sxm.yaml": _sub("aliases: [h200]",
                                                                                           "aliases: []")})),
    UnknownGPUError, "'h200' is not a known GPU")
add("spec-alias: an alias repeating the name", _load("alias self", _sub("aliases: [h200]", "aliases: [h200-SXM]")),
    SpecError, "aliases.0", "repeats name")
add("spec-alias: an alias twice", _load("alias twice", _sub("aliases: [h200]", "aliases: [h200, H200]")),
    SpecError, "aliases.1", "repeats aliases.0")
add("spec-alias: an alias with a slash", _load("alias slash", _sub("aliases: [h200]", "aliases: [nvidia/h200]")),
    SpecError, "aliases.0", "nvidia/h200")
add("spec-alias: an alias ending in .yaml", _load("alias yaml", _sub("aliases: [h200]", "aliases: [h200.yaml]")),
    SpecError, "aliases.0", ".yaml")
add("spec-alias: an empty alias", _load("alias empty", _sub("aliases: [h200]", "aliases: ['']")), SpecError, "aliases.0")
add("spec-alias: a file named unlike its name field",
    lambda: sk.load_gpu("other", spec_path=_folder("alias mismatch", {"other.yaml": RAW})),
    SpecError, "field 'name' is 'h200-sxm'", "named 'other'")
add("spec-alias: an upper-case name", _load("alias upper", _sub("name: h200-sxm", "name: H200-SXM")), SpecError,
    "field 'name'", "H200-SXM")


# ---- spec-folder: stray files do not break the GPUs that are fine --------------------------------


def _stray(tag: str, make: Callable[[Path], None]) -> Path:
    folder = _fresh(tag)
    make(folder)
    return folder


def _in_stray(tag: str, make: Callable[[Path], None], name: str = "h200") -> Callable[[], Any]:
    return lambda: sk.load_gpu(name, spec_path=_stray(tag, make))


add("spec-folder: a README and a subfolder", _in_stray("folder readme", lambda d: ((d / "README.md").write_text("# x"),
                                                                                   (d / "systems").mkdir())), None)
add("spec-folder: an empty folder", _in_stray("folder empty", lambda d: None), None)
add("spec-folder: a .yml file is not a spec", _in_stray("folder yml", lambda d: (d / "notes.yml").write_text("a: 1")), None)
add("spec-folder: a hidden editor lock symlink", _in_stray("folder lock", lambda d: os.symlink("x@host", d / ".#h.yaml")),
    None)
add("spec-folder: a non-spec notes.yaml is skipped with a warning",
    _in_stray("folder notes", lambda d: (d / "notes.yaml").write_text("todo: buy GPUs\n")),
    SpecFolderWarning, "notes.yaml", "not a GPU spec")
add("spec-folder: asking for notes gives its error",
    _in_stray("folder notes ask", lambda d: (d / "notes.yaml").write_text("todo: buy GPUs\n"), "notes"),
    SpecError, "notes.yaml", "not a GPU spec")
add("spec-folder: a dangling symlink is skipped",
    _in_stray("folder ghost", lambda d: os.symlink(d / "nowhere.yaml", d / "ghost.yaml")),
    SpecFolderWarning, "ghost.yaml", "no such spec file")
add("spec-folder: asking for the dangling symlink",
    _in_stray("folder ghost ask", lambda d: os.symlink(d / "nowhere.yaml", d / "ghost.yaml"), "ghost"),
    SpecError, "ghost.yaml", "no such spec file")
add("spec-folder: a symlink loop is skipped",
    _in_stray("folder loop", lambda d: os.symlink("loop.yaml", d / "loop.yaml")), SpecFolderWarning, "loop.yaml", "ELOOP")
add("spec-folder: a subfolder named x.yaml is skipped",
    _in_stray("folder dir yaml", lambda d: (d / "x.yaml").mkdir()), SpecFolderWarning, "x.yaml", "is a folder")
add("spec-folder: a named pipe is skipped without hanging",
    _in_stray("folder fifo", lambda d: os.mkfifo(d / "pipe.yaml")), SpecFolderWarning, "pipe.yaml", "not a regular file",
    seconds=5)
add("spec-folder: a broken spec is skipped, the shipped h200 still loads",
    _in_stray("folder broken", lambda d: (d / "my-gpu.yaml").write_text(_sub("name: h200-sxm", "name: my-gpu",
                                                                             _sub(_BW, "  bandwidth_tb_s: 4800 ")))),
    SpecFolderWarning, "my-gpu.yaml", "memory.bandwidth_tb_s")
add("spec-folder: an oversized file is skipped",
    _in_stray("folder big", lambda d: (d / "big.yaml").write_bytes(b"#" * (MAX_SPEC_BYTES + 1))),
    SpecFolderWarning, "big.yaml", "1 MiB")
add("spec-folder: a broken user h200-sxm.yaml shadows the shipped one and raises",
    _in_stray("folder broken shadow", lambda d: (d / "h200-sxm.yaml").write_text(_sub(_BW, "  bandwidth_tb_s: 4800 ")),
              "h200-sxm"), SpecError, "memory.bandwidth_tb_s", "4800")
add("spec-folder: two folders with the same file: the first wins, with a warning",
    lambda: sk.load_gpu("h200-sxm", spec_path=[_stray("folder two a", lambda d: (d / "h200-sxm.yaml").write_text(RAW)),
                                               _stray("folder two b", lambda d: (d / "h200-sxm.yaml").write_text(RAW))]),
    SpecFolderWarning, "folder-two-a", "shadows", "folder-two-b")
if not ROOT_USER:  # root reads a chmod-000 file anyway
    def _unreadable(d: Path) -> None:
        (d / "secret.yaml").write_text(RAW)
        os.chmod(d / "secret.yaml", 0)
    add("spec-folder: an unreadable file is skipped", _in_stray("folder unreadable", _unreadable),
        SpecFolderWarning, "secret.yaml", "EACCES")


# ---- spec-cache: read-only objects, rewritten files ----------------------------------------------


def _refused(mutate: Callable[[sk.GPU], Any], check: Callable[[sk.GPU], Any]) -> Callable[[], None]:
    """A call that tries ``mutate`` on a loaded h200, requires it to fail, and the next load to be unchanged."""

    def call() -> None:
        gpu = sk.load_gpu("h200")
        before = check(gpu)
        try:
            mutate(gpu)
        except (TypeError, AttributeError, SpecError):
            pass
        else:
            raise AssertionError("the mutation went through")
        after = check(sk.load_gpu("h200"))
        if after != before:
            raise AssertionError(f"the next load_gpu sees the change: {before!r} -> {after!r}")

    return call


def _eff(gpu: Any) -> dict:
    return dict(gpu.measured.compute_efficiency)


MUTATIONS: list[tuple[str, Callable[[Any], Any], Callable[[Any], Any]]] = [
    ("set a measured efficiency", lambda g: g.measured.compute_efficiency.__setitem__("gemm", 2.0), _eff),
    ("update a measured table", lambda g: g.measured.memory_efficiency.update(copy=9.0),
     lambda g: dict(g.measured.memory_efficiency)),
    ("delete a latency", lambda g: g.measured.kernel_latency_us.pop("gemm"), lambda g: dict(g.measured.kernel_latency_us)),
    ("clear the rate table", lambda g: g.measured.matmul_rate_tflops.clear(), lambda g: dict(g.measured.matmul_rate_tflops)),
    ("re-init a table", lambda g: g.measured.compute_efficiency.__init__({"x": 1.0}), _eff),
    ("setdefault in a table", lambda g: g.measured.compute_efficiency.setdefault("new", 0.5), _eff),
    ("|= a table", lambda g: g.measured.compute_efficiency.__ior__({"gemm": 0.1}), _eff),
    ("set the stack", lambda g: g.measured.stack.__setitem__("torch", "0"), lambda g: dict(g.measured.stack)),
    ("append to aliases", lambda g: g.aliases.append("x"), lambda g: g.aliases),  # a tuple: no append
    ("replace aliases", lambda g: setattr(g, "aliases", ("x",)), lambda g: g.aliases),
    ("set the bandwidth", lambda g: setattr(g.memory, "bandwidth_tb_s", 48.0), lambda g: g.memory_bandwidth),
    ("delete the measured section", lambda g: delattr(g, "measured"), lambda g: g.measured is None),
    ("set a peak", lambda g: setattr(g.peaks[4], "tflops", 1.0), lambda g: g.peak_flops("bf16")),
    ("replace a peak in the tuple", lambda g: g.peaks.__setitem__(4, g.peaks[0]), lambda g: g.peak_flops("bf16")),
    ("set a source url", lambda g: setattr(g.sources[0], "url", "http://x"), lambda g: g.sources[0].url),
]
for label, mutate, check in MUTATIONS:
    add(f"spec-cache: {label}", _refused(mutate, check), None)


def _copy_is_private() -> None:
    gpu = sk.load_gpu("h200")
    changed = gpu.model_copy(update={"full_name": "changed"})
    if changed.full_name != "changed" or sk.load_gpu("h200").full_name == "changed":
        raise AssertionError("model_copy changed the cached spec")


def _round_trips() -> None:
    gpu = sk.load_gpu("h200")
    for other in (copy.deepcopy(gpu), pickle.loads(pickle.dumps(gpu)), copy.copy(gpu)):
        if other != gpu or dict(other.measured.compute_efficiency) != dict(gpu.measured.compute_efficiency):
            raise AssertionError("a copy differs")


def _rewrite(tag: str, old: str, new: str) -> Callable[[], Any]:
    """Load a file, rewrite it to the same size with mtime restored, and load it again (returns the second)."""

    def call() -> Any:
        assert len(old) == len(new)
        path = _write(tag, RAW)
        sk.load_gpu(path)
        before = path.stat()
        path.write_text(_sub(old, new))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert path.stat().st_size == before.st_size
        return sk.load_gpu(path)

    return call


def _reloaded() -> None:
    gpu = _rewrite("cache rewrite", "bandwidth_tb_s: 4.8 ", "bandwidth_tb_s: 5.8 ")()
    if gpu.memory_bandwidth != 5.8e12:
        raise AssertionError(f"the rewritten file was not reloaded: {gpu.memory_bandwidth}")


def _replaced_by_rename() -> None:
    path = _write("cache rename", RAW)
    sk.load_gpu(path)
    other = path.with_name("next.tmp")
    other.write_text(_sub(_BW, "  bandwidth_tb_s: 5.8 "))
    os.replace(other, path)
    if sk.load_gpu(path).memory_bandwidth != 5.8e12:
        raise AssertionError("the renamed-over file was not reloaded")


def _deleted() -> Any:
    path = _write("cache deleted", RAW)
    sk.load_gpu(path)
    path.unlink()
    return sk.load_gpu(path)


def _alias_moved() -> Any:
    folder = _folder("cache alias moved", {"my-gpu.yaml": _h100_copy("my-gpu", "[fast]")})
    sk.load_gpu("fast", spec_path=folder)
    (folder / "my-gpu.yaml").write_text(_h100_copy("my-gpu", "[slow]"))
    return sk.load_gpu("fast", spec_path=folder)


add("spec-cache: model_copy does not touch the cache", _copy_is_private, None)
add("spec-cache: deepcopy, pickle and copy round-trip", _round_trips, None)
add("spec-cache: a rewrite with the same size and mtime is reloaded", _reloaded, None)
add("spec-cache: a rewrite that breaks the file is refused", _rewrite("cache break", "bandwidth_tb_s: 4.8 ",
                                                                      "bandwidth_tb_s: 0480"), SpecError,
    "memory.bandwidth_tb_s", "0480")
add("spec-cache: a file replaced by rename is reloaded", _replaced_by_rename, None)
add("spec-cache: a deleted file is an error, not the cached spec", _deleted, SpecError, "no such spec file")
add("spec-cache: an alias removed from a file no longer resolves", _alias_moved, UnknownGPUError, "'fast'")
add("spec-cache: clear_cache, then load", lambda: (sk.clear_cache(), sk.load_gpu("h200").peak_flops("bf16")), None)


# ---- spec-os: OS errors on spec paths -------------------------------------------------------------


def _with_env(value: str, call: Callable[[], Any]) -> Any:
    """Run ``call`` with $SOLKIT_SPEC_PATH set to ``value`` (restored after)."""
    with mock.patch.dict(os.environ, {"SOLKIT_SPEC_PATH": value}):
        return call()


def _denied(path_tag: str) -> Callable[[], Any]:
    """EACCES simulated on opening (root reads any file): the loader's own opener, not os.open."""

    def call() -> Any:
        path = _write(path_tag, RAW)
        from solkit.hardware import loader

        def refuse(file: Any, *args: Any, **kwargs: Any) -> Any:
            raise PermissionError(13, "Permission denied", str(file))

        with mock.patch.object(loader, "open_regular", refuse):
            return sk.load_gpu(path)

    return call


def _loop_path() -> Any:
    folder = _fresh("os loop")
    os.symlink("b.yaml", folder / "a.yaml")
    os.symlink("a.yaml", folder / "b.yaml")
    return sk.load_gpu(folder / "a.yaml")


add("spec-os: a file name too long", lambda: sk.load_gpu(str(ROOT / ("x" * 300 + ".yaml"))), SpecError, "ENAMETOOLONG")
add("spec-os: a path too long", lambda: sk.load_gpu("/" + "d/" * 3000 + "x.yaml"), SpecError, "ENAMETOOLONG")
add("spec-os: a GPU name too long", lambda: sk.load_gpu("h" * 5000), UnknownGPUError, "not a known GPU")
add("spec-os: a symlink loop", _loop_path, SpecError, "a.yaml", "ELOOP")
add("spec-os: permission denied (simulated)", _denied("os denied"), SpecError, "h200-sxm.yaml", "EACCES")
add("spec-os: a folder where a spec file belongs", lambda: sk.load_gpu(_fresh("os dir")), SpecError, "is a folder")
def _folder_named_yaml() -> Any:
    path = _fresh("os dir yaml") / "sub.yaml"
    path.mkdir()
    return sk.load_gpu(str(path))


add("spec-os: a folder named x.yaml", _folder_named_yaml, SpecError, "sub.yaml", "is a folder")
add("spec-os: a spec file where a folder belongs", lambda: sk.load_gpu("h200", spec_path=_write("os file dir", RAW)),
    SpecError, "spec folder", "is a file, not a folder")
add("spec-os: a path through a file (ENOTDIR)", lambda: sk.load_gpu(_write("os notdir", RAW) / "x.yaml"),
    SpecError, "ENOTDIR")
add("spec-os: a NUL byte in a path", lambda: sk.load_gpu("/tmp/a\x00b.yaml"), SpecError, "null byte", "a\\x00b.yaml")
add("spec-os: a NUL byte in a folder", lambda: sk.load_gpu("h200", spec_path="/tmp/a\x00b"), SpecError, "spec folder",
    "null byte")
add("spec-os: a NUL byte in a name", lambda: sk.load_gpu("h200\x00"), UnknownGPUError, "not a known GPU")
add("spec-os: a missing file", lambda: sk.load_gpu(ROOT / "missing" / "gone.yaml"), SpecError, "gone.yaml",
    "no such spec file")
add("spec-os: a missing spec folder", lambda: sk.load_gpu("h200", spec_path=ROOT / "no-such-folder"), SpecError,
    "no-such-folder", "does not exist")
add("spec-os: /dev/null as a spec file", lambda: load_spec_file("/dev/null"), SpecError, "/dev/null",
    "not a regular file")
add("spec-os: a surrogate in a path", lambda: sk.load_gpu(str(ROOT / "\udcff.yaml")), SpecError, "no such spec file")
add("spec-os: a bytes path loads", lambda: load_spec_file(os.fsencode(_write("os bytes", RAW))), None)
add("spec-os: a number for a path", lambda: load_spec_file(42), ArgumentTypeError, "path", "42")
add("spec-os: a number for spec_path", lambda: sk.load_gpu("h200", spec_path=42), ArgumentTypeError, "spec_path")
add("spec-os: a bad $SOLKIT_SPEC_PATH", lambda: _with_env(str(ROOT / "no-env-folder"), sk.list_gpus), SpecError,
    "no-env-folder", "does not exist")
add("spec-os: $SOLKIT_SPEC_PATH with a stray file still loads h200",
    lambda: _with_env(str(_stray("os env stray", lambda d: (d / "README.md").write_text("x"))), lambda: sk.load_gpu("h200")),
    None)
if not ROOT_USER:
    def _chmod_denied() -> Any:
        path = _write("os chmod", RAW)
        os.chmod(path, 0)
        return sk.load_gpu(path)
    add("spec-os: permission denied (chmod 000)", _chmod_denied, SpecError, "h200-sxm.yaml", "EACCES")


# ---- spec-python: building a GPU in Python -----------------------------------------------------------


def _data(*edits: tuple[tuple, Any]) -> dict:
    return _edited(*edits)


add("spec-python: GPU(...) with a text bandwidth", lambda: sk.GPU(**_data((("memory", "bandwidth_tb_s"), "fast"))),
    SpecError, "GPU: field 'memory.bandwidth_tb_s'", "'fast'")
add("spec-python: GPU(...) with a GB/s bandwidth", lambda: sk.GPU(**_data((("memory", "bandwidth_tb_s"), 4800))),
    SpecError, "GPU 'h200-sxm'", "memory.bandwidth_tb_s", "4800")
add("spec-python: model_validate with an efficiency of 70",
    lambda: GPU.model_validate(_data((("measured", "compute_efficiency", "gemm"), 70))), SpecError,
    "measured.compute_efficiency.gemm", "70")
add("spec-python: model_validate_json with a negative figure",
    lambda: GPU.model_validate_json(json.dumps(_data((("chip", "tdp_w"), -700)), default=str)), SpecError,
    "chip.tdp_w", "-700")
add("spec-python: model_validate_strings", lambda: GPU.model_validate_strings({"name": "x"}), SpecError, "full_name")
add("spec-python: model_validate of text", lambda: GPU.model_validate("h200"), SpecError, "GPU", "'h200'")
add("spec-python: model_validate naming a file", lambda: GPU.model_validate({}, context={"spec_file": "mine.yaml"}),
    SpecError, "mine.yaml", "field 'name'")
add("spec-python: GPU() with no fields", lambda: sk.GPU(), SpecError, "GPU", "Field required")
add("spec-python: GPU(...) with an unknown keyword", lambda: sk.GPU(**_data(), speed="fast"), SpecError, "speed",
    "Extra inputs")
add("spec-python: GPU with a positional argument", lambda: sk.GPU("h200"), ArgumentTypeError, "keywords")
add("spec-python: Chip(...) directly", lambda: Chip(compute_units=0, compute_unit_name="SM", boost_clock_mhz=1,
                                                    l2_cache_mb=1, tdp_w=1, source="s"), SpecError, "Chip",
    "compute_units")
add("spec-python: Peak(...) with fp7", lambda: Peak(precision="fp7", unit="matrix", tflops=1, source="s"), SpecError,
    "Peak", "precision")
add("spec-python: a sparse figure as dense, in Python",
    lambda: sk.GPU(**_data((("peaks", 4, "tflops"), 1979), (("measured",), KeyError))), SpecError, "peaks.4",
    "FLOP/clock/SM")
add("spec-python: a half-rate part warns", lambda: sk.GPU(**_data((("peaks", 4, "tflops"), 494.7),
                                                                  (("peaks", 4, "sparse_tflops"), 989.4),
                                                                  (("measured",), KeyError))),
    SpecConsistencyWarning, "peaks.4.tflops", "implies 1893")
add("spec-python: a valid GPU builds", lambda: sk.GPU(**_data()).peak_flops("bf16"), None)
add("spec-python: a valid GPU validates", lambda: GPU.model_validate(_data()).memory_bandwidth, None)
