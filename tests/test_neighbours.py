"""The neighbour correction (solkit.prediction.neighbours): weights, fading, keys, sweeps, the bank file and its use by predict."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import solkit as sk
from solkit import ops
from solkit.errors import SpecError
from solkit.prediction.bank import load_neighbours
from solkit.prediction.neighbours import STEP, Neighbours, bank_key, features, residual
from solkit.prediction import calibration, kernel_terms

SPEC = Path(__file__).resolve().parents[1] / "hardware_specs" / "h200-sxm.yaml"
KEY = "matmul|gemm|bf16||gemm"


def bank(points, residuals, key=KEY + "|"):
    """A bank of one key: features in octaves (quantized here), residuals in log units."""
    return Neighbours("test", {key: (np.rint(np.array(points, dtype=float) * STEP).astype(np.int64), np.array(residuals))})


def test_an_exact_match_beside_a_farther_neighbour():
    """A at distance 0 (r = +0.4), B one octave away (r = -0.2): w_A = 1/0.25^2 = 16, w_B = 1/1.25^2 = 0.64;
    c = (16 x 0.4 - 0.64 x 0.2) / (0.5 + 16 + 0.64) = 6.272 / 17.14 = 0.365928."""
    b = bank([[0, 0], [1, 0]], [0.4, -0.2])
    assert b.correction(KEY, [], [0.0, 0.0]) == pytest.approx(6.272 / 17.14, rel=1e-12)


def test_far_neighbours_fade():
    """Query 4 octaves from A and 3 from B: w_A = 1/4.25^2 = 0.055363, w_B = 1/3.25^2 = 0.094675;
    sum = 0.4 w_A - 0.2 w_B = 0.0032104; weights + prior = 0.5 + w_A + w_B = 0.650038; c = 0.0049388, faded by
    REACH / 3 = 2/3: 0.0032925."""
    b = bank([[0, 0], [1, 0]], [0.4, -0.2])
    w_a, w_b = 1 / 4.25 ** 2, 1 / 3.25 ** 2
    expected = (0.4 * w_a - 0.2 * w_b) / (0.5 + w_a + w_b) * 2 / 3  # 0.0032925
    assert b.correction(KEY, [], [4.0, 0.0]) == pytest.approx(expected, rel=1e-12)


def test_only_the_eight_nearest_count():
    """Ten neighbours along one axis at 0..9 octaves with r = +1 for the 8 nearest and r = -10 for the 2 farthest:
    the two farthest are ignored. Query at 0: weights 1/(d + 0.25)^2 for d = 0..7 = 16, 0.64, 0.19753, 0.094675,
    0.055363, 0.036281, 0.0256, 0.019025 (sum 17.068436); c = 17.068436 / (0.5 + 17.068436) = 0.971540."""
    b = bank([[d] for d in range(10)], [1, 1, 1, 1, 1, 1, 1, 1, -10, -10])
    w = 16 + 0.64 + 1 / 2.25 ** 2 + 1 / 3.25 ** 2 + 1 / 4.25 ** 2 + 1 / 5.25 ** 2 + 0.0256 + 1 / 7.25 ** 2
    assert b.correction(KEY, [], [0.0]) == pytest.approx(w / (0.5 + w), rel=1e-12)  # 0.971540


def test_neighbours_tied_at_the_eighth_distance_all_count():
    """Nine neighbours: seven at 0..6 octaves (r = 0) and two tied at 7 (r = +1 and +0.5).
    Both tied ones count: weights 1/(d + 0.25)^2 = 16, 0.64, 0.19753, 0.094675, 0.055363, 0.036281, 0.0256 and
    0.019025 twice; c = 0.019025 x 1.5 / (0.5 + 17.049450 + 2 x 0.019025) = 0.0285375 / 17.5875 = 0.0016226;
    with the rows in any order."""
    points = [[0], [1], [2], [3], [4], [5], [6], [7], [-7]]
    residuals = [0.0] * 7 + [1.0, 0.5]
    w = [1 / (d + 0.25) ** 2 for d in range(7)]
    total = 0.5 + sum(w) + 2 / 7.25 ** 2
    expected = (1.5 / 7.25 ** 2) / total  # 0.0016226
    assert bank(points, residuals).correction(KEY, [], [0.0]) == pytest.approx(expected, rel=1e-12)
    order = [8, 2, 0, 7, 1, 3, 6, 4, 5]
    shuffled = bank([points[i] for i in order], [residuals[i] for i in order])
    assert shuffled.correction(KEY, [], [0.0]) == pytest.approx(expected, rel=1e-12)


def test_keys_and_variants_select_the_bank():
    """The variants that apply join the key with '+'; a key without a bank is not corrected."""
    b = Neighbours("test", {KEY + "|skinny": (np.array([[0]]), np.array([1.0])),
                            KEY + "|misaligned+odd": (np.array([[0]]), np.array([-1.0]))})
    skinny, misaligned, odd = ("skinny", True), ("misaligned", True), ("odd", True)
    one = 16 / 16.5  # w = 1/0.25^2 = 16 at distance 0: c = 16 r / (0.5 + 16) = 0.969697 r
    assert b.correction(KEY, [skinny, ("misaligned", False)], [0.0]) == pytest.approx(one)
    assert b.correction(KEY, [("skinny", False), misaligned, odd], [0.0]) == pytest.approx(-one)
    assert b.correction(KEY, [("skinny", False)], [0.0]) == 0.0
    assert b.correction("matmul|gemm|fp8_e4m3||gemm", [skinny], [0.0]) == 0.0


def test_bank_key_shares_fp16_with_bf16():
    """fp16 runs bf16's kernels: one bank; fp8 and fp32 keep their own."""
    assert bank_key("matmul", "gemm", "fp16", None, "gemm") == bank_key("matmul", "gemm", "bf16", None, "gemm") == KEY
    assert bank_key("conv2d", "conv", "fp32", "nhwc", "conv") == "conv2d|conv|fp32|nhwc|conv"


