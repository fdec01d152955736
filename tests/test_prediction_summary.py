"""A whole program's Prediction reads as a summary (groups, top kernels, what it assumes); the detail one call away."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import solkit as sk
from solkit import comm, models, ops
from solkit.errors import OptionError
from solkit.prediction.result import SHORT_KERNELS, SUMMARY_GROUPS, SUMMARY_KERNELS

H200_BF16 = 989.4e12  # dense bf16 matrix peak of the H200 SXM (NVIDIA H200 datasheet)
H200_BANDWIDTH = 4.8e12  # bytes/s (NVIDIA H200 datasheet)
SIZES = (1024, 1536, 2048, 2560, 3072, 3584, 4096, 4608, 5120)  # nine square GEMMs, all compute-bound on the H200


def _program():
    """Nine distinct square GEMMs (the i-th run i+1 times: 45 launches) and two LayerNorms (once each): 11 kernels."""
    parts = tuple((ops.matmul(n, n, n), i + 1) for i, n in enumerate(SIZES))
    norms = ((ops.layernorm(8192, 4096), 1), (ops.layernorm(4096, 4096), 1))
    return sk.Workload.of("eleven", parts + norms)


def _quiet(w, gpu="h200"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sk.predict(w, gpu)


@pytest.fixture(scope="module")
def gpt2_step():
    return models.training_step(models.preset("gpt2").forward(batch=8, seq=1024))


def test_groups_by_hand():
    """matmul: 1+2+...+9 = 45 launches of 9 distinct kernels, T_SOL sum (i+1)*2*n^3 / 989.4e12 = 6.052 ms; layernorm:
    2 launches, T_SOL ((2*8192*4096 + 2*4096) + (2*4096*4096 + 2*4096))*2 B / 4.8 TB/s = 41.95 us."""
    p = _quiet(_program())
    groups = {g.group: g for g in p.groups}
    assert set(groups) == {"matmul", "layernorm"}
    mm, ln = groups["matmul"], groups["layernorm"]
    assert (mm.launches, mm.kernels, ln.launches, ln.kernels) == (45.0, 9, 2.0, 2)  # 45 = 9*10/2
    t_mm = math.fsum((i + 1) * 2 * n**3 / H200_BF16 for i, n in enumerate(SIZES))  # 5.988e12 FLOP: 6.052 ms
    assert mm.t_sol == pytest.approx(t_mm, rel=1e-9)
    ln_bytes = (2 * 8192 * 4096 + 2 * 4096) * 2 + (2 * 4096 * 4096 + 2 * 4096) * 2  # 201,359,360 B
    assert ln.t_sol == pytest.approx(ln_bytes / H200_BANDWIDTH, rel=1e-9)  # 41.95 us
    # predicted: each kernel's predicted time per launch times its count, summed over the group
    per = [float(k.seconds) * k.count for k in p.kernels]
    assert mm.predicted == pytest.approx(math.fsum(per[:9])) and ln.predicted == pytest.approx(math.fsum(per[9:]))
    assert mm.share == pytest.approx(mm.predicted / math.fsum(per)) and mm.share + ln.share == pytest.approx(1.0)
    assert [g.group for g in p.groups] == sorted(groups, key=lambda name: -groups[name].predicted)


def test_launches_and_distinct_kernels_are_named_apart():
    """45 + 2 = 47 launches of 11 distinct kernels: both counts, each named, in the summary's pace line."""
    p = _quiet(_program())
    assert (p.launches, p.distinct_kernels) == (47.0, 11)
    assert "47 launches of 11 distinct kernels" in repr(p)


