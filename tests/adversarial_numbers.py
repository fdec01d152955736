"""Adversarial cases: numbers (see adversarial.py), issue 29's classes 6, 7, 8 and 10.

- ``numbers-zero``: ZeRO / FSDP over a dp that does not divide the parameters (GPT-2 over 5, Llama-3-8B over 24):
  padded flat buffers, checked by hand in memory, in the optimizer's shard and in the collectives;
- ``numbers-float64``: figures beyond float64 in ``memory`` and in ncu CSVs: a ShapeError or MeasurementError naming
  the value, never an inf (and the edges float64 still holds: they work);
- ``numbers-bounded``: work that grew with a number (the split search's candidates, grids) answers within seconds
  or is refused before anything is allocated, naming the size and the limit; ``--rows``;
- ``numbers-traps``: silent traps: amp serving, mfu's n_gpus against a split step's world size, the launch probe's
  unit, bools inside shape lists, compare of no work, a comma list in the CLI, a stdout that refuses writes, a
  misspelt command.

A ``works`` case checks its number by hand arithmetic (or against a defining identity), raising AssertionError
(judged ``foreign``) if it differs.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Callable

import numpy as np

import solkit as sk
from adversarial import Adv
from adversarial_cli import bad, cli, ok
from solkit import models, ops, planning
from solkit.cli import main
from solkit.errors import ArgumentTypeError, CLIError, MeasurementError, OptionError, ShapeError
from solkit.profile.ncu import parse_ncu
from solkit.splits import candidates
from solkit.workload import Kernel, Workload

# ---- helpers ------------------------------------------------------------------------------------


def check(condition: bool, what: str) -> None:
    """AssertionError unless ``condition``."""
    if not condition:
        raise AssertionError(what)


def equal(got: Any, want: Any) -> None:
    """AssertionError unless ``got == want`` exactly."""
    if not np.all(np.asarray(got) == np.asarray(want)):
        raise AssertionError(f"{got!r} != {want!r}")


def close(got: Any, want: Any) -> None:
    """AssertionError unless ``got`` equals ``want`` to 1e-12 relative (the same figure, up to float rounding)."""
    if np.shape(got) != np.shape(want) or not np.allclose(got, want, rtol=1e-12, atol=0):
        raise AssertionError(f"{got!r} != {want!r}")


def named(w: Workload, prefix: str) -> list[Kernel]:
    """The kernels of ``w`` whose name starts with ``prefix``."""
    return [k for k, _ in w.counted if k.name.startswith(prefix)]


GPT2 = models.preset("gpt2")  # 124,439,808 parameters: 12 layers of 7,087,872, root (embeddings, final norm) 39,385,344
LLAMA8 = models.preset("llama3-8b")  # 8,030,261,248: 32 layers of 218,112,000, root 1,050,677,248
TINY = models.Transformer(name="tiny", layers=2, d_model=256, heads=4, vocab=1024, ffn=1024)
H200_5 = sk.load_system("hgx-h200", nodes=5)  # 40 GPUs
H200_3 = sk.load_system("hgx-h200", nodes=3)  # 24 GPUs


def step(m: models.Transformer = GPT2, batch: int = 1, seq: int = 128, **split: Any) -> Workload:
    """The training step of ``m``'s forward, split by ``split``."""
    return models.training_step(m.forward(batch=batch, seq=seq), **split)


def memory(m: models.Transformer = GPT2, **kw: Any) -> Any:
    """One GPU's training footprint of ``m`` at batch 1, seq 1024."""
    return m.memory(1, 1024, training=True, **kw)


def predicted(w: Workload, where: Any) -> float:
    """The prediction's seconds, required finite and positive."""
    seconds = float(sk.predict(w, where, warn=False).seconds)
    check(0 < seconds < float("inf"), f"predicted {seconds!r}")
    return seconds