def test_features_of_each_kernel_shape():
    """log2 of the shape the bank compares by: a GEMM's m, n, k, batch; a row-wise kernel's rows, width, bytes."""
    gemm = ops.matmul(1024, 256, 8, dtype="bf16").kernels[0]
    assert features(gemm) == ("gemm", None, [10.0, 8.0, 3.0, 0.0])
    norm = ops.layernorm(tokens=512, d_model=1024, dtype="bf16").kernels[0]
    tag, layout, f = features(norm)
    nbytes = norm.bytes_read + norm.bytes_written
    assert (tag, layout, f[:2]) == ("rows", None, [9.0, 10.0]) and f[2] == pytest.approx(math.log2(nbytes))
    add = ops.add(elements=1 << 20, dtype="fp32").kernels[0]  # reads 2 x 4 MiB, writes 4 MiB: 12 MiB; 2^20 FLOPs
    assert features(add)[0] == "flat" and features(add)[2] == pytest.approx([math.log2(12 * 2 ** 20), 20.0])


def test_residual_puts_the_miss_on_the_main_kernel():
    """Measured 30 us, the rest 10 us, the main kernel 10 us: log(20/10) = log 2; never below a quarter of the body."""
    assert residual(30e-6, 10e-6, 10e-6) == pytest.approx(math.log(2.0))
    assert residual(5e-6, 10e-6, 10e-6) == pytest.approx(math.log(0.25))


def test_a_sweep_equals_its_shapes_one_by_one():
    """A sweep over m (with the skinny variant changing at m = 16) gives each shape's scalar correction."""
    b = Neighbours("test", {KEY + "|": (np.array([[80, 96, 96, 0], [24, 96, 96, 0]]), np.array([0.3, -0.1])),
                            KEY + "|skinny": (np.array([[16, 96, 96, 0]]), np.array([0.5]))})
    m = np.array([1.0, 3.0, 16.0, 17.0, 100.0, 5000.0])
    feats = [np.log2(m), 12.0, 12.0, 0.0]
    swept = b.correction(KEY, [("skinny", m <= 16)], feats)
    one = [b.correction(KEY, [("skinny", bool(x <= 16))], [math.log2(x), 12.0, 12.0, 0.0]) for x in m]
    assert swept == pytest.approx(one, rel=1e-12)
    assert len(set(np.round(one, 12))) > 2