def test_a_training_step_reads_in_at_most_25_lines(gpt2_step):
    """GPT-2's step (over 100 distinct kernels, 24 op groups): a summary of at most 25 lines, not a wall of kernels."""
    p = _quiet(gpt2_step)
    text = repr(p)
    lines = text.splitlines()
    assert len(lines) <= 25
    launches = math.fsum(count * float(k.launches) for k, count in gpt2_step.counted)
    assert f"{launches:,.0f} launches of {len(gpt2_step.counted)} distinct kernels" in text
    assert lines[0].startswith("Prediction('gpt2 training step' on h200-sxm: ")
    assert lines[1] == p.assumptions
    # the op groups shown: the SUMMARY_GROUPS largest, then the rest in one row whose share completes 100%
    shown = [line.split("  ")[0] for line in lines if line.split("  ")[0] in {g.group for g in p.groups}]
    assert shown == [g.group for g in p.groups[:SUMMARY_GROUPS]]
    rest = len(p.groups) - SUMMARY_GROUPS
    assert any(line.startswith(f"({rest} more groups)") for line in lines)
    # the top kernels by predicted time in all, the slowest first
    assert f"top {SUMMARY_KERNELS} of {len(gpt2_step.counted)} distinct kernels" in text
    slowest = max(p.kernels, key=lambda k: float(k.seconds) * k.count)
    top_row = next(i for i, line in enumerate(lines) if line.startswith("top ")) + 2
    assert lines[top_row].startswith(slowest.name)
    # a warning's note (the misaligned lm_head) is printed, not hidden behind the count
    assert any(line.startswith("note: ") and "not a multiple of 16 bytes" in line for line in lines)


def test_the_limiter_line_adds_to_100_percent(gpt2_step):
    """The kernel time by limiter: each limiter's share of the kernel time, which sum to 1 (rounding aside)."""
    p = _quiet(gpt2_step)
    line = next(line for line in repr(p).splitlines() if line.startswith("kernel time by limiter: "))
    shares = [int(part.rsplit(" ", 1)[1].rstrip("%")) for part in line.split(": ", 1)[1].split(", ")]
    assert abs(sum(shares) - 100) <= len(shares)  # each rounded to a whole percent
    limiters = {k.limiter for k in p.kernels}
    assert {part.rsplit(" ", 1)[0] for part in line.split(": ", 1)[1].split(", ")} == limiters


def test_a_small_prediction_stays_one_line():
    """One GEMM 4096^3: one line as before, T_SOL 2*4096^3 / 989.4e12 = 138.9 us, its limiter named, no summary."""
    p = sk.predict(ops.matmul(4096, 4096, 4096), "h200")
    text = repr(p)
    assert "\n" not in text
    assert text.startswith("Prediction('matmul' on h200-sxm: ") and text.endswith("; matmul: compute)")
    assert "T_SOL 138.9 us" in text  # 2*4096**3 / 989.4e12 = 1.3891e-04 s
    assert "assumes" not in text  # a plain op's line stays as it was; p.assumptions says it
    assert p.distinct_kernels <= SHORT_KERNELS


def test_the_detail_is_one_call_away():
    """table(): every distinct kernel, slowest first; table(3): the three slowest; a bad top is an OptionError."""
    p = _quiet(_program())
    lines = p.table().splitlines()
    assert lines[0].startswith("all 11 distinct kernels") and len(lines) == 2 + 11  # header, rule, 11 rows
    totals = sorted((float(k.seconds) * k.count for k in p.kernels), reverse=True)
    assert [float(line.split()[-3].replace(",", "")) for line in lines[2:]] == pytest.approx(
        [t * 1e6 for t in totals], abs=0.051)  # "us in all" printed to 0.1 us
    three = p.table(3).splitlines()
    assert three[0].startswith("top 3 of 11 distinct kernels") and len(three) == 5
    for bad in (0, -1, 2.5, "3"):
        with pytest.raises(OptionError, match="top must be a positive integer"):
            p.table(bad)
    assert isinstance(OptionError("x"), ValueError)


def test_to_frame_one_row_per_kernel():
    """Eleven rows in program order; counts 1..9 then 1, 1; predicted_s = predicted_each_s * count; T_SOL of the
    4096^3 GEMM 2*4096^3 / 989.4e12 = 138.9 us each, x7 runs in all."""
    w = _program()
    p = _quiet(w)
    f = p.to_frame()
    assert len(f) == 11
    assert list(f["count"]) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1]
    assert f["count"].dtype == np.int64 and f["predicted_s"].dtype == np.float64 and f["misaligned"].dtype == bool
    np.testing.assert_allclose(f["predicted_s"], f["predicted_each_s"] * f["count"], rtol=1e-12)
    row = f.iloc[6]  # n = 4096, the seventh GEMM: 7 runs
    assert row["t_sol_each_s"] == pytest.approx(2 * 4096**3 / H200_BF16, rel=1e-9)
    assert row["t_sol_s"] == pytest.approx(7 * 2 * 4096**3 / H200_BF16, rel=1e-9)
    assert list(f["group"]) == ["matmul"] * 9 + ["layernorm"] * 2
    assert list(f["launches"]) == [float(c) for c in f["count"]]  # one launch per run