def zero_cases() -> list[Adv]:
    """ZeRO stages over a dp that does not divide the parameter count: each evaluates, padded by hand."""
    # GPT-2 over dp=5: ceil(124,439,808 / 5) = ceil(24,887,961.6) = 24,887,962 per rank; the flat buffer 5 x that =
    # 124,439,810 (two elements of padding)
    shard5 = 24_887_962
    # Llama-3-8B over dp=24, FSDP one unit per layer and the root: layers 218,112,000 / 24 = 9,088,000 (exact); root
    # ceil(1,050,677,248 / 24) = ceil(43,778,218.67) = 43,778,219; shard 32 x 9,088,000 + 43,778,219 = 334,594,219
    shard24 = 32 * 9_088_000 + 43_778_219
    cases = [
        Adv("numbers-zero: gpt2 dp=5 zero=1 states: 2 x 4 B x 24,887,962 = 199,103,696 B",
            lambda: equal(memory(dp=5, zero=1).optimizer_states, 2 * 4 * shard5), None),
        Adv("numbers-zero: gpt2 dp=5 zero=1 gradients unsharded: 4 B x 124,439,808 = 497,759,232 B",
            lambda: equal(memory(dp=5, zero=1).gradients, 4 * 124_439_808), None),
        Adv("numbers-zero: gpt2 dp=5 zero=2 gradients: 4 B x 24,887,962 = 99,551,848 B",
            lambda: equal(memory(dp=5, zero=2).gradients, 4 * shard5), None),
        Adv("numbers-zero: gpt2 dp=5 zero=3 gradients: 4 B x (12 x 1,417,575 + 7,877,069) = 99,551,876 B",
            # per unit: ceil(7,087,872 / 5) = 1,417,575; root ceil(39,385,344 / 5) = 7,877,069
            lambda: equal(memory(dp=5, zero=3).gradients, 4 * (12 * 1_417_575 + 7_877_069)), None),
        Adv("numbers-zero: gpt2 dp=5 zero=1 step's AdamW on the shard: 28 B x 24,887,962 = 696,862,936 B",
            # AdamW per element: fp32 param read + write 8, gradient read 4, two moments read + write 16 = 28 B
            lambda: equal(named(step(dp=5, zero=1), "adamw")[0].bytes, 28 * shard5), None),
        Adv("numbers-zero: gpt2 dp=5 zero=1 all-gather buffer 5 x 24,887,962 x 4 B = 497,759,240 B",
            lambda: equal(named(step(dp=5, zero=1), "zero all-gather")[0].link.nbytes, 5 * shard5 * 4), None),
        Adv("numbers-zero: gpt2 dp=5 zero=1 predicted",
            lambda: predicted(step(dp=5, zero=1), H200_5), None),
        Adv("numbers-zero: gpt2 dp=5 zero=2 predicted", lambda: predicted(step(dp=5, zero=2), H200_5), None),
        Adv("numbers-zero: gpt2 dp=5 zero=3 root gather 5 x 7,877,069 x 4 B = 157,541,380 B",
            lambda: equal(named(step(dp=5, zero=3), "fsdp all-gather (root)")[0].link.nbytes, 5 * 7_877_069 * 4), None),
        Adv("numbers-zero: gpt2 dp=5 zero=3 predicted", lambda: predicted(step(dp=5, zero=3), H200_5), None),
        Adv("numbers-zero: gpt2 dp=3 zero=3 pp=2 microbatches=4 predicted",
            lambda: predicted(step(dp=3, zero=3, pp=2, microbatches=4), H200_5), None),
        Adv("numbers-zero: gpt2 dp=7 zero=2 tp=4 predicted", lambda: predicted(step(dp=7, zero=2, tp=4), H200_5), None),
        Adv("numbers-zero: llama3-8b dp=24 zero=3 gradients 4 B x 334,594,219 = 1,338,376,876 B",
            lambda: equal(memory(LLAMA8, dp=24, zero=3).gradients, 4 * shard24), None),
        Adv("numbers-zero: llama3-8b dp=24 zero=3 root gather 24 x 43,778,219 x 4 B = 4,202,709,024 B",
            lambda: equal(named(step(LLAMA8, dp=24, zero=3), "fsdp all-gather (root)")[0].link.nbytes,
                          24 * 43_778_219 * 4), None),
        Adv("numbers-zero: llama3-8b dp=24 zero=3 layer gather exact: 218,112,000 x 4 B = 872,448,000 B",
            lambda: equal(named(step(LLAMA8, dp=24, zero=3), "fsdp all-gather (next")[0].link.nbytes, 872_448_000), None),
        Adv("numbers-zero: llama3-8b dp=24 zero=3 predicted on 3 nodes",
            lambda: predicted(step(LLAMA8, dp=24, zero=3), H200_3), None),
        Adv("numbers-zero: llama3-8b dp=24 zero=1 states 2 x 4 B x ceil(8,030,261,248 / 24) = 2,676,753,752 B",
            # 8,030,261,248 / 24 = 334,594,218.67 -> 334,594,219; x 8 = 2,676,753,752
            lambda: equal(memory(LLAMA8, dp=24, zero=1).optimizer_states, 8 * 334_594_219), None),
        Adv("numbers-zero: a divisible split is unpadded: llama3-8b dp=8 zero=1 states 8 B x 1,003,782,656",
            lambda: equal(memory(LLAMA8, dp=8, zero=1).optimizer_states, 8 * 8_030_261_248 // 8), None),
        Adv("numbers-zero: search_splits over 40 GPUs evaluates dp=5 (gpt2, global batch 5)",
            lambda: check(any(r.dp == 5 and r.zero in (1, 2, 3) for r in
                              planning.search_splits(GPT2, H200_5, 5, 1024, checkpointing=False, top=100)),
                          "no ZeRO split over dp=5 came back"), None, seconds=20),
        Adv("numbers-zero: zero=3 with dp=1 still refused", lambda: step(dp=1, zero=3), OptionError, ValueError,
            ("zero=3", "dp > 1")),
    ]
    return cases


# ---- numbers beyond float64 ---------------------------------------------------------------------

NCU_HEADER = ('"ID","Process Name","Kernel Name","Stream","dram__bytes_read.sum","dram__bytes_write.sum",'
              '"gpu__time_duration.sum"\n')


def ncu(read: str = "1", write: str = "2", time: str = "3", units: tuple[str, str, str] = ("byte", "byte", "ns"),
        rows: int = 1) -> Any:
    """parse_ncu of a CSV of ``rows`` kernels with these cells (and units)."""
    unit_row = '"","","","",' + ",".join(f'"{u}"' for u in units) + "\n"
    body = "".join(f'"{i}","p","k","7","{read}","{write}","{time}"\n' for i in range(rows))
    return parse_ncu(NCU_HEADER + unit_row + body, "t.csv")


def ncu_file(time: str = "1e400") -> Callable[[str], str]:
    """A function writing an ncu CSV (gzip) with one row of ``time`` ns into a folder, returning its path."""

    def make(folder: str) -> str:
        path = os.path.join(folder, "ops.csv.gz")
        with gzip.open(path, "wt") as f:
            f.write(NCU_HEADER + '"","","","","byte","byte","ns"\n' + f'"0","p","ampere_sgemm","7","1","2","{time}"\n')
        return path

    return make


def with_file(make: Callable[[str], str], job: Callable[[str], Any]) -> Any:
    """``job(make(folder))`` in a fresh temporary folder."""
    with tempfile.TemporaryDirectory(prefix="solkit-adv-numbers-") as folder:
        return job(make(folder))


def float64_cases() -> list[Adv]:
    """memory() and ncu figures beyond float64: errors naming the value; edges within it work."""
    mem = LLAMA8.memory
    return [
        Adv("numbers-float64: memory batch=10**300 seq=10**300 (was inf)", lambda: mem(batch=10**300, seq=10**300).total,
            ShapeError, ValueError, ("memory(batch=", "seq=", "float64")),
        Adv("numbers-float64: memory batch=10**300 seq=1000", lambda: mem(batch=10**300, seq=1000), ShapeError,
            ValueError, ("memory(batch=", "seq=1,000", "float64")),
        Adv("numbers-float64: memory batch=1e308 (a float)", lambda: mem(batch=1e308, seq=1000), ShapeError, ValueError,
            ("batch=1e+308", "float64")),
        Adv("numbers-float64: memory with a gpu, batch=10**300", lambda: mem(batch=10**300, seq=1000, gpu="h200"),
            ShapeError, ValueError, ("memory(batch=", "float64")),
        Adv("numbers-float64: memory context=10**308", lambda: mem(batch=1, seq=1000, context=10**308), ShapeError,
            ValueError, ("context=", "kv_cache", "float64")),
        Adv("numbers-float64: memory training batch=10**300", lambda: mem(batch=10**300, seq=10**300, training=True),
            ShapeError, ValueError, ("memory(batch=", "float64")),
        Adv("numbers-float64: memory split training batch=10**200",
            lambda: mem(batch=10**200, seq=10**200, training=True, dp=2, zero=3), ShapeError, ValueError,
            ("memory(batch=", "float64")),
        Adv("numbers-float64: memory a sweep with one point beyond float64",
            lambda: mem(batch=np.array([1.0, 1e305]), seq=1000), ShapeError, ValueError, ("memory(batch=", "float64")),
        Adv("numbers-float64: memory batch beyond float64 (10**400)", lambda: mem(batch=10**400, seq=8), ShapeError,
            ValueError, ("batch", "float64")),
        # the edge float64 still holds: kv = 2 x 32 layers x 1e100 x 1 token x 1,024 (8 KV heads x 128) x 2 B
        Adv("numbers-float64: memory batch=10**100 decode: kv 2 x 32 x 1e100 x 1,024 x 2 B = 1.31072e105 B",
            lambda: check(abs(mem(batch=10**100, seq=1, context=1).kv_cache / 1.31072e105 - 1) < 1e-12, "kv"), None),
        Adv("numbers-float64: memory batch=2**40 finite", lambda: check(np.isfinite(mem(batch=2**40, seq=2048).total),
                                                                          "not finite"), None),
        Adv("numbers-float64: ncu time 1e400 ns (was inf)", lambda: ncu(time="1e400"), MeasurementError, ValueError,
            ("t.csv", "gpu__time_duration.sum", "1e400", "float64")),
        Adv("numbers-float64: ncu time 2e308 second", lambda: ncu(time="2e308", units=("byte", "byte", "second")),
            MeasurementError, ValueError, ("2e308", "float64")),
        Adv("numbers-float64: ncu time 1e400 with thousands separators", lambda: ncu(time="1,000e400"),
            MeasurementError, ValueError, ("1,000e400", "float64")),
        Adv("numbers-float64: ncu bytes read 1e400 (was OverflowError)", lambda: ncu(read="1e400"), MeasurementError,
            ValueError, ("dram__bytes_read.sum", "1e400", "float64")),
        Adv("numbers-float64: ncu bytes written 1e400", lambda: ncu(write="1e400"), MeasurementError, ValueError,
            ("dram__bytes_write.sum", "1e400")),
        Adv("numbers-float64: ncu bytes 1e300 Tbyte (1e312 B)", lambda: ncu(read="1e300", units=("Tbyte", "byte", "ns")),
            MeasurementError, ValueError, ("1e300", "Tbyte", "float64")),
        Adv("numbers-float64: ncu read + write beyond float64", lambda: ncu(read="1.7e308", write="1.7e308"),
            MeasurementError, ValueError, ("dram__bytes_read.sum + dram__bytes_write.sum", "float64")),
        Adv("numbers-float64: ncu durations summing beyond float64",
            lambda: ncu(time="1e308", units=("byte", "byte", "second"), rows=2), MeasurementError, ValueError,
            ("row 4", "sum", "float64")),
        # edges that float64 holds: 1e309 ns = 1e300 s; 1e-400 ns rounds to 0 s (a zero duration is accepted)
        Adv("numbers-float64: ncu time 1e309 ns = 1e300 s works",
            lambda: equal(ncu(time="1e309").kernels[0].seconds, 1e300), None),
        Adv("numbers-float64: ncu time 1e-400 ns is 0 s", lambda: equal(ncu(time="1e-400").kernels[0].seconds, 0.0), None),
        Adv("numbers-float64: ncu bytes 1e300 byte works",
            lambda: equal(ncu(read="1e300", write="0").kernels[0].measured_bytes, 10**300), None),
        Adv("numbers-float64: load_profile of an ncu file with time 1e400",
            lambda: with_file(ncu_file(), lambda p: sk.load_profile(p, "h200")), MeasurementError, ValueError,
            ("1e400", "float64")),
        Adv("numbers-float64: solkit profile of it (was 'kernels nan ms')",
            lambda: with_file(ncu_file(), lambda p: cli(("profile", p, "--gpu", "h200"), 2)), CLIError, ValueError,
            ("1e400", "float64")),
        Adv("numbers-float64: solkit profile --json of it (was Infinity)",
            lambda: with_file(ncu_file(), lambda p: cli(("profile", p, "--gpu", "h200", "--json"), 2)), CLIError,
            ValueError, ("1e400", "float64")),
        Adv("numbers-float64: solkit op --m 1e400", bad("op", "matmul", "--m", "1e400", "--n", "8", "--k", "8"), CLIError,
            ValueError, ("--m must", "1e400", "float64")),
        Adv("numbers-float64: solkit op --m inf (a literal inf: the op's own check)",
            bad("op", "matmul", "--m", "inf", "--n", "8", "--k", "8"), CLIError, ValueError, ("m must", "inf")),
        Adv("numbers-float64: solkit op --measured 1e400s", bad("op", "matmul", "--m", "8", "--n", "8", "--k", "8",
                                                                 "--measured", "1e400s"),
            CLIError, ValueError, ("--measured", "1e400s", "float64")),
        Adv("numbers-float64: solkit op --measured 1e300s (its ratio to T_SOL beyond float64)",
            bad("op", "matmul", "--m", "8", "--n", "8", "--k", "8", "--measured", "1e300s"), CLIError, ValueError,
            ("--measured", "float64", "T_SOL")),
        Adv("numbers-float64: search_splits global_batch=10**300", lambda: planning.search_splits(GPT2, "h200", 10**300),
            ShapeError, ValueError, ("global_batch", "float64")),
    ]


# ---- bounded work -------------------------------------------------------------------------------


def bounded_cases() -> list[Adv]:
    """The split search's candidates and the sweeps' grids: bounded, or refused before anything is allocated."""
    per_gpu = list(candidates(GPT2, 8, 8, 2**20))
    return [
        # 2**50 has the same divisors up to 16 as 2**20 (1, 2, 4, 8, 16): the same candidates, as fast
        Adv("numbers-bounded: candidates of global_batch 2**50 as many as of 2**20",
            lambda: equal(len(list(candidates(GPT2, 8, 8, 2**50))), len(per_gpu)), None, seconds=2),
        Adv("numbers-bounded: candidates of global_batch 2**53 (was a range over it)",
            lambda: check(len(list(candidates(GPT2, 8, 8, 2**53))) == len(per_gpu), "count"), None, seconds=2),
        Adv("numbers-bounded: candidates on a million nodes", lambda: list(candidates(GPT2, 8 * 10**6, 8, 2**40)), None,
            seconds=5),
        # 1,000,000,007 is prime: only dp=1 splits divide it; tp of {1, 2, 4} (12 heads), pp of {1, 2, 4, 8} within 8 / tp
        Adv("numbers-bounded: candidates of a prime global batch: dp=1 only",
            lambda: check({c[0] for c in candidates(GPT2, 8, 8, 1_000_000_007)} == {1}, "dp"), None, seconds=2),
        Adv("numbers-bounded: search_splits global_batch 2**40 within seconds",
            lambda: planning.search_splits(TINY, "h200", 2**40, 256, checkpointing=False, top=1), None, seconds=15),
        Adv("numbers-bounded: sweep m, n of a million values each (was a 7.28 TiB allocation)",
            bad("sweep", "matmul", "--m", "1:1000000", "--n", "1:1000000", "--k", "8"), CLIError, ValueError,
            ("--m 1,000,000", "--n 1,000,000", "1,000,000,000,000", "more than 1,000,000")),
        Adv("numbers-bounded: sweep 1,000 x 1,001 points (just over)",
            bad("sweep", "matmul", "--m", "1:1000", "--n", "1:1001", "--k", "8"), CLIError, ValueError,
            ("1,001,000", "more than 1,000,000")),
        Adv("numbers-bounded: sweep a list and a range, 3 x 1,000,000",
            bad("sweep", "matmul", "--m", "1,2,3", "--n", "1:1000000", "--k", "8"), CLIError, ValueError,
            ("3,000,000",)),
        Adv("numbers-bounded: sweep one axis of 10**12", bad("sweep", "matmul", "--m", "1:1000000000000", "--k", "8",
                                                             "--n", "8"), CLIError, ValueError, ("more than 1,000,000",)),
        Adv("numbers-bounded: sweep 2 x 3 works", ok("sweep", "matmul", "--m", "1:2", "--n", "1,2,3", "--k", "8",
                                                     shows=("6 points per GPU",)), None),
        Adv("numbers-bounded: sk.sweep of 10**6 x 10**6 values",
            lambda: sk.sweep(ops.matmul, "h200", m=np.arange(1, 10**6 + 1), n=np.arange(1, 10**6 + 1), k=8), ShapeError,
            ValueError, ("m 1,000,000", "n 1,000,000", "10,000,000")),
        Adv("numbers-bounded: sk.sweep of 10**4 x 10**4 lists x 2 dtypes",
            lambda: sk.sweep(ops.matmul, "h200", m=list(range(1, 10**4 + 1)), n=list(range(1, 10**4 + 1)), k=8,
                             dtype=["bf16", "fp8"]), ShapeError, ValueError, ("200,000,000", "dtype 2")),
        Adv("numbers-bounded: sk.sweep 2 x 2 x 2 dtypes: 8 rows",
            lambda: equal(len(sk.sweep(ops.matmul, "h200", m=[1, 2], n=[3, 4], k=8, dtype=["bf16", "fp8"])), 8), None),
        Adv("numbers-bounded: --rows 0 (printed 2 rows)", bad("sweep", "matmul", "--m", "1:10", "--n", "8", "--k", "8",
                                                              "--rows", "0"), CLIError, ValueError,
            ("--rows must be a positive integer", "got 0")),
        Adv("numbers-bounded: --rows -5", bad("sweep", "matmul", "--m", "1:10", "--n", "8", "--k", "8", "--rows", "-5"),
            CLIError, ValueError, ("--rows", "got -5")),
        Adv("numbers-bounded: --rows 1.5", bad("sweep", "matmul", "--m", "1:10", "--n", "8", "--k", "8", "--rows", "1.5"),
            CLIError, ValueError, ("--rows", "1.5")),
        Adv("numbers-bounded: --rows x", bad("sweep", "matmul", "--m", "1:10", "--n", "8", "--k", "8", "--rows", "x"),
            CLIError, ValueError, ("--rows",)),
        Adv("numbers-bounded: --rows 1 shows one row", ok("sweep", "matmul", "--m", "1:10", "--n", "8", "--k", "8",
                                                          "--rows", "1", shows=("(1 shown)",)), None),
        Adv("numbers-bounded: --rows 3 shows 3", ok("sweep", "matmul", "--m", "1:10", "--n", "8", "--k", "8",
                                                    "--rows", "3", shows=("(3 shown)",)), None),
        Adv("numbers-bounded: --rows 1000000 shows every point", ok("sweep", "matmul", "--m", "1:10", "--n", "8", "--k",
                                                                    "8", "--rows", "1000000", shows=("(10 shown)",)),
            None),
    ]


# ---- silent traps -------------------------------------------------------------------------------

# GPT-2 serving under autocast: fp32 weights 124,439,808 x 4 B = 497,759,232 B, and the bf16 copies autocast caches
# of every linear weight: 12 layers x 7,077,888 (qkv 768 x 2,304 + proj 768 x 768 + fc 768 x 3,072 + proj 3,072 x
# 768) + the tied head 50,257 x 768 = 38,597,376 -> 123,532,032 x 2 B = 247,064,064 B; total 744,823,296 B
AMP_WEIGHTS = 124_439_808 * 4 + (12 * 7_077_888 + 50_257 * 768) * 2
DP8 = step(GPT2, batch=8, seq=1024, dp=8)
MIXED = step(GPT2, batch=2, seq=128, dp=2, tp=2, pp=2)  # world 2 x 2 x 2 = 8
PEAK = 989.4e12  # H200 dense bf16 matrix peak, FLOP/s (its spec)


def per_gpu_mfu(w: Workload, seconds: float, **kw: Any) -> None:
    """mfu of one GPU's share equals its FLOPs / (peak x seconds), whatever agreeing n_gpus is given."""
    close(sk.mfu(w, seconds, "h200", **kw), w.flops / (PEAK * seconds))


GPT2_INFER = GPT2.forward(batch=1, seq=128)


def probe(value: Any) -> Any:
    """predict of GPT-2's eager forward with ``host_probe_us=value``."""
    return sk.predict(GPT2_INFER, "h200", warn=False, host_probe_us=value).seconds


NOTHING = Workload("nothing", [Kernel("nothing", "elementwise", "bf16")])  # no FLOPs, no bytes
COMPUTE = Workload("compute", [Kernel("compute", "gemm", "bf16", matrix_flops=1e9)])  # 1e9 FLOPs, no bytes


class Refusing(io.StringIO):
    """A stdout that refuses every write and flush with ``error`` (ENOSPC: a full disk, /dev/full)."""

    def __init__(self, error: int) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe") if self.error == errno.EPIPE else OSError(
            self.error, os.strerror(self.error))

    def flush(self) -> None:
        self.write("")


def refused(error: int, *args: str) -> tuple[int, str]:
    """(exit code, stderr) of ``solkit ARGS`` whose stdout refuses writes with ``error``."""
    err = io.StringIO()
    with redirect_stdout(Refusing(error)), redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


def full_stdout(*args: str) -> None:
    """A stdout that is full: exit 1, one 'solkit: error: cannot write' line, no traceback, not exit 3."""
    code, err = refused(errno.ENOSPC, *args)
    check(code == 1 and err.count("\n") == 1 and err.startswith("solkit: error: cannot write the output"),
          f"exit {code}, stderr {err!r}")


def closed_pipe(*args: str) -> None:
    """A reader that closed the pipe: exit 0 and nothing on stderr (the reader is done)."""
    code, err = refused(errno.EPIPE, *args)
    check(code == 0 and err == "", f"exit {code}, stderr {err!r}")


def dev_full() -> None:
    """A real `solkit gpus > /dev/full`: exit 1 and one line on stderr."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "solkit", "gpus"], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(Path(sk.__file__).parents[1])})
    check(proc.returncode == 1 and proc.stderr.count("\n") == 1 and "cannot write the output" in proc.stderr,
          f"exit {proc.returncode}, stderr {proc.stderr!r}")


MMC = ("compare", "matmul", "--n", "8", "--k", "8")


def traps_cases() -> list[Adv]:
    """amp serving, mfu's n_gpus, the probe's unit, bools in lists, compare of no work, CLI lists, stdout, commands."""
    cases = [
        # amp outside training
        Adv("numbers-traps: gpt2 serving amp=True weights 744,823,296 B (were 248,879,616)",
            lambda: equal(GPT2.memory(1, 1024, amp=True).weights, AMP_WEIGHTS), None),
        Adv("numbers-traps: serving amp=True weights equal training's",
            lambda: equal(GPT2.memory(1, 1024, amp=True).weights, GPT2.memory(1, 1024, training=True).weights), None),
        Adv("numbers-traps: serving amp=False: 124,439,808 x 2 B = 248,879,616 B",
            lambda: equal(GPT2.memory(1, 1024, amp=False).weights, 124_439_808 * 2), None),
        Adv("numbers-traps: serving amp=None (default, no autocast): 248,879,616 B",
            lambda: equal(GPT2.memory(1, 1024).weights, 124_439_808 * 2), None),
        # the residual and its input in fp32 under autocast: 1,024 x 768 x 2 x 4 B + the MLP's 2 x 3,072 x 1,024 x 2 B
        # = 6,291,456 + 12,582,912 = 18,874,368 B (above the last token's logits, 50,257 x 2 B)
        Adv("numbers-traps: serving amp=True layer working set 18,874,368 B",
            lambda: equal(GPT2.memory(1, 1024, amp=True).activations, 1024 * 768 * 2 * 4 + 2 * 3072 * 1024 * 2), None),
        Adv("numbers-traps: serving amp=True with dtype fp32", lambda: GPT2.memory(1, 1024, amp=True, dtype="fp32"),
            OptionError, ValueError, ("amp=True", "fp32")),
        Adv("numbers-traps: serving amp=True with quant", lambda: GPT2.memory(1, 1024, amp=True, quant="w4a16"),
            OptionError, ValueError, ("amp=True", "quant")),
        Adv("numbers-traps: training with context", lambda: GPT2.memory(1, 1024, training=True, context=5), OptionError,
            ValueError, ("context", "inference")),
        Adv("numbers-traps: split training with quant (was ignored)",
            lambda: GPT2.memory(1, 1024, training=True, dp=2, quant="w4a16"), OptionError, ValueError, ("quant",)),
        Adv("numbers-traps: memory kernels=5", lambda: GPT2.memory(1, 1024, kernels=5), ArgumentTypeError, TypeError,
            ("kernels",)),
        Adv("numbers-traps: memory kernels='compiled'", lambda: GPT2.memory(1, 1024, kernels="compiled"), OptionError,
            ValueError, ("kernels", "compiled")),
        Adv("numbers-traps: memory unknown keyword", lambda: GPT2.memory(1, 1024, btach=3), ArgumentTypeError, TypeError,
            ("btach", "batch")),
        Adv("numbers-traps: search_splits unknown keyword", lambda: planning.search_splits(GPT2, "h200", 8, seqlen=8),
            ArgumentTypeError, TypeError, ("seqlen", "seq")),
        # mfu of a split step: its world size
        Adv("numbers-traps: mfu of a dp=8 step, n_gpus=8 (was 1/8)", lambda: per_gpu_mfu(DP8, 1.0, n_gpus=8), None),
        Adv("numbers-traps: mfu of a dp=8 step, n_gpus default", lambda: per_gpu_mfu(DP8, 1.0), None),
        Adv("numbers-traps: mfu of a dp=8 step, n_gpus=1", lambda: per_gpu_mfu(DP8, 1.0, n_gpus=1), None),
        Adv("numbers-traps: mfu of a dp=8 step, n_gpus=np.int64(8)", lambda: per_gpu_mfu(DP8, 1.0, n_gpus=np.int64(8)),
            None),
        Adv("numbers-traps: mfu of a dp=8 step, n_gpus=[1, 8]",
            lambda: close(sk.mfu(DP8, 1.0, "h200", n_gpus=[1, 8]), np.array([DP8.flops / PEAK] * 2)), None),
        Adv("numbers-traps: mfu of a dp=8 step, n_gpus=4", lambda: sk.mfu(DP8, 1.0, "h200", n_gpus=4), MeasurementError,
            ValueError, ("n_gpus=4", "8 GPUs", "n_gpus=8")),
        Adv("numbers-traps: mfu of a dp=8 step, n_gpus=16", lambda: sk.mfu(DP8, 1.0, "h200", n_gpus=16),
            MeasurementError, ValueError, ("n_gpus=16", "8 GPUs")),
        Adv("numbers-traps: mfu of a dp=8 step, n_gpus=[1, 3]", lambda: sk.mfu(DP8, 1.0, "h200", n_gpus=[1, 3]),
            MeasurementError, ValueError, ("n_gpus=3", "8 GPUs")),
        Adv("numbers-traps: hfu of a dp=8 step, n_gpus=2", lambda: sk.hfu(DP8, 1.0, "h200", n_gpus=2), MeasurementError,
            ValueError, ("n_gpus=2",)),
        Adv("numbers-traps: hfu of a dp=8 step, n_gpus=8 = executed FLOPs / (peak x 1 s)",
            lambda: close(sk.hfu(DP8, 1.0, "h200", n_gpus=8), DP8.executed_flops / PEAK), None),
        Adv("numbers-traps: mfu of a dp=2 tp=2 pp=2 step, n_gpus=8", lambda: per_gpu_mfu(MIXED, 1.0, n_gpus=8), None),
        Adv("numbers-traps: mfu of a dp=2 tp=2 pp=2 step, n_gpus=2 (its dp only)",
            lambda: sk.mfu(MIXED, 1.0, "h200", n_gpus=2), MeasurementError, ValueError, ("n_gpus=2", "8 GPUs")),
        Adv("numbers-traps: mfu of an unsplit forward, n_gpus=8 divides by 8",
            lambda: close(sk.mfu(GPT2_INFER, 1.0, "h200", n_gpus=8), GPT2_INFER.flops / (PEAK * 8)), None),
        Adv("numbers-traps: mfu of a dp=8 step, n_gpus=True", lambda: sk.mfu(DP8, 1.0, "h200", n_gpus=True),
            ArgumentTypeError, TypeError, ("n_gpus",)),
        Adv("numbers-traps: a dp=8 step's world size is 8", lambda: equal(DP8.recipe.world, 8), None),
        # the launch probe's unit
        Adv("numbers-traps: host_probe_us=8.1e-6 (seconds; was taken)", lambda: probe(8.1e-6), OptionError, ValueError,
            ("host_probe_us", "microseconds", "8.1e-06", "seconds typed")),
        Adv("numbers-traps: host_probe_us=0.0081 (milliseconds)", lambda: probe(0.0081), OptionError, ValueError,
            ("host_probe_us", "milliseconds typed", "8.1 us")),
        Adv("numbers-traps: host_probe_us=8100 (nanoseconds)", lambda: probe(8100), OptionError, ValueError,
            ("host_probe_us", "nanoseconds typed", "8.1 us")),
        Adv("numbers-traps: host_probe_us=0.49", lambda: probe(0.49), OptionError, ValueError, ("0.5 and 1000",)),
        # 0.4 ms would be 400 us, in range but no CPU's probe (1-50 us): no slip is guessed
        Adv("numbers-traps: host_probe_us=0.4 guesses no unit", lambda: probe(0.4), OptionError, ValueError,
            ("0.5 and 1000", "no other unit")),
        Adv("numbers-traps: host_probe_us=1000.5", lambda: probe(1000.5), OptionError, ValueError, ("0.5 and 1000",)),
        Adv("numbers-traps: host_probe_us=1e300", lambda: probe(1e300), OptionError, ValueError, ("host_probe_us",)),
        Adv("numbers-traps: host_probe_us=inf", lambda: probe(float("inf")), OptionError, ValueError,
            ("host_probe_us", "positive finite")),
        Adv("numbers-traps: host_probe_us=0", lambda: probe(0.0), OptionError, ValueError, ("host_probe_us",)),
        Adv("numbers-traps: host_probe_us=True", lambda: probe(True), ArgumentTypeError, TypeError, ("host_probe_us",)),
        Adv("numbers-traps: host_probe_us=0.5 works", lambda: probe(0.5), None),
        Adv("numbers-traps: host_probe_us=1000 works", lambda: probe(1000), None),
        Adv("numbers-traps: host_probe_us=np.float64(5.67) works", lambda: probe(np.float64(5.67)), None),
        Adv("numbers-traps: host_probe_us=np.int64(6) works", lambda: probe(np.int64(6)), None),
        # compare of no work
        Adv("numbers-traps: compare of two no-work kernels: 1.0x (was nan)",
            lambda: equal(sk.compare(NOTHING, NOTHING, "h200").speedup, 1.0), None),
        Adv("numbers-traps: compare of no work: no bytes saved",
            lambda: equal(sk.compare(NOTHING, NOTHING, "h200").bytes_saved_fraction, 0.0), None),
        Adv("numbers-traps: compare of no work: to_dict and str",
            lambda: check("(1.00x)" in str(sk.compare(NOTHING, NOTHING, "h200"))
                          and sk.compare(NOTHING, NOTHING, "h200").to_dict()["speedup"] == 1.0, "text"), None),
        Adv("numbers-traps: compare a variant of no work", lambda: sk.compare(COMPUTE, NOTHING, "h200"), ShapeError,
            ValueError, ("variant", "'nothing'", "no work", "unbounded")),
        # 0 / T_SOL: the baseline takes no time, the variant some: 0.0x
        Adv("numbers-traps: compare a baseline of no work: 0.0x",
            lambda: equal(sk.compare(NOTHING, COMPUTE, "h200").speedup, 0.0), None),
        Adv("numbers-traps: bytes saved of a baseline that moves none",
            lambda: sk.compare(COMPUTE, ops.matmul(64, 64, 64), "h200").bytes_saved_fraction, ShapeError, ValueError,
            ("bytes_saved_fraction", "undefined", "24,576")),
        Adv("numbers-traps: to_dict of it: None",
            lambda: check(sk.compare(COMPUTE, ops.matmul(64, 64, 64), "h200").to_dict()["bytes_saved_fraction"] is None,
                          "not None"), None),
        # 1e9 FLOPs / 989.4e12 = 1.0107e-6 s against 64 x 64 x 64's 24,576 B / 4.8e12 = 5.12e-9 s: 197.4x
        Adv("numbers-traps: speed-up of it: 1.0107e-6 / 5.12e-9 = 197.4x",
            lambda: check(abs(sk.compare(COMPUTE, ops.matmul(64, 64, 64), "h200").speedup - (1e9 / PEAK) / (24576 / 4.8e12))
                          < 1e-9, "speedup"), None),
        # a comma list in the CLI
        Adv("numbers-traps: compare --m 1,2 (exited 3)", bad(*MMC, "--m", "1,2", "--baseline", "dtype=bf16",
                                                             "--variant", "dtype=fp8"), CLIError, ValueError,
            ("--m", "one value", "solkit sweep")),
        Adv("numbers-traps: compare --baseline m=1,2", bad(*MMC, "--m", "8", "--baseline", "m=1,2", "--variant",
                                                           "dtype=fp8"), CLIError, ValueError, ("--m", "--baseline")),
        Adv("numbers-traps: compare --variant k=1,2,3", bad(*MMC, "--m", "8", "--baseline", "dtype=bf16", "--variant",
                                                            "k=1,2,3"), CLIError, ValueError, ("--k", "1,2,3")),
        Adv("numbers-traps: compare --m 1,2 across GPUs", bad(*MMC, "--m", "1,2", "--gpu", "h200", "--gpu", "a100"),
            CLIError, ValueError, ("--m", "one value")),
        Adv("numbers-traps: op --m 1,2", bad("op", "matmul", "--m", "1,2", "--n", "8", "--k", "8"), CLIError, ValueError,
            ("--m", "one value", "solkit op")),
        Adv("numbers-traps: plot --op matmul --m 1,2", bad("plot", "--gpu", "h200", "--op", "matmul", "--m", "1,2", "--n",
                                                           "8", "--k", "8", "--out", "x.png"),
            CLIError, ValueError, ("--m", "one value")),
        Adv("numbers-traps: compare --m 8 works", ok(*MMC, "--m", "8", "--baseline", "dtype=bf16", "--variant",
                                                    "dtype=fp8", shows=("T_SOL ratio",)), None),
        Adv("numbers-traps: op conv2d --kernel 3,3 (a pair) works",
            ok("op", "conv2d", "--batch", "1", "--in-channels", "8", "--height", "8", "--width", "8", "--out-channels",
               "8", "--kernel", "3,3", shows=("T_SOL",)), None),
        # a stdout that refuses writes
        Adv("numbers-traps: gpus > a full stdout (exited 3)", lambda: full_stdout("gpus"), None),
        Adv("numbers-traps: op --json > a full stdout",
            lambda: full_stdout("op", "matmul", "--m", "8", "--n", "8", "--k", "8", "--json"), None),
        Adv("numbers-traps: op --help > a full stdout", lambda: full_stdout("op", "matmul", "--help"), None),
        Adv("numbers-traps: a full stdout and a bad input: still exit 2",
            lambda: check(refused(errno.ENOSPC, "op", "matmul", "--m", "0", "--n", "8", "--k", "8")[0] == 2, "code"),
            None),
        Adv("numbers-traps: EIO on stdout", lambda: check(refused(errno.EIO, "gpus")[0] == 1, "code"), None),
        Adv("numbers-traps: gpus | a closed pipe: quiet, exit 0", lambda: closed_pipe("gpus"), None),
        Adv("numbers-traps: table | a closed pipe", lambda: closed_pipe("table", "--gpu", "h200"), None),
        Adv("numbers-traps: a real /dev/full", dev_full, None, seconds=120),
        # a misspelt command
        Adv("numbers-traps: command tabel", bad("tabel"), CLIError, ValueError, ("invalid choice", "did you mean 'table'")),
        Adv("numbers-traps: command gpuss", bad("gpuss"), CLIError, ValueError, ("did you mean 'gpus'",)),
        Adv("numbers-traps: command proflie", bad("proflie", "x.json"), CLIError, ValueError, ("did you mean 'profile'",)),
        Adv("numbers-traps: command comapre", bad("comapre", "matmul"), CLIError, ValueError, ("did you mean 'compare'",)),
        Adv("numbers-traps: command zzz (nothing near)", bad("zzz"), CLIError, ValueError, ("invalid choice", "'zzz'",
                                                                                            "choose from")),
    ]
    # bools inside shape lists (numpy reads [True, 2] as [1, 2])
    for label, value in [("[True, 2]", [True, 2]), ("[2, False]", [2, False]), ("[[1, 2], [3, True]]", [[1, 2], [3, True]]),
                         ("(True, 2)", (True, 2)), ("[np.True_, 2]", [np.True_, 2]), ("[np.array(True), 3]",
                                                                                      [np.array(True), 3]),
                         ("[1.0, True]", [1.0, True]), ("[[True]]", [[True]]), ("np.array([True, False])",
                                                                              np.array([True, False]))]:
        cases.append(Adv(f"numbers-traps: matmul m={label}", lambda v=value: ops.matmul(v, 8, 8), ArgumentTypeError,
                         TypeError, ("m must hold numbers", "bool")))
    cases += [
        Adv("numbers-traps: matmul k=[8, True]", lambda: ops.matmul(8, 8, [8, True]), ArgumentTypeError, TypeError,
            ("k must hold numbers",)),
        Adv("numbers-traps: attention seq_q=[True, 128]", lambda: ops.attention(1, 8, [True, 128]), ArgumentTypeError,
            TypeError, ("seq_q",)),
        Adv("numbers-traps: mfu seconds=[True, 1.0]", lambda: sk.mfu(1e12, [True, 1.0], "h200"), ArgumentTypeError,
            TypeError, ("seconds must hold numbers",)),
        # 2 x m x 8 x 8 FLOPs: m = 1, 2 -> 128, 256
        Adv("numbers-traps: matmul m=[1, 2] works: 128, 256 FLOPs", lambda: equal(ops.matmul([1, 2], 8, 8).flops,
                                                                                   [128, 256]), None),
        Adv("numbers-traps: matmul m=[[1, 2], [3, 4]] works", lambda: equal(ops.matmul([[1, 2], [3, 4]], 8, 8).flops,
                                                                             [[128, 256], [384, 512]]), None),
        Adv("numbers-traps: matmul m=[np.int64(3), 4] works", lambda: equal(ops.matmul([np.int64(3), 4], 8, 8).flops,
                                                                             [384, 512]), None),
        Adv("numbers-traps: matmul m=(1, 2) works", lambda: equal(ops.matmul((1, 2), 8, 8).flops, [128, 256]), None),
    ]
    return cases


CASES: list[Adv] = zero_cases() + float64_cases() + bounded_cases() + traps_cases()
