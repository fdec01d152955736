"""Random cases from a declared space per op family (no torch, no solkit): the sampling protocol.

Instead of hand-picked grids, ``sample_set(name, n, seed)`` draws ``Case`` objects at random from
``SPACE``, a declared space per op family, using only the standard library's ``random.Random(seed)``.
Every drawn case uses an ``impl`` that ``builders.BUILDERS`` provides and names its solkit op and kwargs
exactly as the catalogue (``cases.py``) does, so ``getattr(solkit.ops, row["op"])(**row["params"])``
rebuilds the workload.

``SPACE`` (one entry per family; ``weight`` is the family's share of the draws):
  * sizes ``(lo, hi)`` are integers drawn log-uniformly in [lo, hi] (both ends included);
  * ``unaligned`` is the share of cases whose alignment-sensitive dims (matmul/bmm k or n, the norm
    width, softmax cols, elementwise elements, conv channels) are forced off a multiple of ``ALIGN`` (8
    elements); in the other cases those dims are rounded to a multiple of 8 (16 for fp8, as
    ``_scaled_mm`` requires; int8 also needs m > 16, so its m is raised to 17 at least);
  * ``dtypes`` maps each precision to its probability; fp8 runs through ``torch._scaled_mm`` and int8
    through ``torch._int_mm`` (aligned only), tf32 as fp32 tensors with TF32 matmuls allowed;
  * the remaining keys are the family's discrete choices (kernel sizes, layouts, head dims...).
The caps ``MAX_KERNEL_S`` (one call's time by ``cases.rough_kernel_seconds``) and ``MAX_BYTES`` (the
tensors a case allocates, ``footprint_bytes``) are enforced by rejection: a draw over a cap is drawn
again from the same stream (same family, same unaligned/aligned choice), so the sizes are log-uniform
conditioned on fitting the caps. Log-uniform sizes put most cases at small sizes: about half of them
are estimated at the ~5 us launch floor.

Sets. A case's set follows from its id alone: ``int(sha256(id), 16) % 10`` is 0-5 for ``fit``, 6-7 for
``validation`` and 8-9 for ``test``. The sets are disjoint by construction, and drawing more cases never
moves a case from one set to another. ``sample_set`` walks one seeded stream (the same for every set) and
keeps the draws that hash into the requested set, skipping ids already drawn, until it has ``n``: the
same seed and ``n`` give the same cases, and a larger ``n`` extends the smaller list. Every sampled case is
tier 1 and primary; about 1 in 20 is spot-checked against float64 (only where the reference is small).

    python3 benchmarks/measure_h200.py --sample fit --sample-n 320 --out "$OUT/h200_fit.json"
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterator
from typing import Any, Optional, Sequence

from .cases import ELEM_BYTES, MATMUL_OUT_BYTES, Case, _attn, _conv, _norm_case, mm_case, rough_kernel_seconds

ALIGN = 8  # elements: cuBLAS/cuDNN fast paths want k, n and channels a multiple of this
MAX_KERNEL_S = 0.05  # one call's rough device time (cases.rough_kernel_seconds), seconds
MAX_BYTES = 16e9  # tensors one case allocates (footprint_bytes)
CHECK_SHARE = 0.05  # about 1 in 20 cases spot-checked against float64 ...
CHECK_MAX_BYTES = 1e9  # ... where the float64 reference stays small
DEFAULT_SEED = 2026
DEFAULT_N = 320
SETS: dict[str, tuple[int, ...]] = {"fit": (0, 1, 2, 3, 4, 5), "validation": (6, 7), "test": (8, 9)}

_FLOAT_MM = {"bf16": 0.34, "fp16": 0.16, "tf32": 0.16, "fp32": 0.10}
SPACE: dict[str, dict[str, Any]] = {
    "matmul": {"weight": 0.20, "m": (1, 16384), "n": (1, 16384), "k": (1, 16384), "unaligned": 0.25,
               "dtypes": {**_FLOAT_MM, "fp8_e4m3": 0.14, "int8": 0.10}},
    "bmm": {"weight": 0.07, "batch": (2, 64), "m": (1, 8192), "n": (1, 8192), "k": (1, 8192), "unaligned": 0.25,
            "dtypes": {"bf16": 0.45, "fp16": 0.2, "tf32": 0.2, "fp32": 0.15}},
    "layernorm": {"weight": 0.07, "tokens": (1, 65536), "d_model": (64, 16384), "unaligned": 0.25,
                  "dtypes": {"bf16": 0.6, "fp16": 0.2, "fp32": 0.2}},
    "rmsnorm": {"weight": 0.07, "tokens": (1, 65536), "d_model": (64, 16384), "unaligned": 0.25,
                "dtypes": {"bf16": 0.6, "fp16": 0.2, "fp32": 0.2}},
    "softmax": {"weight": 0.07, "rows": (1, 65536), "cols": (16, 131072), "unaligned": 0.25,
                "dtypes": {"bf16": 0.6, "fp16": 0.2, "fp32": 0.2}},
    "elementwise": {"weight": 0.10, "elements": (1024, 2 ** 29), "unaligned": 0.25,
                    "ops": ("add", "copy", "gelu", "silu"), "dtypes": {"bf16": 0.6, "fp16": 0.2, "fp32": 0.2}},
    "embedding": {"weight": 0.06, "tokens": (1, 65536), "vocab": (1000, 262144), "d_model": (64, 8192),
                  "unaligned": 0.25, "dtypes": {"bf16": 0.7, "fp16": 0.15, "fp32": 0.15}},
    "conv2d": {"weight": 0.14, "batch": (1, 64), "channels": (3, 1024), "hw": (7, 224), "kernel": (1, 3, 5, 7),
               "stride": (1, 2), "depthwise": 0.2, "layouts": ("nhwc", "nchw"), "unaligned": 0.25,
               "dtypes": {"bf16": 0.75, "fp16": 0.25}},  # padding = kernel // 2 ("same")
    "attention": {"weight": 0.12, "batch": (1, 32), "heads": (1, 64), "seq": (16, 16384), "cross": 0.3,
                  "head_dim": (64, 128), "gqa": 0.5, "causal": 0.5, "dtypes": {"bf16": 0.75, "fp16": 0.25}},
    "decode": {"weight": 0.10, "batch": (1, 64), "heads": (1, 64), "seq_kv": (128, 32768), "head_dim": (64, 128),
               "gqa": 0.6, "dtypes": {"bf16": 0.75, "fp16": 0.25}},
}
#: families drawn only when asked for (``--sample-families``): adding them to SPACE would change every seed's draw.
#: "sdpa": F.scaled_dot_product_attention with no backend forced (what PyTorch picks for the shape, dtype and
#: GQA); a third of the cases decode one query against a cache; head dims include ones no fused kernel takes
EXTRA_SPACE: dict[str, dict[str, Any]] = {
    "sdpa": {"weight": 1.0, "batch": (1, 32), "heads": (1, 64), "seq": (16, 8192), "seq_kv": (16, 32768),
             "decode": 0.35, "cross": 0.3, "head_dim": (64, 80, 96, 128, 256, 72), "gqa": 0.5, "causal": 0.5,
             "dtypes": {"bf16": 0.6, "fp16": 0.2, "fp32": 0.2}},
    # dst.copy_(src) between precisions: what eager AMP runs around every linear layer (weights and activations
    # cast down, gradients and logits cast up)
    "cast": {"weight": 1.0, "elements": (1024, 2 ** 29), "unaligned": 0.25,
             "pairs": (("fp32", "bf16"), ("bf16", "fp32"), ("fp32", "fp16"), ("fp16", "fp32")),
             "dtypes": {"fp32": 0.5, "bf16": 0.35, "fp16": 0.15}},
    # fp32 SDPA with no backend forced: PyTorch's memory-efficient kernel (MHA; its three kernel classes by head
    # dim: up to 64, up to 128, beyond) or the unfused math path (GQA); half the cases one-query decode against a
    # cache of up to 64k keys
    "sdpa_fp32": {"weight": 1.0, "batch": (1, 64), "heads": (1, 64), "seq": (16, 8192), "seq_kv": (16, 65536),
                  "decode": 0.5, "cross": 0.3, "head_dim": (32, 40, 64, 72, 80, 96, 128, 160, 256), "gqa": 0.25,
                  "causal": 0.5, "dtypes": {"fp32": 1.0}},
    # the memory-efficient kernel forced (sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)) in 16-bit precisions, MHA (it
    # takes no GQA); half one-query decode
    "efficient_half": {"weight": 1.0, "batch": (1, 64), "heads": (1, 64), "seq": (16, 8192), "seq_kv": (16, 65536),
                       "decode": 0.5, "cross": 0.3, "head_dim": (32, 40, 64, 72, 80, 96, 128, 160, 256), "gqa": 0.0,
                       "causal": 0.5, "dtypes": {"bf16": 0.75, "fp16": 0.25}},
    # issue 31's weak families, each drawn evenly in log-shape (``--sample-families weak`` takes all five):
    # one-query decode through SDPA's default backend against KV caches from kilobytes to several GiB
    "sdpa_decode": {"weight": 0.25, "batch": (1, 128), "heads": (1, 64), "seq_kv": (128, 262144),
                    "head_dim": (64, 128, 256), "gqa": 0.6, "dtypes": {"bf16": 0.75, "fp16": 0.25}},
    # dense convs (groups = 1) in both layouts
    "conv_dense": {"weight": 0.25, "batch": (1, 64), "channels": (3, 1024), "hw": (7, 224), "kernel": (1, 3, 5, 7),
                   "stride": (1, 2), "layouts": ("nhwc", "nchw"), "unaligned": 0.25,
                   "dtypes": {"bf16": 0.75, "fp16": 0.25}},
    # depthwise (groups = C = K) and grouped convs (groups 2-64 dividing C and K), both layouts
    "conv_grouped": {"weight": 0.2, "batch": (1, 64), "channels": (8, 2048), "hw": (7, 224), "kernel": (1, 3, 5, 7),
                     "stride": (1, 2), "layouts": ("nhwc", "nchw"), "depthwise": 0.5, "groups": (2, 4, 8, 16, 32, 64),
                     "dtypes": {"bf16": 0.75, "fp16": 0.25}},
    # tf32 GEMMs (fp32 tensors, TF32 matmuls allowed): plain and batched
    "tf32": {"weight": 0.15, "batch": (2, 64), "bmm": 0.3, "m": (1, 16384), "n": (1, 16384), "k": (1, 16384),
             "unaligned": 0.25, "dtypes": {"tf32": 1.0}},
    # causal self-attention through flash (SDPBackend.FLASH_ATTENTION)
    "causal": {"weight": 0.15, "batch": (1, 32), "heads": (1, 64), "seq": (16, 16384), "head_dim": (64, 128),
               "gqa": 0.5, "dtypes": {"bf16": 0.75, "fp16": 0.25}},
}
#: named mixes of families for ``--sample-families`` (one name for several)
MIXES: dict[str, tuple[str, ...]] = {"weak": ("sdpa_decode", "conv_dense", "conv_grouped", "tf32", "causal")}
#: the measured family (``Case.family``: what solkit's calibration groups and models by) of each drawn family
DRAWN_AS: dict[str, str] = {"sdpa_decode": "sdpa", "sdpa_fp32": "sdpa", "efficient_half": "attention", "conv_dense": "conv2d", "conv_grouped": "conv2d", "causal": "attention"}
#: the size keys of each family, checked against SPACE by check_case
_SIZE_KEYS: dict[str, dict[str, str]] = {
    "matmul": {"m": "m", "n": "n", "k": "k"}, "bmm": {"batch": "batch", "m": "m", "n": "n", "k": "k"},
    "layernorm": {"tokens": "tokens", "d_model": "d_model"}, "rmsnorm": {"tokens": "tokens", "d_model": "d_model"},
    "softmax": {"rows": "rows", "cols": "cols"}, "elementwise": {"elements": "elements"},
    "embedding": {"tokens": "tokens", "vocab": "vocab", "d_model": "d_model"},
    "conv2d": {"batch": "batch", "in_channels": "channels", "out_channels": "channels", "height": "hw"},
    "attention": {"batch": "batch", "heads": "heads", "seq_q": "seq", "seq_kv": "seq"},
    "decode": {"batch": "batch", "heads": "heads", "seq_kv": "seq_kv"},
    "sdpa": {"batch": "batch", "heads": "heads", "seq_kv": "seq_kv"},
    "cast": {"elements": "elements"},
    "sdpa_decode": {"batch": "batch", "heads": "heads", "seq_kv": "seq_kv"},
    "sdpa_fp32": {"batch": "batch", "heads": "heads", "seq_kv": "seq_kv"},
    "efficient_half": {"batch": "batch", "heads": "heads", "seq_kv": "seq_kv"},
    "conv_dense": {"batch": "batch", "in_channels": "channels", "out_channels": "channels", "height": "hw"},
    "conv_grouped": {"batch": "batch", "in_channels": "channels", "out_channels": "channels", "height": "hw"},
    "tf32": {"m": "m", "n": "n", "k": "k"},
    "causal": {"batch": "batch", "heads": "heads", "seq_q": "seq", "seq_kv": "seq"},
}
_ELEM_NOTES = {"add": "torch.add(a, b, out=c)", "copy": "dst.copy_(src)", "gelu": "F.gelu(x) (erf form, torch default)",
               "silu": "F.silu(x)"}


def set_of(case_id: str) -> str:
    """The set a case id belongs to: sha256(id) % 10 in 0-5 fit, 6-7 validation, 8-9 test."""
    r = int(hashlib.sha256(case_id.encode()).hexdigest(), 16) % 10
    return next(name for name, digits in SETS.items() if r in digits)


def footprint_bytes(c: Case) -> float:
    """Bytes of the tensors a case allocates (inputs, outputs, layout transforms), roughly."""
    p = c.params
    e = ELEM_BYTES[p["dtype"]]
    if c.op == "matmul":
        b, m, n, k = p.get("batch", 1), p["m"], p["n"], p["k"]
        return b * (m * k + k * n) * e + b * m * n * MATMUL_OUT_BYTES.get(p["dtype"], e)
    if c.op in ("layernorm", "rmsnorm"):
        return 2.0 * p["tokens"] * p["d_model"] * e
    if c.op == "softmax":
        return 2.0 * p["rows"] * p["cols"] * e
    if c.op in ("add", "copy", "gelu", "silu"):
        return (3.0 if c.op == "add" else 2.0) * p["elements"] * e
    if c.op == "embedding":
        return (p["vocab"] + p["tokens"]) * p["d_model"] * e + 8.0 * p["tokens"]
    if c.op == "conv2d":
        n, ch, hw, k, r, s, g = (p[x] for x in ("batch", "in_channels", "height", "out_channels", "kernel", "stride",
                                                "groups"))
        ho = (hw + 2 * p["padding"] - r) // s + 1
        act = n * ch * hw * hw + n * k * ho * ho
        return (act * (2 if p["layout"] == "nchw" else 1) + k * (ch // g) * r * r) * e
    if c.op == "attention":
        b, h, sq, skv, d, kv = (p[x] for x in ("batch", "heads", "seq_q", "seq_kv", "head_dim", "kv_heads"))
        return (2.0 * b * h * sq * d + 2.0 * b * kv * skv * d) * e
    raise ValueError(f"no footprint for op {c.op!r}")


def reference_bytes(c: Case) -> float:
    """Bytes the float64 spot check allocates, roughly (attention materialises the score matrix)."""
    p = c.params
    extra = 0.0
    if c.op == "attention":
        extra = 8.0 * p["batch"] * p["heads"] * p["seq_q"] * p["seq_kv"] * 2
        extra += 8.0 * 2 * p["batch"] * p["heads"] * p["seq_kv"] * p["head_dim"]  # k, v repeated for GQA
    return footprint_bytes(c) * 8 / ELEM_BYTES[p["dtype"]] + extra


def within_caps(c: Case) -> bool:
    """Whether a case fits MAX_KERNEL_S and MAX_BYTES by the rough estimates."""
    return rough_kernel_seconds(c) <= MAX_KERNEL_S and footprint_bytes(c) <= MAX_BYTES


class _Draw:
    """Helpers over one random.Random stream."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.off = False  # this case's alignment-sensitive dims are off a multiple of ALIGN

    def logint(self, lo_hi: tuple[int, int]) -> int:
        lo, hi = lo_hi
        return min(hi, max(lo, int(math.exp(self.rng.uniform(math.log(lo), math.log(hi + 1))))))

    def pick(self, weights: dict[str, float]) -> str:
        keys = list(weights)
        return self.rng.choices(keys, weights=[weights[k] for k in keys])[0]

    def aligned(self, x: int, lo_hi: tuple[int, int], a: int = ALIGN) -> int:
        """x rounded to a multiple of a, inside [lo, hi] (hi rounded down to a multiple of a)."""
        lo, hi = lo_hi
        return min(hi - hi % a, max(a * math.ceil(lo / a), a * round(x / a)))

    def unaligned(self, x: int, lo_hi: tuple[int, int]) -> int:
        """x moved off a multiple of ALIGN (if it was on one), inside [lo, hi]."""
        lo, hi = lo_hi
        if x % ALIGN:
            return x
        y = x + self.rng.randint(1, ALIGN - 1)
        return y if y <= hi else max(lo, x - self.rng.randint(1, ALIGN - 1))

    def sized(self, lo_hi: tuple[int, int], off: bool) -> int:
        x = self.logint(lo_hi)
        return self.unaligned(x, lo_hi) if off else self.aligned(x, lo_hi)