def test_to_frame_of_a_sweep_has_a_row_per_point_and_kernel():
    """m = [64, 128, 256]: one kernel, three points: three rows, ``point`` 0..2, T_SOL per point by hand (memory-bound:
    (m*64 + 64*64 + m*64)*2 B / 4.8 TB/s)."""
    m = np.array([64, 128, 256])
    p = sk.predict(ops.matmul(m, 64, 64), "h200")
    f = p.to_frame()
    assert list(f["point"]) == [0, 1, 2] and len(f) == 3
    hand = (m * 64 + 64 * 64 + m * 64) * 2 / H200_BANDWIDTH  # 24,576 / 40,960 / 73,728 B: 5.12 / 8.53 / 15.36 ns
    np.testing.assert_allclose(f["t_sol_each_s"], hand, rtol=1e-9)
    with pytest.raises(OptionError, match="one shape"):
        p.groups


def test_assumptions_of_an_eager_step(gpt2_step):
    """An eager training step includes the CPU's issue time (host_seconds > 0) and is one GPU's."""
    p = _quiet(gpt2_step)
    assert float(p.host_seconds) > 0
    assert p.assumptions.startswith("assumes an eager PyTorch program")
    assert "the CPU's issue time included" in p.assumptions and p.assumptions.endswith("; one GPU")
    assert "\n" not in p.assumptions


def test_assumptions_of_a_fused_program_say_host_time_is_assumed_zero():
    """kernels='fused': host_seconds is 0.0 and the line says a fused engine (CUDA graphs) is assumed."""
    p = _quiet(models.preset("gpt2").forward(batch=1, seq=128, kernels="fused"))
    assert float(p.host_seconds) == 0.0
    assert "a fused engine (CUDA graphs" in p.assumptions and "host time 0 by assumption" in p.assumptions
    assert p.assumptions in repr(p)


def test_assumptions_of_a_split_step_say_per_gpu():
    """dp=2 x tp=2: one GPU's share of a job on 2*2 = 4 GPUs."""
    step = models.training_step(models.preset("llama3-8b").forward(batch=1, seq=256), dp=2, tp=2)
    p = _quiet(step, sk.load_system("hgx-h200"))
    assert "per GPU: one GPU's share of a job on 4 GPUs" in p.assumptions


def test_assumptions_of_plain_kernels_and_collectives():
    """A bare op: no host time, one GPU; an all-reduce over 8 GPUs: each of the 8 takes this time."""
    assert sk.predict(ops.matmul(64, 64, 64), "h200").assumptions.endswith("no host time); one GPU")
    ar = sk.predict(comm.all_reduce(2**30, n_gpus=8), "h200").assumptions
    assert ar.endswith("per GPU: each of the collective's 8 GPUs takes this time")


def test_the_html_view_is_a_summary(gpt2_step):
    """The HTML of a whole step: the groups shown and the top kernels, at most 25 rows in all (190 before)."""
    p = _quiet(gpt2_step)
    page = p._repr_html_()
    assert page.count("<tr>") <= 25
    assert "op group" in page and f"top {SUMMARY_KERNELS} of {len(gpt2_step.counted)} distinct kernels" in page
    assert "the CPU&#x27;s issue time included" in page  # the assumptions, escaped


def test_to_dict_states_the_assumptions():
    """to_dict carries the assumptions, the launches and the distinct kernels beside every kernel's row."""
    d = _quiet(_program()).to_dict()
    assert d["launches"] == 47.0 and d["distinct_kernels"] == 11 and len(d["kernels"]) == 11
    assert d["assumptions"].startswith("assumes kernels back to back")


_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _seconds(text):
    """'4.725 ms' -> 4.725e-3 (the units the summary prints)."""
    number, unit = text.split()
    return float(number.replace(",", "")) * _UNITS[unit]


def _pace_parts(line):
    """The GPU's parts of a pace line: its kernel bodies and the rest, as printed."""
    gpu = line.split("GPU ", 1)[1]
    bodies, rest = gpu.split(" of kernel bodies and ", 1)
    return _seconds(bodies), _seconds(" ".join(rest.split()[:2]))


