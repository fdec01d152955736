"""examples/fact_check_seed.py (issue 13): a verdict for each numeric claim of the seed article, and its key figures.

tests/test_examples.py already runs every example (exit 0, some output); these tests read what
this one prints. Each expected figure is hand arithmetic, its result in a comment.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "fact_check_seed.py"
ARTICLE = "reference/kernel-engineering-article.txt"
VERDICTS = ("consistent", "inconsistent", "cannot be checked (missing:")


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path_factory.mktemp("fact_check"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def claims(out: str) -> dict[int, str]:
    """Claim number -> its block of output (the quote up to the next claim)."""
    parts = re.split(r"^\[(\d+)\] ", out, flags=re.M)
    return {int(n): block for n, block in zip(parts[1::2], parts[2::2])}


def number(text: str, pattern: str) -> float:
    """The number that ``pattern``'s one group captures in ``text`` (thousands separators dropped)."""
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not in the output"
    return float(m.group(1).replace(",", ""))


def test_every_claim_has_one_verdict(out):
    """15 claims, numbered in order, each with exactly one verdict line in the stated vocabulary, and the tally."""
    blocks = claims(out)
    assert sorted(blocks) == list(range(1, 16))
    for n, block in blocks.items():
        lines = [line.strip() for line in block.splitlines() if line.strip().startswith("verdict:")]
        assert len(lines) == 1, f"claim {n}: {len(lines)} verdicts"
        assert lines[0].removeprefix("verdict: ").startswith(VERDICTS), lines[0]
    assert "15 claims: 5 consistent, 4 inconsistent, 6 cannot be checked" in out


def test_the_claims_are_quoted_from_the_article(out):
    """Every quote is the article's words, and every percentage and multiple in the article is among the quotes."""
    path = next((p / ARTICLE for p in (ROOT / "shared", ROOT.parent / "shared") if (p / ARTICLE).is_file()), None)
    if path is None:
        pytest.skip("the seed article (shared/reference) is not in this checkout")
    article = " ".join(path.read_text(encoding="utf-8").replace("\u00d7", "x").split())
    quotes = re.findall(r'^\[\d+\] "(.*?)(?:  \[.*\])?"$', out, flags=re.M)
    assert len(quotes) == 15
    for q in quotes:
        assert q in article, q
    figures = set(re.findall(r"\d[\d,.]*(?:%|x)(?=\W)", article))  # 47%, 65%, <30%, 28%, 62%, 66%, 2.3x, ...
    assert len(figures) >= 12
    quoted = " ".join(quotes)
    assert all(f in quoted for f in figures), figures - {f for f in figures if f in quoted}
    for f in ("1,200", "2,800", "72 to 31", "128-GPU"):
        assert f in quoted


def test_the_hours_follow_from_the_throughput(out):
    """72 h x 3,600 s/h x 1,200 samples/s = 311,040,000 samples; at 2,800 samples/s that is 30.857 h."""
    block = claims(out)[15]
    assert "311,040,000 samples" in block  # 72 * 3600 = 259,200 s; x 1,200 = 311,040,000
    assert number(block, r"= ([\d.]+) h") == pytest.approx(30.857, abs=0.005)  # 311,040,000 / 2,800 = 111,085.7 s / 3,600
    assert number(block, r"72 / 31 = ([\d.]+)") == pytest.approx(2.3226, abs=5e-4)  # 72 / 31 = 2.32258
    assert number(block, r"2,800 / 1,200 = ([\d.]+)") == pytest.approx(2.3333, abs=5e-4)  # 7 / 3
    assert number(block, r"\(([\d.]+)% apart\)") == pytest.approx(0.5, abs=0.05)  # 2.33333 / 2.32258 - 1 = 0.46%
    # read per GPU: 311,040,000 x 128 = 39,813,120,000 samples, / 256,000,000 (BERT: 1M steps x 256) = 155.5x
    assert "39,813,120,000 samples" in block
    assert number(block, r"samples: (\d+)x BERT") == pytest.approx(155.5, abs=1)
    assert claims(out)[15].split("verdict: ")[1].startswith("consistent")