def test_a_sweep_of_variants_alone():
    """Scalar features, variants that change along the sweep (bools or integers, read as truth values): each element
    gets its own variant's bank: c = 0.969697 r at distance 0 (w = 16: 16 r / 16.5)."""
    b = Neighbours("test", {KEY + "|": (np.array([[0]]), np.array([0.5])),
                            KEY + "|skinny": (np.array([[0]]), np.array([-1.0]))})
    for mask in (np.array([True, False, True]), np.array([2, 0, 1])):
        assert b.correction(KEY, [("skinny", mask)], [0.0]) == pytest.approx([-16 / 16.5, 8 / 16.5, -16 / 16.5], rel=1e-12)


def test_predict_applies_the_bank_to_the_kernel_body(tmp_path):
    """A spec whose bank holds this very GEMM with r = log 2: c = 16 log 2 / (0.5 + 16) = (16/16.5) log 2, so the body
    (predicted minus the launch floor) grows by 2^(16/16.5) = 1.95856; without a bank it is the physical model's."""
    m, n, k = 4096.0, 4096.0, 4096.0
    spec = tmp_path / "h200-sxm.yaml"
    shutil.copy(SPEC, spec)
    plain = sk.load_gpu(spec)
    _, _, f = features(ops.matmul(m, n, k, dtype="bf16").kernels[0])
    doc = {"gpu": "h200-sxm", "source": "test", "keys": {KEY + "|": {"features": [[round(x * STEP) for x in f]],
                                                                      "residuals": [math.log(2.0)]}}}
    (tmp_path / "h200-sxm.neighbours.json").write_text(json.dumps(doc))
    banked = sk.load_gpu(spec)
    without = spec.with_name("nobank.yaml")
    without.write_text(SPEC.read_text().replace("  neighbours: h200-sxm.neighbours.json\n", ""))
    physical = sk.load_gpu(without)
    assert calibration(physical).neighbours is None and calibration(banked).neighbours is not None
    w = ops.matmul(m, n, k, dtype="bf16")
    floor = calibration(banked).launch_floor
    body = sk.predict(w, physical).seconds - floor
    assert sk.predict(w, banked).seconds - floor == pytest.approx(body * 2 ** (16 / 16.5), rel=1e-12)  # 1.95856 x
    del plain


def test_a_key_switched_off_is_not_corrected(tmp_path):
    """The bank file's "off" names calibration keys (op and last variant) whose entries are not loaded: the same GEMM
    entry as above moves the body by 2^(16/16.5) unless "matmul" is off; another key's switch (the odd GEMMs') leaves it
    on."""
    from solkit.prediction.bank import calibration_key

    assert calibration_key(KEY + "|misaligned+odd") == "matmul_odd" and calibration_key(KEY + "|") == "matmul"
    m = 4096.0
    w = ops.matmul(m, m, m, dtype="bf16")
    _, _, f = features(w.kernels[0])
    without = tmp_path / "nobank.yaml"
    without.write_text(SPEC.read_text().replace("  neighbours: h200-sxm.neighbours.json\n", ""))
    physical = sk.load_gpu(without)
    floor = calibration(physical).launch_floor
    body = sk.predict(w, physical).seconds - floor
    entry = {"features": [[round(x * STEP) for x in f]], "residuals": [math.log(2.0)]}
    for i, (off, factor) in enumerate(((["matmul"], 1.0), (["matmul_odd"], 2 ** (16 / 16.5)))):
        folder = tmp_path / f"bank{i}"
        folder.mkdir()
        shutil.copy(SPEC, folder / "h200-sxm.yaml")
        doc = {"gpu": "h200-sxm", "source": "test", "off": off,
               "keys": {KEY + "|": entry, KEY + "|misaligned+odd": entry}}
        (folder / "h200-sxm.neighbours.json").write_text(json.dumps(doc))
        got = sk.predict(w, sk.load_gpu(folder / "h200-sxm.yaml")).seconds - floor
        assert got == pytest.approx(body * factor, rel=1e-12), off


