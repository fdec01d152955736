#!/usr/bin/env python3
"""Time Triton kernels over random shapes x random configs of their tuning spaces (torch + triton only).

Three kernels, each the plain form of Triton's tutorials:
  matmul     the tutorial's bf16 GEMM: one program per C tile, grouped ordering (GROUP_M), fp32 accumulate, masked
             loads along k and a masked store (SPLIT_K = 1)
  layernorm  the tutorial's fused LayerNorm forward: one program per row, three passes over the row in BLOCK_SIZE
             chunks (mean, variance, normalize and store), bf16 in and out, fp32 statistics
  softmax    the tutorial's fused softmax (its one-program-per-row form): the whole row in one BLOCK_SIZE block,
             bf16 in and out, fp32 max, exp and sum (the test draw only: no parameter is fitted on it)
  attention  a flash attention forward simplified from the tutorial's fused attention: one program per BLOCK_M queries
             of one (batch, head), a loop over BLOCK_N keys with an online softmax (exp2), bf16 in and out, causal or
             not (causal: the loop stops at the diagonal block, the mask is applied to every block of the loop)

Shapes come from declared spaces (SPACES below, log-uniform sides, half of them aligned), configs from the declared
config grids (GRIDS), both drawn with the seed of the set. Every config of the set is timed on every shape of the set.
Timing: triton.testing.do_bench(fn, warmup, rep, return_mode="median"): CUDA events around each call, the L2 flushed
by do_bench's own 256 MB buffer zeroed before every timed call. Inputs are random normal, never zeros. One config per
shape is checked against torch (relative Frobenius error). Compilation: a pool of worker processes launches every
(config, specialization) once on small tensors first, so that the timed process loads each kernel from Triton's cache.

    python3 measure_triton.py --sets fit,validation --out result.json [--budget-s 300]
    python3 measure_triton.py --sets test --out result.json --after COMMIT
    python3 measure_triton.py --dry-run --sets fit      # the drawn shapes and configs, no GPU needed
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from typing import Any

SCRIPT_VERSION = "1.2"  # 1.1: SPILL_LIMIT (seed 3206 ran it); 1.2: the untimed config's message reworded

#: the seed of each set: shapes and configs are drawn with it (the test set's configs are new too). NB: the first test
#: draw was seed 3203 (40 GEMM, 24 LayerNorm, 20 attention shapes), measured after 58b55ce and spent once the model
#: changed after it; the script as of d41e511 draws it. The second, seed 3204 (24 / 12 / 10 shapes, measured after
#: 3cc53f3), was spent when the model's shared-memory and unaligned-load terms were chosen looking at it; the script
#: as of 3d2a4e2 draws it. The third, seed 3205 (40 / 16 / 14 / 12 softmax shapes, measured after 4b57715), is the
#: test of the model before mma.sync's warp grid followed Triton's warpsPerTileV2; the script as of 2cfcb71 draws it.
#: The fourth, seed 3206 (GEMM only, measured after f26b086; the script as of 524e915 draws it), and seed 3205 were
#: spent on the diagnosis of the GEMM's top-1 misses (docs/tune.md). The next test draw is seed 3207
SEEDS = {"fit": 3201, "validation": 3202, "test": 3207}
#: a config whose compile spilled more registers than this is not timed (script version 1.1): in the seed-3206 draw's
#: first run (not committed: it stopped at its third shape) a GEMM of BLOCK 256 x 16 x 128 on 2 warps (2,836 spilled)
#: hit an illegal memory access on (66, 1981, 1738), which left the CUDA context unusable for every later config and
#: shape. Only that one faulted: 89 configs of the earlier files spilled 1,025-2,750 and ran; the limit trades them for
#: a run that finishes (such a kernel is slow where it runs: one of 1,928 spilled took 67x and 90x the shape's best in
#: that first run). Spills are per specialization (an aligned shape's compile of the same config may spill little)
SPILL_LIMIT = 1024
#: the set whose seed draws a set's configs (validation reuses the fit's configs on new shapes: half the compiles)
CONFIG_SET = {"fit": "fit", "validation": "fit", "test": "test"}
#: shapes per set and kernel, configs per set and kernel
COUNTS = {
    "fit": {"matmul": (24, 36), "layernorm": (18, 30), "attention": (16, 24)},
    "validation": {"matmul": (16, 36), "layernorm": (12, 30), "attention": (10, 24)},
    "test": {"matmul": (40, 36), "layernorm": (16, 30), "attention": (14, 24), "softmax": (12, 9)},
}

#: the declared shape spaces
SPACES: dict[str, Any] = {
    "matmul": {"m": [64, 8192], "n": [64, 8192], "k": [64, 8192], "log_uniform": True,
               "aligned_share": 0.5, "aligned_to": 128, "dtype": "bf16", "layout": "A[m,k] row-major, B[k,n] row-major"},
    "layernorm": {"rows": [256, 65536], "cols": [256, 16384], "log_uniform": True, "aligned_share": 0.5,
                  "aligned_to": 64, "max_elements": 2**27, "dtype": "bf16"},
    "softmax": {"rows": [256, 65536], "cols": [512, 4096], "log_uniform": True, "aligned_share": 0.5,
                "aligned_to": 64, "max_elements": 2**27, "dtype": "bf16"},
    "attention": {"seq": [256, 8192], "seq_multiple": 128, "head_dim": [64, 128], "causal": [False, True],
                  "batch_heads_tokens": [2**15, 2**17], "heads": 16, "log_uniform": True, "dtype": "bf16",
                  "layout": "q, k, v, o [batch, heads, seq, head_dim] contiguous"},
}

#: the declared config grids (a config's accumulator or row chunk must fit 128 fp32 registers a thread: see filters)
GRIDS: dict[str, Any] = {
    "matmul": {"BLOCK_M": [16, 32, 64, 128, 256], "BLOCK_N": [16, 32, 64, 128, 256], "BLOCK_K": [16, 32, 64, 128],
               "GROUP_M": [1, 4, 8, 16], "num_warps": [2, 4, 8], "num_stages": [2, 3, 4, 5],
               "filter": "BLOCK_M * BLOCK_N / (32 * num_warps) <= 128"},
    "layernorm": {"BLOCK_SIZE": [256, 512, 1024, 2048, 4096, 8192, 16384], "num_warps": [1, 2, 4, 8, 16],
                  "filter": "BLOCK_SIZE / (32 * num_warps) <= 64"},
    "attention": {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64, 128], "num_warps": [4, 8], "num_stages": [1, 2, 3, 4],
                  "filter": "none"},
    "softmax": {"BLOCK_SIZE": [4096, 8192], "num_warps": [1, 2, 4, 8, 16, 32],
                "filter": "BLOCK_SIZE / (32 * num_warps) <= 64 (every BLOCK_SIZE holds a row of the space)"},
}


# ---- drawing: pure Python ---------------------------------------------------------------------------


def _log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _grid(kernel: str) -> list[dict[str, int]]:
    g = GRIDS[kernel]
    names = [k for k in g if k != "filter"]
    out: list[dict[str, int]] = [{}]
    for name in names:
        out = [{**c, name: v} for c in out for v in g[name]]
    if kernel == "matmul":
        out = [c for c in out if c["BLOCK_M"] * c["BLOCK_N"] / (32 * c["num_warps"]) <= 128]
    elif kernel in ("layernorm", "softmax"):
        out = [c for c in out if c["BLOCK_SIZE"] / (32 * c["num_warps"]) <= 64]
    return out


def draw_configs(kernel: str, set_name: str, seeds: dict[str, int] = SEEDS) -> list[dict[str, int]]:
    """``count`` configs of the kernel's grid, without replacement, seeded by the set."""
    rng = random.Random(seeds[CONFIG_SET[set_name]] * 7 + len(kernel))
    grid = _grid(kernel)
    count = min(COUNTS[set_name][kernel][1], len(grid))
    return rng.sample(grid, count)