def test_bert_throughput_implies_tiny_per_gpu_mfu(out):
    """MFU = samples/s x FLOP/sample / (128 x peak); A100 312 TFLOP/s dense fp16, V100 125 (datasheets)."""
    block = claims(out)[14]
    # BERT-base linear weights: 12 x (4 x 768^2 + 2 x 768 x 3072) = 84,934,656 in the encoder, + 768^2 = 589,824 (MLM
    # transform) + 768 x 30,522 = 23,440,896 (decoder) = 108,965,376. Training matrix FLOPs per token at seq 128:
    # 3 x (2 x 108,965,376 + 4 x 12 x 768 x 128) = 3 x (217,930,752 + 4,718,592) = 667,948,032; the step's vector
    # FLOPs (biases, LayerNorm, GELU, softmax, loss) add a few tenths of a percent
    assert number(block, r"seq 128: ([\d.]+) MFLOP/token") == pytest.approx(667.9, rel=0.01)
    # seq 512: 3 x (217,930,752 + 4 x 12 x 768 x 512 = 18,874,368) = 710,415,360
    assert number(block, r"seq 512: ([\d.]+) MFLOP/token") == pytest.approx(710.4, rel=0.01)
    assert number(block, r"6N = ([\d.]+)") == pytest.approx(657.1, abs=0.05)  # 6 x 109,514,298 = 657,085,788
    # 1,200 x 128 tokens x 667.9e6 / (128 x 312e12) = 8.015e11 / 312e12 = 0.257%
    assert number(block, r"1,200 x 8[\d.e+]+ / \(128 x 312e12\) = ([\d.]+)%") == pytest.approx(0.257, abs=0.005)
    # 2,800 x 128 x 667.9e6 / (128 x 125e12) = 1.870e12 / 125e12 = 1.50%
    assert number(block, r"2,800 x 8[\d.e+]+ / \(128 x 312e12\) = [\d.]+% MFU on A100; / \(128 x 125e12\) = ([\d.]+)%") \
        == pytest.approx(1.50, abs=0.02)
    # the largest reading: 2,800 x 512 x 710.4e6 / (128 x 125e12) = 1.0184e15 / 1.6e16 = 6.37%
    assert number(block, r"2,800 x 3[\d.e+]+ / \(128 x 312e12\) = [\d.]+% MFU on A100; / \(128 x 125e12\) = ([\d.]+)%") \
        == pytest.approx(6.37, abs=0.05)
    # read per GPU: 2,800 x 128 x 667.9e6 / 312e12 = 2.394e14 / 312e12 = 76.7% (A100), / 125e12 = 191.5% (V100)
    assert number(block, r"2,800 -> (\d+)% MFU on A100") == pytest.approx(76.7, abs=1)
    assert number(block, r"(\d+)% on V100 \(impossible\)") == pytest.approx(191.5, abs=1.5)
    # 128 A100s at solkit's predicted rate against the claim: the printed ratios are the printed figures divided
    fleet = number(block, r"128 of them: ([\d,]+) samples/s")
    assert number(block, r"(\d+)x-\d+x below") == pytest.approx(fleet / 2800, abs=1)
    assert number(block, r"\d+x-(\d+)x below") == pytest.approx(fleet / 1200, abs=1)
    assert block.split("verdict: ")[1].startswith("inconsistent")


def test_fusion_figures(out):
    """QKV (BERT-base, T = 4,096 tokens, d = 768, 2-byte elements) and LayerNorm + residual + GEMM."""
    qkv = claims(out)[7]
    assert "66.7% fewer" in qkv  # reads of x: 3 -> 1, 1 - 1/3
    # unfused 3 x (x T*d + W d^2 + out T*d); fused x once, W 3 d^2, out 3 T*d: saved 2 T*d of 3 (2 T*d + d^2)
    # = 8,192 / (3 x 8,960) = 8,192 / 26,880 = 30.48%; bytes 3 x (2 x 3,145,728 + 589,824) x 2 = 41.29 MB -> 28.70 MB
    assert number(qkv, r"all DRAM bytes .*: ([\d.]+)% fewer") == pytest.approx(30.48, abs=0.05)
    assert number(qkv, r"outputs\): ([\d.]+) MB") == pytest.approx(41.29, abs=0.01)
    assert number(qkv, r"MB -> ([\d.]+) MB") == pytest.approx(28.70, abs=0.01)
    assert number(qkv, r"overstated ([\d.]+)x") == pytest.approx(2.2, abs=0.05)  # 0.66 / 0.3048 = 2.17
    assert "T_SOL ratio 1.00x at 4,096 tokens" in claims(out)[8]  # 3 compute-bound GEMMs: the same FLOPs either way

    ln = claims(out)[12]
    # GEMM (x, W, bias in; y out): (3,145,728 + 589,824 + 768 + 3,145,728) x 2 = 13,764,096 B
    # add + LayerNorm unfused: (5 T*d + 2 d) x 2 = 31,460,352 B; fused: (4 T*d + 2 d) x 2 = 25,168,896 B (1.25x)
    # one kernel: 13,764,096 + 25,168,896 - 2 x 6,291,456 (y's round trip) = 26,350,080 B;
    # 45,224,448 / 26,350,080 = 1.716x; not writing h (another 6,291,456 B less): 45,224,448 / 20,058,624 = 2.255x
    assert number(ln, r"add\+LayerNorm alone: .*\(([\d.]+)x\)") == pytest.approx(1.25, abs=0.005)
    assert number(ln, r"= ([\d.]+) MB \(") == pytest.approx(26.35, abs=0.01)
    assert number(ln, r"verdict: consistent: ([\d.]+)x") == pytest.approx(1.716, abs=0.005)
    assert number(ln, r"to ([\d.]+)x \(inference\)") == pytest.approx(2.255, abs=0.005)


