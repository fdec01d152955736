"""The notebook views of GPU, Roofline, Workload, Profile, Transformer and MemoryFootprint: an HTML table with units and
a ``to_frame()`` of one row per natural item, integers as integers; reprs that choose their unit and name what they
count. Expected values are hand arithmetic or published figures (H200 datasheet, GPT-2's parameter count)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

import solkit as sk  # noqa: E402
from solkit import models, ops  # noqa: E402
from solkit.models.footprint import MemoryFootprint  # noqa: E402

DECODE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "llama_decode.json.gz"
GB, TB = 1e9, 1e12


# ---- MemoryFootprint ------------------------------------------------------------------------------------------------

def _footprint(**fit: object) -> MemoryFootprint:
    """1 TB weights + 500 GB gradients + 90 GB activations = 1.59 TB."""
    return MemoryFootprint(1.0 * TB, 500 * GB, 0.0, 90 * GB, 0.0, 1.59 * TB, **fit)  # type: ignore[arg-type]


def test_memory_repr_chooses_its_unit():
    """1.59e12 bytes read '1.59 TB' (never '1.59e+03 GB'); 0 bytes '0 B'; the capacity '141 GB'."""
    text = repr(_footprint(fits=False, max_batch=0, capacity=141 * GB))
    assert text == ("MemoryFootprint(weights 1 TB, gradients 500 GB, optimizer_states 0 B, activations 90 GB, "
                    "kv_cache 0 B, total 1.59 TB; does NOT fit in 141 GB (largest batch 0))")
    assert "e+" not in repr(models.preset("llama3-8b").memory(batch=64, seq=8192, training=True))


def test_memory_html_has_units_and_shares():
    """A row per kind with its bytes and share: weights 1 TB / 1.59 TB = 62.9%, activations 90 / 1590 = 5.7%."""
    html = _footprint(fits=True, max_batch=3, capacity=2 * TB)._repr_html_()
    assert "<td>weights</td><td>1 TB</td><td>62.9%</td>" in html
    assert "<td>activations</td><td>90 GB</td><td>5.7%</td>" in html
    assert "fits in 2 TB, up to batch 3" in html


def test_memory_frame_is_one_row_of_whole_bytes():
    """One row, every kind in int64 bytes (1.59 TB = 1,590,000,000,000 B), fits a bool, max_batch an integer."""
    frame = _footprint(fits=False, max_batch=0, capacity=141 * GB).to_frame()
    assert len(frame) == 1
    assert frame["total_bytes"].tolist() == [1_590_000_000_000] and frame["total_bytes"].dtype == np.int64
    assert frame["gradients_bytes"].tolist() == [500_000_000_000]
    assert frame["capacity_bytes"].tolist() == [141_000_000_000]
    assert frame["fits"].dtype == bool and frame["max_batch"].tolist() == [0]


def test_memory_frame_of_a_sweep_has_a_row_per_point():
    """A batch sweep of 3 points: 3 rows; the weights alike in each, activations and KV cache growing with the batch
    (batch 8 holds 8x batch 1's)."""
    f = models.preset("gpt2").memory(batch=np.array([1, 2, 8]), seq=1024)
    frame = f.to_frame()
    assert len(frame) == 3 and frame["weights_bytes"].nunique() == 1
    kv = frame["kv_cache_bytes"].to_numpy()
    assert kv[2] == 8 * kv[0] and kv[1] == 2 * kv[0]
    assert "a sweep of shape (3,)" in f._repr_html_()


# ---- Transformer -----------------------------------------------------------------------------------------------------

def test_transformer_frame_is_one_row_with_resolved_integers():
    """GPT-2: 12 layers, d_model 768, head_dim 768 / 12 = 64, ffn 4 x 768 = 3072, 124,439,808 parameters (Hugging
    Face's gpt2 model card); integer fields int64, an unset optional integer <NA>."""
    frame = models.preset("gpt2").to_frame()
    assert len(frame) == 1
    row = frame.iloc[0]
    assert (row["layers"], row["head_dim"], row["ffn"], row["kv_heads"], row["params"]) == (12, 64, 3072, 12, 124_439_808)
    for column in ("layers", "d_model", "heads", "head_dim", "ffn", "vocab", "params"):
        assert frame[column].dtype == np.int64, column
    assert frame["sliding_window"].dtype == pd.Int64Dtype() and frame["sliding_window"].isna().all()
    both = pd.concat([models.preset("gpt2").to_frame(), models.preset("llama3-8b").to_frame()])
    assert both["name"].tolist() == ["gpt2", "llama3-8b"] and both["params"].dtype == np.int64


def test_transformer_html_lists_fields_and_parameters():
    """The fields as the closed forms take them and the parameters by part, summing to 124,439,808 (124.4 M)."""
    html = models.preset("gpt2")._repr_html_()
    assert "<td>head_dim</td><td>64</td>" in html and "<td>ffn</td><td>3072</td>" in html
    assert "<td>total</td><td>124,439,808</td>" in html and "parameters (124.4 M)" in html
    assert "top_k" not in html  # no experts: the routing fields are left out


# ---- Workload and Roofline -------------------------------------------------------------------------------------------

def test_reprs_name_distinct_kernels_and_launches():
    """A matmul repeated 4 times is 1 distinct kernel and 4 launches; naive attention 3 and 3 (S, softmax, PV)."""
    four = ops.matmul(64, 32, 16).repeat(4)
    assert "1 distinct kernel, 4 launches" in repr(four)
    assert repr(sk.roofline(four, "h200")).endswith("1 distinct kernel, 4 launches)")
    naive = ops.attention(1, 2, 64, impl="naive")
    assert "3 distinct kernels, 3 launches" in repr(naive)
    assert "3 distinct kernels, 3 launches" in repr(sk.roofline(naive, "h200"))


def test_workload_frame_rows_are_distinct_kernels_summed_over_launches():
    """matmul m=64, n=32, k=16 bf16 run 3 times: one row, count 3; per launch 2*64*32*16 = 65,536 FLOPs, reads
    (64*16 + 16*32)*2 = 3,072 B and writes 64*32*2 = 4,096 B, so the row holds 196,608 FLOPs, 9,216 B read and
    12,288 B written."""
    frame = ops.matmul(64, 32, 16).repeat(3).to_frame()
    assert len(frame) == 1 and frame["count"].tolist() == [3] and frame["count"].dtype == np.int64
    row = frame.iloc[0]
    assert (row["model_flops"], row["bytes_read"], row["bytes_written"], row["bytes"]) == (196_608, 9_216, 12_288, 21_504)


def test_workload_frame_columns_sum_to_the_workload():
    """A GPT-2 forward's frame: its columns sum to the workload's figures, its counts to its launches."""
    w = models.preset("gpt2").forward(batch=2, seq=256)
    frame = w.to_frame()
    assert len(frame) == len(w.counted) and frame["count"].sum() == len(w)
    for column, figure in (("model_flops", w.flops), ("executed_flops", w.executed_flops), ("bytes_read", w.bytes_read),
                           ("bytes_written", w.bytes_written), ("bytes", w.bytes)):
        assert frame[column].sum() == pytest.approx(float(figure), rel=1e-12), column


def test_workload_frame_of_a_sweep_has_a_row_per_kernel_and_point():
    """matmul over m = 64, 128 (n 32, k 16): points 0 and 1 with 2*64*32*16 = 65,536 and 131,072 FLOPs."""
    frame = ops.matmul(np.array([64, 128]), 32, 16).to_frame()
    assert frame["point"].tolist() == [0, 1] and frame["model_flops"].tolist() == [65_536, 131_072]


# ---- GPU and Profile -------------------------------------------------------------------------------------------------

def test_gpu_frame_has_a_row_per_peak():
    """H200: bf16 matrix 989.4 TFLOP/s dense, 1,979 sparse (datasheet), ridge 989.4 / 4.8 = 206.125 FLOP/B."""
    gpu = sk.load_gpu("h200")
    frame = gpu.to_frame()
    assert len(frame) == len(gpu.peaks) and set(frame["gpu"]) == {"h200-sxm"}
    bf16 = frame[(frame["precision"] == "bf16") & (frame["unit"] == "matrix")].iloc[0]
    assert bf16["peak_flops"] == pytest.approx(989.4e12)
    assert bf16["sparse_peak_flops"] == pytest.approx(1979e12)
    assert bf16["ridge_flop_per_byte"] == pytest.approx(206.125)
    vector = frame[(frame["precision"] == "bf16") & (frame["unit"] == "vector")].iloc[0]
    assert np.isnan(vector["sparse_peak_flops"])  # no sparse vector rate is stated


@pytest.mark.parametrize("make", [
    lambda: sk.load_gpu("h200"),
    lambda: sk.roofline(ops.matmul(1024, 1024, 1024), "h200"),
    lambda: ops.layernorm(1024, 1024),
    lambda: sk.load_profile(DECODE, gpu="h200"),
    lambda: models.preset("gpt2"),
    lambda: models.preset("gpt2").memory(batch=2, gpu="h200"),
], ids=["GPU", "Roofline", "Workload", "Profile", "Transformer", "MemoryFootprint"])
def test_every_result_has_an_html_table_and_a_frame(make):
    """Each of the six shows as an HTML table and gives a non-empty DataFrame."""
    obj = make()
    assert "<table" in obj._repr_html_()
    frame = obj.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) >= 1