def draw_shapes(kernel: str, set_name: str, seeds: dict[str, int] = SEEDS) -> list[dict[str, Any]]:
    """The set's shapes of the kernel's declared space."""
    rng = random.Random(seeds[set_name] * 13 + len(kernel))
    count = COUNTS[set_name][kernel][0]
    sp = SPACES[kernel]
    shapes: list[dict[str, Any]] = []
    while len(shapes) < count:
        if kernel == "matmul":
            aligned = rng.random() < sp["aligned_share"]
            s = {d: _log_uniform(rng, *sp[d]) for d in ("m", "n", "k")}
            if aligned:
                s = {d: max(sp["aligned_to"], round(v / sp["aligned_to"]) * sp["aligned_to"]) for d, v in s.items()}
            shapes.append({**s, "aligned": aligned})
        elif kernel in ("layernorm", "softmax"):
            aligned = rng.random() < sp["aligned_share"]
            rows, cols = _log_uniform(rng, *sp["rows"]), _log_uniform(rng, *sp["cols"])
            if aligned:
                cols = max(sp["aligned_to"], round(cols / sp["aligned_to"]) * sp["aligned_to"])
            if rows * cols > sp["max_elements"]:
                continue
            shapes.append({"rows": rows, "cols": cols, "aligned": aligned})
        else:
            seq = _log_uniform(rng, *sp["seq"])
            seq = max(sp["seq_multiple"], round(seq / sp["seq_multiple"]) * sp["seq_multiple"])
            tokens = _log_uniform(rng, *sp["batch_heads_tokens"])
            bh = max(1, round(tokens / seq))
            heads = min(sp["heads"], bh)
            batch = max(1, round(bh / heads))
            shapes.append({"batch": batch, "heads": heads, "seq": seq, "head_dim": rng.choice(sp["head_dim"]),
                           "causal": rng.choice(sp["causal"])})
    return shapes