def test_the_pace_line_adds_up_to_the_total_on_the_host_time_path(gpt2_step):
    """GPT-2's eager step is GPU-bound: the GPU's kernel bodies and the rest (gaps, waits for launches) add up to the
    total (59.5 ms = 54.78 + 4.725 in the review), each printed to 4 digits; the host's time is beside them."""
    p = _quiet(gpt2_step)
    line = repr(p).splitlines()[2]
    assert line.startswith("host ") and line.endswith(": GPU-bound") and "of gaps and waits for launches" in line
    bodies, rest = _pace_parts(line)
    assert bodies == pytest.approx(float(p.kernel_seconds), rel=1e-3)
    assert rest == pytest.approx(float(p.seconds) - float(p.kernel_seconds), rel=1e-3)
    assert bodies + rest == pytest.approx(float(p.seconds), rel=1e-3)  # the parts make the total


def test_the_pace_line_adds_up_without_host_time():
    """A fused program (no host time): kernel bodies + launch floor and gaps = the total."""
    p = _quiet(models.preset("gpt2").forward(batch=1, seq=128, kernels="fused"))
    line = next(line for line in repr(p).splitlines() if line.startswith("GPU "))
    assert "of launch floor and gaps" in line and line.endswith("no host time")
    bodies, rest = _pace_parts(line)
    assert bodies + rest == pytest.approx(float(p.seconds), rel=1e-3)


def _nothing(n):
    """n kernels that move no bytes and do no FLOPs: no kernel time at all."""
    return sk.Workload.of("nothing", tuple((sk.Kernel(f"k{i}", "elementwise", "bf16"), 1) for i in range(n)))


def test_a_program_without_kernel_time_shares_nothing():
    """Nine empty kernels: 0 s of kernel bodies, so the limiter line and every group's share are n/a (not 0%)."""
    p = _quiet(_nothing(9))
    assert float(p.kernel_seconds) == 0.0
    lines = repr(p).splitlines()
    assert "kernel time by limiter: n/a (no kernel time)" in lines
    assert all(g.share is None for g in p.groups)
    rows = [line for line in lines if line.startswith(("k", "(")) and not line.startswith("kernel")]
    group_rows = rows[:SUMMARY_GROUPS + 1]  # seven groups, then "(2 more groups)"
    assert group_rows[-1].startswith("(2 more groups)")
    assert all(row.split()[-1] == "n/a" for row in group_rows) and "0%" not in repr(p)
    assert "n/a" in p._repr_html_() and "0%" not in p._repr_html_()


def _groups(n):
    """n op groups, n + 1 kernels (more than SHORT_KERNELS: a summary): kernel i reads i+1 MB in group op(i mod n), so
    op0 holds 1 + (n+1) MB, the largest, then op(n-1) down to op1 (memory-bound: predicted time grows with bytes)."""
    return sk.Workload.of("groups", tuple((sk.Kernel(f"k{i}", "elementwise", "bf16", bytes_read=(i + 1) * 1e6,
                                                     op=f"op{i % n}"), 1) for i in range(n + 1)))


@pytest.mark.parametrize("n", [SUMMARY_GROUPS + 1, SUMMARY_GROUPS + 3])
def test_text_and_html_show_the_same_groups(n):
    """8 groups: all eight by name (one left is itself, not "(1 more groups)"); 10: op0, op9 .. op4 and "(3 more
    groups)" (op3, op2, op1: 3 launches, their shares summed); the HTML and the text show the same rows."""
    p = _quiet(_groups(n))
    text, page = repr(p), p._repr_html_()
    left = n - SUMMARY_GROUPS
    names = ["op0", *(f"op{i}" for i in range(n - 1, 0, -1))]  # largest first
    if left == 1:
        assert "more groups" not in text and "more groups" not in page
    else:
        names = names[:SUMMARY_GROUPS]
        row = next(line for line in text.splitlines() if line.startswith(f"({left} more groups)"))
        assert row.split()[3] == f"{left}"  # launches: one per kernel
        rest = {g.group: g for g in p.groups}
        share = math.fsum(rest[f"op{i}"].share for i in range(1, left + 1))
        assert row.split()[-1] == f"{share:.0%}" and f"<td>({left} more groups)</td>" in page
        assert f">{share:.0%}</td>" in page
    for name in names:
        assert f"\n{name} " in text and f"<td>{name}</td>" in page
    shown = [line.split()[0] for line in text.splitlines() if line.split()[0][2:].isdigit() and line.startswith("op")]
    assert shown == names