def test_a_switch_naming_no_key_of_the_bank_is_refused(tmp_path):
    """An "off" name that is the calibration key of no entry (a typo would leave that correction on) is a SpecError
    naming the field, with the near key."""
    shutil.copy(SPEC, tmp_path / "h200-sxm.yaml")
    doc = {"gpu": "h200-sxm", "source": "test", "off": ["matmull"],
           "keys": {KEY + "|": {"features": [[0, 0, 0, 0]], "residuals": [0.1]}}}
    (tmp_path / "h200-sxm.neighbours.json").write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=r"field 'off': 'matmull' is the calibration key of no entry.*did you mean 'matmul'"):
        sk.predict(ops.matmul(64.0, 64.0, 64.0), sk.load_gpu(tmp_path / "h200-sxm.yaml"))


def test_the_bound_holds_whatever_the_bank_says(tmp_path):
    """A bank claiming kernels 100x faster than modelled cannot take a prediction below T_SOL."""
    spec = tmp_path / "h200-sxm.yaml"
    shutil.copy(SPEC, spec)
    w = ops.matmul(8192.0, 8192.0, 8192.0, dtype="bf16")
    _, _, f = features(w.kernels[0])
    doc = {"gpu": "h200-sxm", "source": "test", "keys": {KEY + "|": {"features": [[round(x * STEP) for x in f]],
                                                                      "residuals": [math.log(0.01)]}}}
    (tmp_path / "h200-sxm.neighbours.json").write_text(json.dumps(doc))
    p = sk.predict(w, sk.load_gpu(spec))
    assert p.seconds == pytest.approx(float(p.t_sol), rel=1e-12)


def test_uncalibrated_gpus_borrow_no_bank():
    """A GPU without measurements borrows the H200's parameters but not its measured kernels (other libraries' choices)."""
    assert calibration(sk.load_gpu("h200")).neighbours is not None
    assert calibration(sk.load_gpu("a100-sxm4-80gb")).neighbours is None


def test_collectives_and_unbanked_kernels_are_not_corrected():
    """A kernel whose key has no bank entry (an AdamW step) and a collective keep the physical model's body."""
    gpu = sk.load_gpu("h200")
    cal = calibration(gpu)
    reduce = sk.comm.all_reduce(1 << 30, n_gpus=8).kernels[0]
    assert kernel_terms(reduce, gpu, cal).neighbour == 0.0
    adamw = ops.adamw(elements=1 << 20).kernels[0]
    assert kernel_terms(adamw, gpu, cal).neighbour == 0.0
    gemm = ops.matmul(4096.0, 4096.0, 4096.0, dtype="bf16").kernels[0]
    assert kernel_terms(gemm, gpu, cal).neighbour != 0.0


GOOD = "matmul|gemm|bf16||gemm|"