# ---- the kernels (defined once triton is imported) ----------------------------------------------------

_K: dict[str, Any] = {}


def _define_kernels() -> None:
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["M"])  # M's divisibility only masks the store: one compile less per shape class
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        pid = tl.program_id(axis=0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        num_pid_in_group = GROUP_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c = acc.to(tl.bfloat16)
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, c, mask=c_mask)

    @triton.jit
    def layernorm_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        Y += row * stride
        X += row * stride
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            w = tl.load(W + cols, mask=mask).to(tl.float32)
            b = tl.load(B + cols, mask=mask).to(tl.float32)
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            x_hat = (x - mean) * rstd
            y = x_hat * w + b
            tl.store(Y + cols, y.to(tl.bfloat16), mask=mask)

    @triton.jit
    def attention_kernel(Q, K, V, Out, sm_scale, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
        start_m = tl.program_id(0)
        off_hz = tl.program_id(1)
        base = off_hz.to(tl.int64) * N_CTX * HEAD_DIM
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, HEAD_DIM)
        q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
        m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        qk_scale = sm_scale * 1.44269504
        if CAUSAL:
            hi = (start_m + 1) * BLOCK_M
        else:
            hi = N_CTX
        for start_n in range(0, hi, BLOCK_N):
            cols = start_n + offs_n
            k = tl.load(K + base + cols[None, :] * HEAD_DIM + offs_d[:, None])
            qk = tl.dot(q, k)
            if CAUSAL:
                qk = tl.where(offs_m[:, None] >= cols[None, :], qk, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
            alpha = tl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            v = tl.load(V + base + cols[:, None] * HEAD_DIM + offs_d[None, :])
            acc = tl.dot(p.to(tl.bfloat16), v, acc)
            m_i = m_ij
        acc = acc / l_i[:, None]
        tl.store(Out + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.bfloat16))

    @triton.jit
    def softmax_kernel(Y, X, x_stride, y_stride, n_cols, BLOCK_SIZE: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(X + row * x_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        y = num / tl.sum(num, axis=0)
        tl.store(Y + row * y_stride + cols, y.to(tl.bfloat16), mask=mask)

    _K.update(matmul=matmul_kernel, layernorm=layernorm_kernel, attention=attention_kernel, softmax=softmax_kernel)


# ---- building and launching ----------------------------------------------------------------------------


def build(kernel: str, shape: dict[str, Any]) -> dict[str, Any]:
    """Random device tensors of the shape (never zeros)."""
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(zlib.crc32(json.dumps(shape, sort_keys=True).encode()) % 2**31)
    bf = torch.bfloat16
    if kernel == "matmul":
        a = torch.randn(shape["m"], shape["k"], device="cuda", dtype=bf, generator=g)
        b = torch.randn(shape["k"], shape["n"], device="cuda", dtype=bf, generator=g)
        c = torch.empty(shape["m"], shape["n"], device="cuda", dtype=bf)
        return {"a": a, "b": b, "c": c}
    if kernel == "layernorm":
        x = torch.randn(shape["rows"], shape["cols"], device="cuda", dtype=bf, generator=g)
        w = torch.rand(shape["cols"], device="cuda", dtype=bf, generator=g) + 0.5
        bias = torch.randn(shape["cols"], device="cuda", dtype=bf, generator=g)
        y = torch.empty_like(x)
        mean = torch.empty(shape["rows"], device="cuda", dtype=torch.float32)
        rstd = torch.empty_like(mean)
        return {"x": x, "w": w, "b": bias, "y": y, "mean": mean, "rstd": rstd}
    if kernel == "softmax":
        x = torch.randn(shape["rows"], shape["cols"], device="cuda", dtype=bf, generator=g)
        return {"x": x, "y": torch.empty_like(x)}
    dims = (shape["batch"], shape["heads"], shape["seq"], shape["head_dim"])
    q, k, v = (torch.randn(*dims, device="cuda", dtype=bf, generator=g) for _ in range(3))
    return {"q": q, "k": k, "v": v, "o": torch.empty_like(q)}


def launcher(kernel: str, shape: dict[str, Any], t: dict[str, Any], cfg: dict[str, int]) -> Any:
    """A no-argument callable that launches the kernel once."""
    import triton

    kern = _K[kernel]
    if kernel == "matmul":
        m, n, k = shape["m"], shape["n"], shape["k"]
        a, b, c = t["a"], t["b"], t["c"]
        grid = (triton.cdiv(m, cfg["BLOCK_M"]) * triton.cdiv(n, cfg["BLOCK_N"]),)

        def run_mm() -> Any:
            return kern[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                       BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg["GROUP_M"],
                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        return run_mm
    if kernel == "layernorm":
        rows, cols = shape["rows"], shape["cols"]

        def run_ln() -> Any:
            return kern[(rows,)](t["x"], t["y"], t["w"], t["b"], t["mean"], t["rstd"], t["x"].stride(0), cols, 1e-5,
                          BLOCK_SIZE=cfg["BLOCK_SIZE"], num_warps=cfg["num_warps"])
        return run_ln
    if kernel == "softmax":
        rows, cols = shape["rows"], shape["cols"]

        def run_sm() -> Any:
            return kern[(rows,)](t["y"], t["x"], t["x"].stride(0), t["y"].stride(0), cols,
                                 BLOCK_SIZE=cfg["BLOCK_SIZE"], num_warps=cfg["num_warps"])
        return run_sm
    seq, d = shape["seq"], shape["head_dim"]
    grid = (triton.cdiv(seq, cfg["BLOCK_M"]), shape["batch"] * shape["heads"])
    scale = 1.0 / math.sqrt(d)

    def run_attn() -> Any:
        return kern[grid](t["q"], t["k"], t["v"], t["o"], scale, seq, HEAD_DIM=d, BLOCK_M=cfg["BLOCK_M"],
                   BLOCK_N=cfg["BLOCK_N"], CAUSAL=shape["causal"], num_warps=cfg["num_warps"],
                   num_stages=cfg["num_stages"])
    return run_attn


def output_of(kernel: str, t: dict[str, Any]) -> Any:
    return t["c"] if kernel == "matmul" else t["y"] if kernel in ("layernorm", "softmax") else t["o"]


def reference(kernel: str, shape: dict[str, Any], t: dict[str, Any]) -> Any:
    """The same function in float32 through torch."""
    import torch

    if kernel == "matmul":
        return t["a"].float() @ t["b"].float()
    if kernel == "layernorm":
        return torch.nn.functional.layer_norm(t["x"].float(), (shape["cols"],), t["w"].float(), t["b"].float(), 1e-5)
    if kernel == "softmax":
        return torch.softmax(t["x"].float(), dim=-1)
    return torch.nn.functional.scaled_dot_product_attention(t["q"].float(), t["k"].float(), t["v"].float(),
                                                            is_causal=shape["causal"])


def torch_callable(kernel: str, shape: dict[str, Any], t: dict[str, Any]) -> Any:
    """The library's own kernel for the shape (cuBLAS, ATen's layer_norm, SDPA): a reference time."""
    import torch

    if kernel == "matmul":
        return lambda: torch.matmul(t["a"], t["b"], out=t["c"])
    if kernel == "layernorm":
        return lambda: torch.nn.functional.layer_norm(t["x"], (shape["cols"],), t["w"], t["b"], 1e-5)
    if kernel == "softmax":
        return lambda: torch.softmax(t["x"], dim=-1)
    return lambda: torch.nn.functional.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=shape["causal"])


def specialization_shape(kernel: str, shape: dict[str, Any]) -> dict[str, Any]:
    """A small shape that Triton specializes the same way (each integer argument's divisibility by 16)."""
    if kernel == "matmul":
        return {"m": 64} | {d: (64 if shape[d] % 16 == 0 else 65) for d in ("n", "k")} | {"aligned": False}
    if kernel in ("layernorm", "softmax"):
        return {"rows": 4, "cols": 256 if shape["cols"] % 16 == 0 else 257, "aligned": False}
    return {"batch": 1, "heads": 1, "seq": 256, "head_dim": shape["head_dim"], "causal": shape["causal"]}


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    return text[:300]


# ---- the warm-up pool ---------------------------------------------------------------------------------


def warm_task(task: tuple[str, dict[str, Any], dict[str, int]]) -> tuple[str, str, str | None, dict[str, Any]]:
    """Compile and launch one (kernel, specialization, config) on small tensors: the error text if it fails, and the
    compiled kernel's registers per thread, spilled registers and shared memory (bytes)."""
    kernel, small, cfg = task
    key = json.dumps([kernel, small, cfg], sort_keys=True)
    try:
        import torch

        if not _K:
            _define_kernels()
        t = build(kernel, small)
        compiled = launcher(kernel, small, t, cfg)()
        torch.cuda.synchronize()
        res: dict[str, Any] = {}
        for name, get in (("n_regs", lambda c: c.n_regs), ("n_spills", lambda c: c.n_spills),
                          ("shared", lambda c: c.metadata.shared)):
            try:
                res[name] = int(get(compiled))
            except Exception:  # noqa: BLE001 - a triton without the field
                res[name] = None
        return kernel, key, None, res
    except Exception as exc:  # noqa: BLE001 - recorded as the config's reason
        return kernel, key, _short(exc), {}


def warm_up(tasks: list[tuple[str, dict[str, Any], dict[str, int]]], workers: int, deadline_s: float,
            resources: dict[str, dict[str, Any]]) -> dict[str, str | None]:
    """Every task's error (None: compiled and ran); a task the pool had not finished by the deadline is refused."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    done: dict[str, str | None] = {}
    resources.clear()
    end = time.time() + deadline_s
    pool = ctx.Pool(workers)
    try:
        it = pool.imap_unordered(warm_task, tasks, chunksize=1)
        for _ in tasks:
            try:
                _, key, err, res = it.next(timeout=max(0.1, end - time.time()))
            except mp.TimeoutError:
                break
            done[key] = err
            resources[key] = res
    finally:
        pool.terminate()
    for k, small, cfg in tasks:
        done.setdefault(json.dumps([k, small, cfg], sort_keys=True), f"not compiled within the {deadline_s:g} s warm-up")
    return done


# ---- the environment -----------------------------------------------------------------------------------


def _smi(fields: str) -> str:
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=20).stdout.strip()
    except Exception as exc:  # noqa: BLE001
        return f"unavailable: {_short(exc)}"


def environment() -> dict[str, Any]:
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    env: dict[str, Any] = {
        "gpu_name": props.name, "sm_count": props.multi_processor_count,
        "compute_capability": f"{props.major}.{props.minor}", "l2_bytes": getattr(props, "L2_cache_size", None),
        "torch_version": torch.__version__, "triton_version": triton.__version__, "cuda_version": torch.version.cuda,
        "python_version": sys.version.split()[0],
        "nvidia_smi_fields": "driver_version,name,clocks.max.sm,clocks.sm,clocks.mem,clocks.max.mem",
        "nvidia_smi": _smi("driver_version,name,clocks.max.sm,clocks.sm,clocks.mem,clocks.max.mem"),
    }
    try:
        from triton.runtime import driver

        env["triton_device_properties"] = dict(driver.active.utils.get_device_properties(0))
    except Exception as exc:  # noqa: BLE001
        env["triton_device_properties"] = f"unavailable: {_short(exc)}"
    try:
        import importlib

        importlib.import_module("triton.ops.matmul_perf_model")
        env["triton_matmul_perf_model"] = "triton.ops.matmul_perf_model importable"
    except Exception as exc:  # noqa: BLE001
        env["triton_matmul_perf_model"] = f"absent from this triton ({_short(exc)})"
    return env


# ---- the run ------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="fit,validation", help="comma-separated: fit, validation, test")
    ap.add_argument("--kernels", default="matmul,layernorm,attention,softmax",
                    help="comma-separated; a kernel the set has no count for is skipped (softmax: the test set only)")
    ap.add_argument("--out", default="tune_result.json")
    ap.add_argument("--after", default=None, help="the commit that froze the model (a test set)")
    ap.add_argument("--budget-s", type=float, default=300.0, help="stop timing new shapes after this many seconds")
    ap.add_argument("--compile-deadline-s", type=float, default=100.0)
    ap.add_argument("--warmup-ms", type=float, default=3.0)
    ap.add_argument("--rep-ms", type=float, default=15.0)
    ap.add_argument("--workers", type=int, default=0, help="compile workers (0: the CPU count)")
    ap.add_argument("--test-seed", type=int, default=SEEDS["test"],
                    help="the test set's seed (another GPU's test draws: the H100 SXM's are 3270-3272)")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    kernels = [k for k in args.kernels.split(",") if k]
    seeds = {**SEEDS, "test": args.test_seed}
    plan = {s: {k: {"shapes": draw_shapes(k, s, seeds), "configs": draw_configs(k, s, seeds)} for k in kernels
                if k in COUNTS[s]} for s in sets}
    if args.dry_run:
        for s in sets:
            for k in plan[s]:
                p = plan[s][k]
                print(s, k, len(p["shapes"]), "shapes", len(p["configs"]), "configs", "of", len(_grid(k)))
                print("  ", p["shapes"][:4])
        return 0

    t0 = time.time()
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(tempfile.gettempdir(), "solkit_tune_triton_cache"))
    import torch
    import triton.testing

    here = os.path.abspath(__file__)
    result: dict[str, Any] = {
        "protocol": {
            "script": "benchmarks/tune/measure_triton.py", "script_version": SCRIPT_VERSION, "spill_limit": SPILL_LIMIT,
            "script_sha256": hashlib.sha256(open(here, "rb").read()).hexdigest(),
            "sets": sets, "seeds": {s: seeds[s] for s in sets}, "counts": {s: COUNTS[s] for s in sets},
            "spaces": SPACES, "grids": GRIDS, "after": args.after,
            "timing": (f"triton.testing.do_bench(fn, warmup={args.warmup_ms} ms, rep={args.rep_ms} ms, "
                       "return_mode='median'): CUDA events around each call, the L2 flushed by do_bench's own 256 MB "
                       "buffer zeroed before every timed call; random normal inputs; one config per shape checked "
                       "against torch in fp32 (relative Frobenius error)"),
            "compile": "every (config, specialization) launched once on small tensors in a pool of spawned workers",
            "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "budget_s": args.budget_s,
        },
        "environment": environment(),
        "sets": {},
    }

    def save() -> None:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=None, separators=(",", ":"))
        os.replace(tmp, args.out)

    # compile every (kernel, specialization, config) once, in parallel
    tasks: list[tuple[str, dict[str, Any], dict[str, int]]] = []
    seen: set[str] = set()
    for s in sets:
        for k in plan[s]:
            for shape in plan[s][k]["shapes"]:
                small = specialization_shape(k, shape)
                for cfg in plan[s][k]["configs"]:
                    key = json.dumps([k, small, cfg], sort_keys=True)
                    if key not in seen:
                        seen.add(key)
                        tasks.append((k, small, cfg))
    workers = args.workers or os.cpu_count() or 4
    print(f"warm-up: {len(tasks)} compiles on {workers} workers", flush=True)
    resources: dict[str, dict[str, Any]] = {}
    warm = warm_up(tasks, workers, args.compile_deadline_s, resources)
    result["protocol"]["compile_s"] = round(time.time() - t0, 1)
    result["protocol"]["compiles"] = len(tasks)
    print(f"warm-up done at {time.time() - t0:.1f} s; {sum(e is not None for e in warm.values())} failed", flush=True)

    _define_kernels()
    stopped = False
    order: list[tuple[str, str, dict[str, Any]]] = []  # round robin over sets and kernels: a budget cuts evenly
    for s in sets:
        result["sets"][s] = {k: {"configs": plan[s][k]["configs"], "shapes": []} for k in plan[s]}
    longest = max(len(plan[s][k]["shapes"]) for s in sets for k in plan[s])
    for i in range(longest):
        for s in sets:
            for k in plan[s]:
                if i < len(plan[s][k]["shapes"]):
                    order.append((s, k, plan[s][k]["shapes"][i]))
    for s, k, shape in order:
        configs = plan[s][k]["configs"]
        rows: list[dict[str, Any]] = result["sets"][s][k]["shapes"]
        if time.time() - t0 > args.budget_s:
            stopped = True
            break
        small = specialization_shape(k, shape)
        t = build(k, shape)
        seconds: list[float | None] = []
        errors: list[str | None] = []
        compiled = [resources.get(json.dumps([k, small, cfg], sort_keys=True), {}) for cfg in configs]
        check = None
        for i, cfg in enumerate(configs):
            err = warm.get(json.dumps([k, small, cfg], sort_keys=True))
            spills = compiled[i].get("n_spills") or 0
            if err is None and spills > SPILL_LIMIT:
                err = f"not timed: {spills} registers spilled (more than SPILL_LIMIT, {SPILL_LIMIT}: one such kernel faulted)"
            if err is not None:
                seconds.append(None)
                errors.append(err)
                continue
            fn = launcher(k, shape, t, cfg)
            try:
                ms = triton.testing.do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median")
                seconds.append(ms * 1e-3)
                errors.append(None)
            except Exception as exc:  # noqa: BLE001
                seconds.append(None)
                errors.append(_short(exc))
                continue
            if check is None:
                out = output_of(k, t)
                out.fill_(float("nan"))
                fn()
                ref = reference(k, shape, t)
                got = out.float()
                check = {"config": i, "rel_err": float((got - ref).norm() / ref.norm())}
                del ref, got
        lib_error = None
        try:
            lib = triton.testing.do_bench(torch_callable(k, shape, t), warmup=args.warmup_ms, rep=args.rep_ms,
                                          return_mode="median") * 1e-3
        except Exception as exc:  # noqa: BLE001
            lib = None
            lib_error = _short(exc)
        rows.append({**shape, "seconds": seconds, "errors": errors, "compiled": compiled, "check": check,
                     "library_seconds": lib,
                     "library_error": lib_error})
        del t
        ok = [x for x in seconds if x is not None]
        print(json.dumps({"set": s, "kernel": k, **shape, "best_us": round(min(ok) * 1e6, 2) if ok else None,
                          "worst_us": round(max(ok) * 1e6, 2) if ok else None, "ran": len(ok),
                          "lib_us": round(lib * 1e6, 2) if lib else None, "check": check,
                          "t": round(time.time() - t0, 1)}), flush=True)
        save()
        torch.cuda.empty_cache()
    result["protocol"]["elapsed_s"] = round(time.time() - t0, 1)
    result["protocol"]["stopped_by_budget"] = stopped
    result["environment"]["nvidia_smi_end"] = _smi("driver_version,name,clocks.max.sm,clocks.sm,clocks.mem,clocks.max.mem")
    save()
    print(json.dumps({"done": True, "elapsed_s": result["protocol"]["elapsed_s"], "stopped_by_budget": stopped}))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        traceback.print_exc()
        sys.exit(1)
