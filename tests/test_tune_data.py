"""The committed H200 measurements of solkit.tune: their records, and the figures docs/tune.md claims from them."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from solkit import tune
from solkit.calibration.manifest import manifest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
FILES = {"fit": "h200_tune_fit_seed3201.json", "validation": "h200_tune_validation_seed3202.json",
         "test": "h200_tune_test_seed3205.json", "spent": "h200_tune_test_seed3203.json",
         "spent2": "h200_tune_test_seed3204.json", "test2": "h200_tune_test_seed3206.json"}
#: the set each file holds (the spent files were measured as test sets)
SET = {"fit": "fit", "validation": "validation", "test": "test", "spent": "test", "spent2": "test", "test2": "test"}
KERNEL = {"matmul": "triton_matmul", "layernorm": "triton_layernorm", "attention": "triton_flash_attention",
          "softmax": "triton_softmax"}


def _load(role: str) -> dict:
    return json.loads((DATA / FILES[role]).read_text())


def _shape(kernel: str, row: dict) -> dict:
    if kernel == "matmul":
        return {"m": row["m"], "n": row["n"], "k": row["k"]}
    if kernel in ("layernorm", "softmax"):
        return {"rows": row["rows"], "cols": row["cols"]}
    return {"batch": row["batch"], "heads": row["heads"], "seq_q": row["seq"], "head_dim": row["head_dim"],
            "causal": row["causal"]}


def _ranks(x: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(x)).astype(float)


def _scores(predicted: np.ndarray, measured: np.ndarray) -> tuple[float, float, float]:
    """(measured time of the predicted best / measured best, the predicted best quarter's best / measured best,
    Spearman's rank correlation), over the configs that ran."""
    ok = np.isfinite(measured)
    p, m = predicted[ok], measured[ok]
    order = np.argsort(p, kind="stable")
    quarter = order[: math.ceil(len(p) / 4)]
    return m[order[0]] / m.min(), m[quarter].min() / m.min(), float(np.corrcoef(_ranks(p), _ranks(m))[0, 1])


def _summary(role: str, kernel: str) -> tuple[int, int, int, float]:
    """(shapes, predicted best within 10%, best quarter within 5%, median Spearman) of solkit.tune on a set."""
    block = _load(role)["sets"][SET[role]][kernel]
    top = quarter = 0
    rho = []
    for row in block["shapes"]:
        measured = np.array([np.nan if s is None else s for s in row["seconds"]])
        r = tune.rank(KERNEL[kernel], block["configs"], gpu="h200", **_shape(kernel, row))
        timed = np.array([not (e or "").startswith("not timed") for e in row["errors"]])  # SPILL_LIMIT's (seed 3206)
        # the launch checks agree with the GPU where it was asked
        assert np.array_equal(np.isnan(r.seconds)[timed], np.isnan(measured)[timed])
        t, q, s = _scores(r.seconds, measured)
        top, quarter = top + (t <= 1.10), quarter + (q <= 1.05)
        rho.append(s)
    return len(block["shapes"]), top, quarter, float(np.median(rho))


def test_the_files_record_their_protocol():
    """Each file names its set, seed, script and stack; each test draw names the commit it was measured after."""
    for role, name in FILES.items():
        raw = _load(role)
        proto, env = raw["protocol"], raw["environment"]
        assert list(raw["sets"]) == [SET[role]] and proto["script"] == "benchmarks/tune/measure_triton.py"
        assert proto["seeds"][SET[role]] == manifest().entry(name).seed
        assert (env["gpu_name"], env["triton_version"], env["torch_version"]) == ("NVIDIA H200", "3.6.0",
                                                                                  "2.11.0+cu130")
    # seeds 3205 (test) and 3206 (test2) were measured as frozen tests and spent since on the GEMM's top-1 diagnosis
    for role, after, now in (("test", "4b57715", "spent"), ("spent", "58b55ce", "spent"), ("spent2", "3cc53f3", "spent"),
                             ("test2", "f26b086", "spent")):
        assert _load(role)["protocol"]["after"] == manifest().entry(FILES[role]).after == after
        assert manifest().entry(FILES[role]).role == now
    assert _load("test2")["protocol"]["spill_limit"] == 1024  # measure_triton.py 1.1
    assert manifest().entry(FILES["fit"]).fits == ("tune",)


def test_every_kernel_was_checked_against_torch():
    """One config per shape was compared with torch in fp32: bf16 outputs within 3e-3 (relative Frobenius)."""
    for role in FILES:
        for block in _load(role)["sets"][SET[role]].values():
            assert all(row["check"]["rel_err"] < 3e-3 for row in block["shapes"])


# docs/tune.md, "Accuracy on the H200": (shapes, best within 10%, quarter within 5%, median Spearman) per set, under
# the shipped model (frozen at 4b57715 before seed 3205 was measured; Triton's warp grid since changes none of them);
# "test2" is seed 3206 (GEMM only), measured after f26b086 with the same model; "spent" is seed 3203 and "spent2" seed 3204,
# the earlier test draws, scored under the model of now
CLAIMS = {
    ("test2", "matmul"): (40, 21, 38, 0.847),
    ("test", "matmul"): (40, 23, 40, 0.871), ("test", "layernorm"): (16, 9, 16, 0.828),
    ("test", "attention"): (14, 10, 12, 0.798), ("test", "softmax"): (12, 6, 10, 0.700),
    ("spent2", "matmul"): (24, 21, 23, 0.876), ("spent2", "layernorm"): (12, 7, 12, 0.733),
    ("spent2", "attention"): (10, 7, 10, 0.728),
    ("spent", "matmul"): (40, 22, 40, 0.882), ("spent", "layernorm"): (24, 16, 23, 0.803),
    ("spent", "attention"): (20, 15, 20, 0.752),
    ("validation", "matmul"): (16, 12, 16, 0.841), ("validation", "layernorm"): (12, 6, 12, 0.773),
    ("validation", "attention"): (10, 5, 10, 0.768),
    ("fit", "matmul"): (24, 18, 24, 0.841), ("fit", "layernorm"): (18, 15, 17, 0.783),
    ("fit", "attention"): (16, 15, 15, 0.743),
}


@pytest.mark.parametrize("role, kernel", list(CLAIMS))
def test_docs_figures(role, kernel):
    """The figures docs/tune.md prints for solkit.tune, recomputed from the committed data and the shipped spec."""
    shapes, top, quarter, rho = CLAIMS[role, kernel]
    got = _summary(role, kernel)
    assert got[:3] == (shapes, top, quarter) and round(got[3], 3) == rho


def _triton_model():
    spec = importlib.util.spec_from_file_location("triton_perf_model", ROOT / "benchmarks/tune/triton_perf_model.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # its dataclass looks its module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_docs_figures_of_tritons_model():
    """Triton's analytic GEMM model (the port) on the frozen test (seed 3205): 16 of 40 best within 10%, 34 of 40
    quarters within 5%, median Spearman 0.466; on the spent seed 3204: 5 of 24, 19 of 24, 0.482; on the spent seed
    3203: 9 of 40, 34 of 40, 0.385; on the frozen seed 3206: 15 of 40, 33 of 40, 0.427; as docs/tune.md prints."""
    tpm = _triton_model()
    for role, claim in (("test", (16, 34, 0.466)), ("spent2", (5, 19, 0.482)), ("spent", (9, 34, 0.385)),
                        ("test2", (15, 33, 0.427))):
        assert _tritons_scores(tpm, _load(role)) == claim


def _tritons_scores(tpm, raw: dict) -> tuple[int, int, float]:
    """(best within 10%, quarter within 5%, median Spearman) of Triton's model on a file's GEMM shapes."""
    env, props = raw["environment"], raw["environment"]["triton_device_properties"]
    dev = tpm.Device(props["multiprocessor_count"], float(env["nvidia_smi"].split(",")[2].split()[0]) * 1e3,
                     props["mem_clock_rate"], props["mem_bus_width"], (9, 0), props["max_shared_mem"])
    block = raw["sets"]["test"]["matmul"]
    top = quarter = 0
    rho = []
    for row in block["shapes"]:
        measured = np.array([np.nan if s is None else s for s in row["seconds"]])
        predicted = np.array([tpm.estimate_matmul_time(dev, c["num_warps"], c["num_stages"], row["m"], row["n"],
                                                       row["k"], c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], 1)
                              for c in block["configs"]])
        t, q, s = _scores(predicted, measured)
        top, quarter = top + (t <= 1.10), quarter + (q <= 1.05)
        rho.append(s)
    return int(top), int(quarter), round(float(np.median(rho)), 3)


def test_docs_spread_and_time_saved():
    """docs/tune.md: GEMM configs span 2.1x to 193x per test shape (seed 3205); the predicted quarter's share of the
    measured benchmarking time is 11%, 17%, 20% and 26% (89%, 83%, 80%, 74% saved, mean over shapes: GEMM, LayerNorm,
    attention, softmax); the best GEMM config measured 0.91x to 2.6x cuBLAS's time, median 1.27x."""
    raw = _load("test")["sets"]["test"]
    saved = {}
    for kernel, block in raw.items():
        shares = []
        for row in block["shapes"]:
            measured = np.array([np.nan if s is None else s for s in row["seconds"]])
            r = tune.rank(KERNEL[kernel], block["configs"], gpu="h200", **_shape(kernel, row))
            shares.append(np.nansum(measured[r.top(0.25)]) / np.nansum(measured))
        saved[kernel] = round(1 - float(np.mean(shares)), 2)
    assert saved == {"matmul": 0.89, "layernorm": 0.83, "attention": 0.80, "softmax": 0.74}
    rows = raw["matmul"]["shapes"]
    spread = [np.nanmax(np.array(r["seconds"], float)) / np.nanmin(np.array(r["seconds"], float)) for r in rows]
    assert (round(min(spread), 1), round(max(spread))) == (2.1, 193)
    vs_cublas = [np.nanmin(np.array(r["seconds"], float)) / r["library_seconds"] for r in rows]
    assert (round(min(vs_cublas), 2), round(max(vs_cublas), 1), round(float(np.median(vs_cublas)), 2)) == (0.91, 2.6,
                                                                                                          1.27)


def test_docs_seed_3206_spread_and_time_saved():
    """docs/tune.md, seed 3206 (GEMM): configs span 1.7x to 49x per shape over those timed; timing the predicted
    best quarter of the configs that ran saves 87% of their benchmarking time (mean over shapes, as evaluate.py
    scores it); the best measured 0.62x to 3.0x cuBLAS's, median 1.26x; 55 of the 1,440 (shape, config) pairs were
    not timed (SPILL_LIMIT)."""
    block = _load("test2")["sets"]["test"]["matmul"]
    shares, spread, vs_cublas = [], [], []
    for row in block["shapes"]:
        measured = np.array([np.nan if s is None else s for s in row["seconds"]])
        r = tune.rank("triton_matmul", block["configs"], gpu="h200", **_shape("matmul", row))
        ran = np.isfinite(measured)
        quarter = np.argsort(r.seconds[ran], kind="stable")[: math.ceil(ran.sum() / 4)]
        shares.append(measured[ran][quarter].sum() / measured[ran].sum())
        spread.append(np.nanmax(measured) / np.nanmin(measured))
        vs_cublas.append(np.nanmin(measured) / row["library_seconds"])
    assert round(1 - float(np.mean(shares)), 2) == 0.87
    assert (round(min(spread), 1), round(max(spread))) == (1.7, 49)
    assert (round(min(vs_cublas), 2), round(max(vs_cublas), 1), round(float(np.median(vs_cublas)), 2)) == (0.62, 3.0,
                                                                                                          1.26)
    assert sum((e or "").startswith("not timed") for row in block["shapes"] for e in row["errors"]) == 55


def test_docs_gemm_misses():
    """docs/tune.md, "Why the GEMM's predicted best misses": over the six GEMM files (184 shapes) the predicted best
    is more than 10% slower than the measured best on 67 (fit 6 of 24, validation 4 of 16, seeds 3203-3206 18 of 40,
    3 of 24, 17 of 40, 19 of 40); on 58 of the 67 it holds fewer programs an SM than the measured best, on 56 more
    shared memory, on 42 a larger BLOCK_K, on 42 a larger tile, and on 50 it runs as many waves; 36 of the 72 shapes
    whose n or k is not a multiple of 16 miss, 31 of the 112 others; the measured best is the model's second or third
    on 32 of the 67 and tied with its predicted best's time on 2; its predicted time is within 5% of the predicted
    best's on 11, 5-20% on 33, beyond 20% on 23."""
    per, counts = {}, {"occupancy": 0, "smem": 0, "block_k": 0, "tile": 0, "waves": 0, "rank_2_3": 0, "tied": 0}
    near = [0, 0, 0]  # the measured best's predicted time over the predicted best's: within 1.05, 1.05-1.20, beyond
    unaligned = {True: [0, 0], False: [0, 0]}  # n or k not a multiple of 16: [shapes, misses]
    for role in ("fit", "validation", "spent", "spent2", "test", "test2"):
        block = _load(role)["sets"][SET[role]]["matmul"]
        per[role] = 0
        for row in block["shapes"]:
            measured = np.array([np.nan if s is None else s for s in row["seconds"]])
            r = tune.rank("triton_matmul", block["configs"], gpu="h200", **_shape("matmul", row))
            ran = np.flatnonzero(np.isfinite(measured))
            a = ran[np.argmin(r.seconds[ran])]  # the predicted best of those that ran
            b = ran[np.argmin(measured[ran])]
            odd = bool(row["n"] % 16 or row["k"] % 16)
            unaligned[odd][0] += 1
            if measured[a] / measured[b] <= 1.10:
                continue
            per[role] += 1
            unaligned[odd][1] += 1
            ca, cb, part = r.configs[a], r.configs[b], r.parts
            counts["occupancy"] += int(part["occupancy"][a] < part["occupancy"][b])
            counts["smem"] += int(part["smem"][a] > part["smem"][b])
            counts["block_k"] += int(ca["BLOCK_K"] > cb["BLOCK_K"])
            counts["tile"] += int(ca["BLOCK_M"] * ca["BLOCK_N"] > cb["BLOCK_M"] * cb["BLOCK_N"])
            counts["waves"] += int(part["waves"][a] == part["waves"][b])
            rank = int(np.sum(r.seconds[ran] < r.seconds[b])) + 1  # 1: tied with the predicted best's time
            counts["rank_2_3"] += int(2 <= rank <= 3)
            counts["tied"] += int(rank == 1)
            ratio = r.seconds[b] / r.seconds[a]
            near[0 if ratio <= 1.05 else 1 if ratio <= 1.20 else 2] += 1
    # the figures docs/tune.md quotes (the diagnosis's own counts: no hand arithmetic reaches a model's ranking of 184
    # shapes), read off the page so that the page and this computation cannot drift apart
    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "tune.md").read_text().split())
    total, odd, aligned = sum(per.values()), unaligned[True], unaligned[False]
    assert (f"on {total}: fit {per['fit']} of 24, validation {per['validation']} of 16, seeds 3203 to 3206 "
            f"{per['spent']} of 40, {per['spent2']} of 24, {per['test']} of 40 and {per['test2']} of 40") in page
    assert (f"holds fewer programs an SM on {counts['occupancy']} of the {total} (as many on 6), more shared memory on "
            f"{counts['smem']}, a larger BLOCK_K on {counts['block_k']} and a larger BLOCK_M x BLOCK_N tile on "
            f"{counts['tile']}, and runs as many waves on {counts['waves']}") in page
    assert f"on {odd[1]} of the {total}: {odd[1]} of those {odd[0]} shapes miss, {aligned[1]} of the {aligned[0]} others" in page
    assert (f"second or third on {counts['rank_2_3']} of the {total} (on {counts['tied']} more its predicted time ties "
            f"the predicted best's); its predicted time is within 5% of the predicted best's on {near[0]}, 5-20% on "
            f"{near[1]}, beyond 20% on {near[2]}") in page
    assert per == {"fit": 6, "validation": 4, "spent": 18, "spent2": 3, "test": 17, "test2": 19}  # as first counted
    assert counts == {"occupancy": 58, "smem": 56, "block_k": 42, "tile": 42, "waves": 50, "rank_2_3": 32, "tied": 2}
    assert near == [11, 33, 23]
    assert unaligned == {True: [72, 36], False: [112, 31]}