@pytest.mark.parametrize("content, message", [
    ("[]", "field '\\(the file\\)'"),
    ('{"gpu": "g", "source": "s", "keys": []}', "field 'keys'"),
    ('{"gpu": "g", "source": 3, "keys": {}}', "field 'source'"),
    ('{"gpu": "g", "source": "s", "keys": {"%s": {"features": [[1, 2, 3, 4]], "residuals": [0.1, 0.2]}}}' % GOOD,
     "1 rows of widths \\[4\\] and 2 residuals"),
    ('{"gpu": "g", "source": "s", "keys": {"%s": {"features": [[1, 2]], "residuals": [0.1]}}}' % GOOD,
     "rows of 4 features"),
    ('{"gpu": "g", "source": "s", "keys": {"m|gemm|bf16||odd|": {"features": [[1]], "residuals": [0.1]}}}',
     "tag one of conv, gemm, rows, flat"),
    ('{"gpu": "g", "source": "s", "keys": {"%s": {"residuals": [0.1]}}}' % GOOD, "keys.*features"),
    ('{"gpu": "g", "source": "s", "keys": {"%s": {"features": [[1, 2, 3, 4.5]], "residuals": [0.1]}}}' % GOOD,
     "integer"),
    ('{"gpu": "g", "source": "s", "keys": {"%s": {"features": [[1, 2, 3, 4]], "residuals": [NaN]}}}' % GOOD,
     "finite"),
    ('{"gpu": "g", "source": "s", "keys": {"%s": {"features": [[1, 2, 3, 4]], "residuals": [800]}}}' % GOOD,
     "less than or equal to 10"),
    ('{"gpu": "g", "source": "s", "keys": {"%s": {"features": [[1, 2, 3, 99999999999999999999]], "residuals": [0]}}}'
     % GOOD, "keys"),
    ("{", "Invalid JSON"),
])
def test_a_bad_bank_file_is_named(tmp_path, content, message):
    """Each defect of a bank file is a SpecError (a ValueError) naming the file and what was expected."""
    path = tmp_path / "bank.json"
    path.write_text(content)
    with pytest.raises(SpecError, match=message) as err:
        load_neighbours(path)
    assert str(path) in str(err.value) and isinstance(err.value, ValueError)


def test_a_bank_of_another_gpu_or_not_text_is_named(tmp_path):
    """A bank measured on another GPU than the spec's, or a file that is not UTF-8 text, is a SpecError naming it."""
    path = tmp_path / "bank.json"
    path.write_text('{"gpu": "h100-sxm", "source": "s", "keys": {}}')
    with pytest.raises(SpecError, match="measured on 'h100-sxm', not on 'h200-sxm'"):
        load_neighbours(path, "h200-sxm")
    assert len(load_neighbours(path, "h100-sxm")) == 0
    path.write_bytes(b"\xff\xfe{}")
    with pytest.raises(SpecError, match="not a readable neighbour bank"):
        load_neighbours(path)


def test_a_copied_spec_finds_the_shipped_bank(tmp_path):
    """A spec copied elsewhere without its bank reads the shipped one of that name (the same corrections)."""
    spec = tmp_path / "h200-sxm.yaml"
    shutil.copy(SPEC, spec)
    w = ops.matmul(3000.0, 5000.0, 700.0, dtype="bf16")
    assert sk.predict(w, sk.load_gpu(spec), warn=False).seconds == sk.predict(w, "h200", warn=False).seconds


def test_a_missing_bank_file_is_named(tmp_path):
    """A spec naming a bank that is neither beside it nor shipped fails when its calibration is built, naming the file."""
    spec = tmp_path / "h200-sxm.yaml"
    spec.write_text(SPEC.read_text().replace("neighbours: h200-sxm.neighbours.json", "neighbours: mine.json"))
    with pytest.raises(SpecError, match="mine.json: no such neighbour bank"):
        calibration(sk.load_gpu(spec))


def test_a_bank_name_is_a_plain_file_name(tmp_path):
    """measured.neighbours names a JSON file beside the spec, never a path elsewhere."""
    spec = tmp_path / "h200-sxm.yaml"
    spec.write_text(SPEC.read_text().replace("neighbours: h200-sxm.neighbours.json", "neighbours: ../../etc/bank.json"))
    with pytest.raises(SpecError, match="neighbours"):
        sk.load_gpu(spec)