def _divisors(h: int) -> list[int]:
    return [d for d in range(1, h + 1) if h % d == 0]


def _draw_mm(d: _Draw, family: str) -> Case:
    s = SPACE[family]
    off = d.off
    dts = {k: v for k, v in s["dtypes"].items() if not off or k in _FLOAT_MM}
    dt = d.pick(dts)
    a = 16 if dt == "fp8_e4m3" else ALIGN
    m = d.logint(s["m"])
    if dt == "int8":
        m = max(m, 17)  # torch._int_mm needs m > 16
    n, k = d.logint(s["n"]), d.logint(s["k"])
    if off:
        which = d.rng.choice(("k", "n", "kn"))
        n = d.unaligned(n, s["n"]) if "n" in which else d.aligned(n, s["n"])
        k = d.unaligned(k, s["k"]) if "k" in which else d.aligned(k, s["k"])
    else:
        n, k = d.aligned(n, s["n"], a), d.aligned(k, s["k"], a)
    batch = d.logint(s["batch"]) if family == "bmm" else 1
    return mm_case(m, n, k, dt, batch=batch)


def _draw_norm(d: _Draw, family: str) -> Case:
    s = SPACE[family]
    off = d.off
    dt = d.pick(s["dtypes"])
    if family == "softmax":
        r, c = d.logint(s["rows"]), d.sized(s["cols"], off)
        return _norm_case("softmax", "softmax", "softmax", "torch.softmax(x[rows,cols], dim=-1)", r, c, dt)
    t, w = d.logint(s["tokens"]), d.sized(s["d_model"], off)
    note = ("F.layer_norm(x[T,d], (d,), gamma, beta, eps=1e-5)" if family == "layernorm"
            else "F.rms_norm(x[T,d], (d,), gamma, eps=1e-6)")
    return _norm_case(family, family, family, note, t, w, dt)