def test_a_sweep_shows_its_range():
    """m = [64, 128, 256]: the repr gives T_SOL from (3 * 64*64)*2 = 24,576 B / 4.8 TB/s = 5.12 ns to
    (2*256*64 + 64*64)*2 = 73,728 B / 4.8 TB/s = 15.36 ns, and the predicted seconds' smallest to largest."""
    m = np.array([64, 128, 256])
    p = sk.predict(ops.matmul(m, 64, 64), "h200")
    text = repr(p)
    assert text.startswith("Prediction('matmul' on h200-sxm: sweep of shape (3,), ")
    assert text.endswith(", T_SOL 5.12 ns to 15.36 ns)")
    low, high = text.split("(3,), ", 1)[1].split(", T_SOL", 1)[0].split(" to ")
    assert _seconds(low) == pytest.approx(float(np.min(p.seconds)), rel=1e-3)
    assert _seconds(high) == pytest.approx(float(np.max(p.seconds)), rel=1e-3)
    assert _seconds(low) < _seconds(high)


def test_summary_takes_top_notes_extra_lines_and_detail():
    """summary(top=2, notes=None, extra=(...), detail=False): two kernels, every note, the caller's line after the
    pace; bad arguments are refused with the right builtin."""
    p = _quiet(_program())
    text = p.summary(top=2, notes=None, extra=("model FLOPs x",), detail=False)
    lines = text.splitlines()
    assert lines[4] == "model FLOPs x"  # after the head, the assumptions, the pace and the limiter line
    assert "top 2 of 11 distinct kernels" in text and "detail:" not in text
    assert sum(line.startswith("note: ") for line in lines) == len([n for n in p.notes if not n.startswith("eager")])
    assert p.summary() == repr(p)
    for bad in ({"top": 0}, {"top": None}, {"notes": -1}, {"notes": 1.5}):
        with pytest.raises(OptionError):
            p.summary(**bad)
    for bad in ({"extra": ["x"]}, {"extra": (1,)}, {"detail": 1}):
        with pytest.raises(sk.errors.ArgumentTypeError) as info:
            p.summary(**bad)
        assert isinstance(info.value, TypeError)


def test_to_frame_labels_are_categorical_and_a_sweep_is_kernel_major():
    """A two-kernel sweep over m = [64, 128]: rows kernel by kernel, each over the points; T_SOL per row by hand
    (GEMM (m*64 + 64*64 + m*64)*2 B, LayerNorm (2*m*64 + 2*64)*2 B, both over 4.8 TB/s)."""
    m = np.array([64, 128])
    w = sk.chain("pair", ops.matmul(m, 64, 64), ops.layernorm(m, 64))
    f = _quiet(w).to_frame()
    assert list(f["point"]) == [0, 1, 0, 1] and list(f["group"]) == ["matmul", "matmul", "layernorm", "layernorm"]
    for column in ("kernel", "group", "kind", "limiter"):
        assert isinstance(f[column].dtype, __import__("pandas").CategoricalDtype)
    gemm = (m * 64 + 64 * 64 + m * 64) * 2  # 24,576 and 40,960 B
    norm = (2 * m * 64 + 2 * 64) * 2  # 16,640 and 33,024 B
    np.testing.assert_allclose(f["t_sol_each_s"], np.concatenate([gemm, norm]) / H200_BANDWIDTH, rtol=1e-9)
    assert f["misaligned"].dtype == bool and f["count"].dtype == np.int64 and f["point"].dtype == np.int64


def test_to_frame_predicted_s_sums_to_the_kernel_time_not_the_total():
    """predicted_s sums to kernel_seconds; seconds adds the launch floor and a gap per launch after the first."""
    p = _quiet(_program())
    f = p.to_frame()
    assert f["predicted_s"].sum() == pytest.approx(float(p.kernel_seconds), rel=1e-12)
    assert float(p.seconds) > f["predicted_s"].sum()