def test_neighbours_false_gives_the_physical_model(tmp_path):
    """predict(..., neighbours=False) on the shipped H200 equals predict on the same spec without its bank;
    the per-kernel factor and the note say what the correction did."""
    without = tmp_path / "nobank.yaml"
    without.write_text(SPEC.read_text().replace("  neighbours: h200-sxm.neighbours.json\n", ""))
    w = ops.matmul(25.0, 8.0, 6984.0, dtype="fp32", batch=2.0)
    physical = sk.predict(w, sk.load_gpu(without))
    assert sk.predict(w, "h200", neighbours=False).seconds == physical.seconds
    corrected = sk.predict(w, "h200")
    factor = corrected.kernels[0].neighbour
    floor = calibration(sk.load_gpu("h200")).launch_floor
    assert corrected.seconds - floor == pytest.approx((physical.seconds - floor) * factor, rel=1e-12)
    assert physical.kernels[0].neighbour == 1.0 and factor > 2.0  # cuBLAS walks k serially: measured 256 us, not 15
    assert any(n.startswith("neighbour correction from") and f"x{factor:.2f}" in n for n in corrected.notes)
    assert not any("neighbour" in n for n in physical.notes)
    with pytest.raises(sk.errors.ArgumentTypeError, match="neighbours"):
        sk.predict(w, "h200", neighbours="no")


def test_neighbours_false_reuses_one_physical_calibration():
    """The bank-less calibration neighbours=False predicts with is made once per loaded spec (kept in the
    calibration's memo), and a sweep through it reads, element by element, the scalar calls' figures."""
    from solkit.prediction.kernel import physical as _physical

    cal = calibration(sk.load_gpu("h200"))
    assert cal.neighbours is not None
    assert _physical(cal) is _physical(cal) and _physical(cal).neighbours is None
    assert _physical(cal) == cal.replace(neighbours=None)  # the same parameters, the memo aside
    m = np.array([25.0, 1024.0, 4097.0])
    swept = sk.predict(ops.matmul(m, 8.0, 6984.0, dtype="fp32"), "h200", neighbours=False).seconds
    assert list(swept) == [sk.predict(ops.matmul(x, 8.0, 6984.0, dtype="fp32"), "h200", neighbours=False).seconds
                           for x in m]


def test_a_renamed_copy_may_not_borrow_the_bank(tmp_path):
    """A spec renamed from the H200's that keeps measured.neighbours gets a SpecError naming both GPUs, not a silent
    correction measured on another part."""
    spec = tmp_path / "my-h200.yaml"
    spec.write_text(SPEC.read_text().replace("name: h200-sxm", "name: my-h200", 1))
    with pytest.raises(SpecError, match="measured on 'h200-sxm', not on 'my-h200'"):
        calibration(sk.load_gpu(spec))


def test_a_bank_built_in_code_refuses_a_residual_that_is_not_finite():
    """A sweep blends every candidate of a box (a non-member weighs 0): a NaN or inf residual or feature, or residuals
    that do not pair with the points, are refused when the bank is built, naming its key, not spread through a sweep."""
    from solkit.prediction.neighbours import Neighbours

    points = np.array([[1.0, 2.0, 3.0, 0.0], [4.0, 5.0, 6.0, 0.0]])
    assert len(Neighbours("made", {"mm|gemm|bf16||gemm|": (points, np.array([0.1, -0.2]))})) == 2
    key = "mm|gemm|bf16||gemm|"
    for bad in (math.nan, math.inf):
        with pytest.raises(SpecError, match="holds a feature or residual that is not a finite number"):
            Neighbours("made", {key: (points, np.array([0.1, bad]))})
    for bad in (math.nan, math.inf):
        with pytest.raises(SpecError, match="holds a feature or residual that is not a finite number"):
            Neighbours("made", {key: (np.array([[1.0, 2.0, bad, 0.0], [4.0, 5.0, 6.0, 0.0]]), np.array([0.1, 0.2]))})
    for residuals in (np.array([0.1, 0.2, 0.3]), np.array([0.1]), np.array([[0.1], [0.2]])):
        with pytest.raises(SpecError, match="needs one residual per point"):
            Neighbours("made", {key: (points, residuals)})