def _draw_elementwise(d: _Draw) -> Case:
    s = SPACE["elementwise"]
    off = d.off
    op = d.rng.choice(s["ops"])
    dt = d.pick(s["dtypes"])
    e = d.sized(s["elements"], off)
    return Case("elementwise", op, {"elements": e, "dtype": dt}, op, _ELEM_NOTES[op])


def _draw_embedding(d: _Draw) -> Case:
    s = SPACE["embedding"]
    off = d.off
    dt = d.pick(s["dtypes"])
    params = {"tokens": d.logint(s["tokens"]), "vocab": d.logint(s["vocab"]), "d_model": d.sized(s["d_model"], off),
              "dtype": dt}
    return Case("embedding", "embedding", params, "embedding", "F.embedding(ids int64 [T], table[vocab,d])")


def _draw_conv(d: _Draw) -> Case:
    s = SPACE["conv2d"]
    off = d.off
    dt = d.pick(s["dtypes"])
    n, hw = d.logint(s["batch"]), d.logint(s["hw"])
    ks, stride = d.rng.choice(s["kernel"]), d.rng.choice(s["stride"])
    layout = d.rng.choice(s["layouts"])
    c = d.sized(s["channels"], off)
    if d.rng.random() < s["depthwise"]:
        k, g = c, c
    else:
        k, g = d.sized(s["channels"], off and d.rng.random() < 0.5), 1
    case = _conv(n, c, hw, k, ks, stride, ks // 2, layout, name="sampled" + ("/dw" if g > 1 else ""), groups=g)
    case.params["dtype"] = dt  # _conv writes bf16; keep its key order
    return case


def _draw_heads(d: _Draw, s: dict[str, Any]) -> tuple[str, int, int, int, int]:
    """(dtype, batch, heads, head_dim, kv_heads) of an attention case, drawn in this order."""
    dt = d.pick(s["dtypes"])
    b, h = d.logint(s["batch"]), d.logint(s["heads"])
    hd = d.rng.choice(s["head_dim"])
    kv = h
    if d.rng.random() < s["gqa"] and h > 1:
        kv = d.rng.choice(_divisors(h)[:-1])  # a proper divisor: GQA (1 = MQA)
    return dt, b, h, hd, kv


def _draw_attention(d: _Draw, family: str) -> Case:
    s = SPACE[family]
    dt, b, h, hd, kv = _draw_heads(d, s)
    if family == "decode":
        skv = d.logint(s["seq_kv"])
        case = _attn(b, h, 1, hd, skv=skv, kv=kv, family="decode", label="sampled")
    else:
        sq = d.logint(s["seq"])
        skv = d.logint(s["seq"]) if d.rng.random() < s["cross"] else sq
        causal = skv == sq and d.rng.random() < s["causal"]
        case = _attn(b, h, sq, hd, skv=skv, kv=kv, causal=causal, label="sampled")
    case.params["dtype"] = dt
    return case


def _draw_sdpa(d: _Draw, family: str = "sdpa") -> Case:
    """SDPA with PyTorch's own backend choice (or, ``efficient_half``, the memory-efficient kernel forced): prefill
    (self or cross, causal or not) or one-query decode."""
    s = EXTRA_SPACE[family]
    dt, b, h, hd, kv = _draw_heads(d, s)
    if d.rng.random() < s["decode"]:
        sq, skv, causal = 1, d.logint(s["seq_kv"]), False
    else:
        sq = d.logint(s["seq"])
        skv = d.logint(s["seq"]) if d.rng.random() < s["cross"] else sq
        causal = skv == sq and d.rng.random() < s["causal"]
    if family == "efficient_half":
        case = _attn(b, h, sq, hd, skv=skv, kv=kv, causal=causal, impl="efficient", label="sampled efficient")
    else:
        case = _attn(b, h, sq, hd, skv=skv, kv=kv, causal=causal, family="sdpa", label="sampled")
    case.params["dtype"] = dt
    return case


def _draw_cast(d: _Draw) -> Case:
    """A cast of a random element count between a random pair of precisions (one of them fp32)."""
    s = EXTRA_SPACE["cast"]
    src, dst = s["pairs"][d.rng.randrange(len(s["pairs"]))]
    e = d.logint(s["elements"])
    return Case("cast", "copy", {"elements": e, "dtype": src, "out_dtype": dst}, "copy",
                "dst.copy_(src) with dst in out_dtype (a cast)")


def _draw_sdpa_decode(d: _Draw) -> Case:
    """One query against a KV cache through SDPA's default backend (the cache drawn log-uniformly per dim)."""
    s = EXTRA_SPACE["sdpa_decode"]
    dt, b, h, hd, kv = _draw_heads(d, s)
    case = _attn(b, h, 1, hd, skv=d.logint(s["seq_kv"]), kv=kv, family="sdpa", label="sampled decode")
    case.params["dtype"] = dt
    return case


def _draw_conv_space(d: _Draw, family: str) -> Case:
    """A dense, depthwise or grouped conv of ``family``'s space."""
    s = EXTRA_SPACE[family]
    off = d.off
    dt = d.pick(s["dtypes"])
    n, hw = d.logint(s["batch"]), d.logint(s["hw"])
    ks, stride = d.rng.choice(s["kernel"]), d.rng.choice(s["stride"])
    layout = d.rng.choice(s["layouts"])
    if family == "conv_dense":
        c, k, g = d.sized(s["channels"], off), d.sized(s["channels"], off and d.rng.random() < 0.5), 1
    elif d.rng.random() < s["depthwise"]:
        c = d.logint(s["channels"])
        k = g = c
    else:
        g = d.rng.choice(s["groups"])
        lo, hi = s["channels"]
        c = g * max(1, round(d.logint((max(1, lo // g), max(1, hi // g)))))
        k = g * max(1, round(d.logint((max(1, lo // g), max(1, hi // g)))))
    case = _conv(n, c, hw, k, ks, stride, ks // 2, layout, name="sampled" + ("/dw" if g == c > 1 else "/g" if g > 1 else ""),
                 groups=g)
    case.params["dtype"] = dt
    return case


def _draw_tf32(d: _Draw) -> Case:
    """A tf32 GEMM (a third of them batched)."""
    s = EXTRA_SPACE["tf32"]
    off = d.off
    m, n, k = d.logint(s["m"]), d.logint(s["n"]), d.logint(s["k"])
    if off:
        which = d.rng.choice(("k", "n", "kn"))
        n = d.unaligned(n, s["n"]) if "n" in which else d.aligned(n, s["n"])
        k = d.unaligned(k, s["k"]) if "k" in which else d.aligned(k, s["k"])
    else:
        n, k = d.aligned(n, s["n"]), d.aligned(k, s["k"])
    if d.rng.random() < s["bmm"]:
        b = d.logint(s["batch"])
        m, n, k = (max(1, x // 4) if x > 8192 else x for x in (m, n, k))
        return mm_case(m, n, k, "tf32", batch=b)
    return mm_case(m, n, k, "tf32")


def _draw_causal(d: _Draw) -> Case:
    """Causal self-attention through flash."""
    s = EXTRA_SPACE["causal"]
    dt, b, h, hd, kv = _draw_heads(d, s)
    sq = d.logint(s["seq"])
    case = _attn(b, h, sq, hd, skv=sq, kv=kv, causal=True, label="sampled causal")
    case.params["dtype"] = dt
    return case


def _draw_family(d: _Draw, family: str) -> Case:
    if family == "sdpa_decode":
        return _draw_sdpa_decode(d)
    if family in ("conv_dense", "conv_grouped"):
        return _draw_conv_space(d, family)
    if family == "tf32":
        return _draw_tf32(d)
    if family == "causal":
        return _draw_causal(d)
    if family in ("sdpa", "sdpa_fp32", "efficient_half"):
        return _draw_sdpa(d, family)
    if family == "cast":
        return _draw_cast(d)
    if family in ("matmul", "bmm"):
        return _draw_mm(d, family)
    if family in ("layernorm", "rmsnorm", "softmax"):
        return _draw_norm(d, family)
    if family == "elementwise":
        return _draw_elementwise(d)
    if family == "embedding":
        return _draw_embedding(d)
    if family == "conv2d":
        return _draw_conv(d)
    return _draw_attention(d, family)


def draw_stream(seed: int = DEFAULT_SEED, families: Optional[Sequence[str]] = None) -> Iterator[Case]:
    """An endless seeded stream of cases (duplicates possible), each within the caps; ``families``: SPACE's by default."""
    d = _Draw(random.Random(seed))
    if families is not None:
        families = [f for name in families for f in MIXES.get(name, (name,))]
    spaces = SPACE if families is None else {f: {**SPACE, **EXTRA_SPACE}[f] for f in families}
    fams = list(spaces)
    weights = [spaces[f]["weight"] for f in fams]
    while True:
        family = d.rng.choices(fams, weights=weights)[0]
        # drawn once per case, outside the rejection loop, so the caps do not bias the unaligned share
        d.off = d.rng.random() < spaces[family].get("unaligned", 0.0)
        while True:
            c = _draw_family(d, family)
            if within_caps(c):
                break
        check = d.rng.random() < CHECK_SHARE and reference_bytes(c) <= CHECK_MAX_BYTES
        yield Case(c.family, c.op, c.params, c.impl, c.impl_note, tier=1, check=check, extra_kernels=c.extra_kernels,
                   primary=True, variant="", opts=c.opts)


def sample_set(name: str, n: int = DEFAULT_N, seed: int = DEFAULT_SEED,
               families: Optional[Sequence[str]] = None) -> list[Case]:
    """The first n distinct cases of the seeded stream whose id hashes into set ``name``."""
    if name not in SETS:
        raise ValueError(f"unknown set {name!r}; expected one of {', '.join(SETS)}")
    out: list[Case] = []
    seen: set[str] = set()
    for c in draw_stream(seed, families):
        if len(out) >= n:
            break
        if c.id in seen:
            continue
        seen.add(c.id)
        if set_of(c.id) == name:
            out.append(c)
    return out


def check_case(c: Case, space: Optional[str] = None) -> list[str]:
    """Ways a sampled case leaves its family's declared space (empty: inside); ``space``: the family it was drawn as."""
    bad: list[str] = []
    name = space or c.family
    s = {**SPACE, **EXTRA_SPACE}.get(name)
    if s is None:
        return [f"family {name!r} not in SPACE"]
    p = c.params
    if p["dtype"] not in s["dtypes"]:
        bad.append(f"dtype {p['dtype']}")
    for key, space_key in _SIZE_KEYS[name].items():
        lo, hi = s[space_key]
        if not lo <= p[key] <= hi:
            bad.append(f"{key}={p[key]} outside [{lo}, {hi}]")
    if c.family == "conv2d":
        if p["kernel"] not in s["kernel"] or p["stride"] not in s["stride"] or p["layout"] not in s["layouts"]:
            bad.append("conv kernel/stride/layout")
        grouped = name == "conv_grouped" and p["groups"] in s["groups"] and not p["in_channels"] % p["groups"] and \
            not p["out_channels"] % p["groups"]
        dense = p["groups"] == 1 and name != "conv_grouped"
        depthwise = p["groups"] == p["in_channels"] == p["out_channels"] and name != "conv_dense"
        if not (grouped or dense or depthwise):
            bad.append("conv groups")
    if c.family in ("attention", "decode", "sdpa"):
        if p["head_dim"] not in s["head_dim"] or p["heads"] % p["kv_heads"]:
            bad.append("head_dim/kv_heads")
        if (c.family == "decode" or name == "sdpa_decode") and (p["seq_q"] != 1 or p["causal"]):
            bad.append("decode seq_q/causal")
        if name == "causal" and not (p["causal"] and p["seq_q"] == p["seq_kv"]):
            bad.append("causal self-attention")
    if c.family == "elementwise" and c.op not in s["ops"]:
        bad.append(f"op {c.op}")
    if not within_caps(c):
        bad.append("over the caps")
    return bad