def test_resnet_and_peak_figures(out):
    """ResNet-50 (4.09 GMACs per 224x224 image) and the datasheet peaks."""
    rn = claims(out)[5]
    # training: 3 x 2 x 4.09e9 = 24.54 GFLOP per image from the convs and fc; BN, ReLU, pooling, loss add about 1%
    per_image = number(rn, r"forward\): ([\d.]+) GFLOP")
    assert per_image == pytest.approx(24.54, rel=0.015)
    # 0.28 x 312e12 / 24.79e9 = 3,524 img/s; 0.62 x 312e12 / 24.79e9 = 7,803 img/s
    assert number(rn, r"= ([\d,]+) img/s;") == pytest.approx(0.28 * 312e12 / (per_image * 1e9), abs=1)
    assert number(rn, r"(?m)= ([\d,]+) img/s$") == pytest.approx(0.62 * 312e12 / (per_image * 1e9), abs=1)
    ceiling = number(rn, r"BN\+ReLU fused ([\d.]+)%")
    assert ceiling < 62  # the claim lies above the roofline's ceiling of the fused program
    assert number(rn, r"62% is ([\d.]+)x") == pytest.approx(62 / ceiling, abs=0.01)  # 62 / 39.6 = 1.57
    assert rn.split("verdict: ")[1].startswith("inconsistent")

    peaks = claims(out)[3]
    # datasheets, dense bf16: A100 312, H100/H200 SXM 989.4, B200 2,250 TFLOP/s
    assert "a100 0.312 PFLOP/s" in peaks and "h200 0.989 PFLOP/s" in peaks and "b200 2.250 PFLOP/s" in peaks

    decode = claims(out)[4]
    # Llama-3-8B decode at batch 1 reads about one byte per FLOP (2 FLOPs per bf16 weight): at T_SOL its MFU is
    # about (FLOP / byte) x 4.8e12 B/s / 989.4e12 FLOP/s = 0.485% x (FLOP / byte)
    flop, byte = number(decode, r"([\d.]+) GFLOP over"), number(decode, r"over ([\d.]+) GB")
    assert number(decode, r"= ([\d.]+)%\n") == pytest.approx(flop / byte * 4.8e12 / 989.4e12 * 100, rel=0.01)


def test_the_dynamic_parallelism_verdict_by_hand(out):
    """Claim 11, case A: 8 sequences of 512*i tokens (i = 1..8) x 16 heads in 128-query tiles on the H200's 132 SMs."""
    block = claims(out)[11]
    case_a = block.split("case B")[0]
    # padded: 8 sequences x ceil(4096 / 128) = 32 tiles x 16 heads = 4,096 items; 4,096 / 132 = 31.03 -> 32 waves
    assert "padded: 4,096 items in 32 waves" in case_a
    # ragged: 16 x (4 + 8 + ... + 32) = 16 x 4 x 36 = 2,304 items; 2,304 / 132 = 17.45 -> 18 waves
    assert "batch: 2,304 items in 18 waves" in case_a and "longest: 2,304 items in 18 waves" in case_a
    # the padding's FLOPs: 8 x 4096^2 / (512^2 x (1 + 4 + ... + 64)) = 134,217,728 / (262,144 x 204) = 2.5098
    assert number(case_a, r"sum\(n\^2\) = ([\d.]+)x") == pytest.approx(2.51, abs=0.005)
    # padded: every item is the longest (4096 keys), 32 waves of it; longest first: the first wave of 132 items holds
    # sequence 8's 512 items' first 132, ... each wave as long as its first (longest) item. Its gain over the padded
    # launch is printed as their ratio
    t = {k: number(case_a, rf"{k}: [\d,]+ items in \d+ waves = ([\d.]+) us") for k in ("padded", "batch", "longest")}
    assert number(case_a, r"padded / longest first = ([\d.]+)x") == pytest.approx(t["padded"] / t["longest"], abs=0.01)
    assert number(case_a, r"longest first / batch order = ([\d.]+)x") == pytest.approx(t["batch"] / t["longest"],
                                                                                      abs=0.002)
    assert t["longest"] <= t["batch"] < t["padded"]
    assert "verdict: inconsistent as a gain of scheduling" in block
