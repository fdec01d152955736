"""Serving figures of a Transformer: time to first token, time per output token, tokens/s, memory and cost.

``inference(model, gpu_or_system, batch, prompt, output, tp=1, engine=...)`` composes ``predict`` over the model's
programs (and ``search_splits(model, system, global_batch, seq)`` searches parallel training splits: ``solkit.splits``):

- time to first token (TTFT): the prefill of ``prompt`` tokens per sequence (logits of the last);
- time per output token (TPOT): the mean decode step while the context grows from ``prompt`` to
  ``prompt + output - 1`` tokens (each decode step predicted at ``DECODE_POINTS`` contexts spread
  over that range and averaged: a step's time is close to affine in its context);
- decode tokens/s = batch / TPOT; end-to-end latency = TTFT + output x TPOT; throughput =
  batch x output / latency; the memory footprint (per GPU) with the KV cache at ``prompt + output`` tokens;
- cost (``solkit.cost``): per request (latency / batch on ``tp`` GPUs) and per output token (latency /
  (batch x output)), GPU-hours, the energy bound at the spec's board power and, given ``usd_per_gpu_hour``, dollars.

Engines (``engine=``), what each launches and what its host does:

- ``"hf-eager"``: Hugging Face ``generate`` with the default ``DynamicCache``: eager PyTorch kernels (the cache
  concatenated each step), each launched by the host (the calibrated eager host time), plus generate's own host work
  per request and per output token (``stacks.transformers517``: fitted on an H200 draw), during which the GPU waits
  (generate reads the GPU every token to check its stopping criteria).
- ``"hf-static"``: ``generate(..., cache_implementation="static")``: the prefill eager, over a cache preallocated for
  ``prompt + output`` tokens (its per-layer setup on the host); every decode step compiled and replayed as a CUDA
  graph (no launches from the host: the fused kernels), attending over the whole preallocated cache (context
  ``prompt + output - 1`` at every step, masked), plus generate's host work per token.
- ``"fused"``: a fused serving engine with paged attention and CUDA graphs (vLLM, TensorRT-LLM, SGLang): one kernel
  per operator, attention over the cached tokens only, no host time (NB: its scheduler's host work is not modelled).

``kernels=`` (the older spelling) maps onto engines: ``"eager"`` is ``"hf-eager"`` and ``"fused"`` is ``"fused"``;
with neither given the engine is ``"hf-eager"``, what ``generate`` runs.

Tensor parallelism (``tp``, on a System or a GPU's usual node): each GPU runs its shard of the layers
(``models.parallel.shard``: heads, KV heads, MLP width and vocab over ``tp``) plus Megatron's collectives of each
forward, in line: two all-reduces per layer (after the attention's and the MLP's row-parallel GEMMs) and one after
the vocab-parallel embedding, each of tokens x d_model in ``dtype``, and one all-gather of the logits (rows x the
padded vocab), predicted on the system's links (``solkit.comm``). Memory is per GPU: the shard's weights and KV cache.

``batch`` may be an array (a sweep: every figure comes back as an array). Precision options:
``dtype`` (activations and unquantized weights), ``quant`` ("w4a16", "w8a16", "w8a8", "fp8": the
layers' linear layers) and ``kv_dtype`` (e.g. "fp8": the KV cache).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ._dir import public_dir
from ._display import fmt_bytes, fmt_seconds, html_table
from ._num import result
from ._optional import require_pandas
from ._typing import AttentionImpl, Dim, DType, Engine, GPULike, KernelStyle, Quantization
from ._validate import checked_call, choice, dim, shown, whole
from .capture.hf import CapturedModel
from .comm import collective
from .cost import Cost, cost
from .errors import ArgumentTypeError, OptionError, ShapeError
from .hardware.system import as_system
from .models.architecture import Transformer
from .models.footprint import memory
from .models.parallel import shard
from .precision import normalize, storage_bytes
from .prediction import predict
from .prediction.expected import predicted
from .prediction.host import HOST_TIME_PARAMETERS
from .splits import SplitResult
from .splits import search as search_splits
from .stacks import transformers517 as hf
from .workload import Workload

__all__ = [
    "DECODE_POINTS",
    "ENGINES",
    "InferenceEstimate",
    "SplitResult",
    "inference",
    "search_splits",
    "tp_collectives",
]

#: contexts at which a decode step is predicted to average the time per output token
DECODE_POINTS = 5
#: the serving engines ``inference`` models (module docstring)
ENGINES = ("hf-eager", "hf-static", "fused")
#: what the older ``kernels=`` spelling names
_KERNELS_ENGINE = {"eager": "hf-eager", "fused": "fused"}
#: the kernels each engine's prefill and decode steps run
_ENGINE_KERNELS: dict[str, tuple[KernelStyle, KernelStyle]] = {
    "hf-eager": ("eager", "eager"), "hf-static": ("eager", "fused"), "fused": ("fused", "fused")}


@dataclass(frozen=True)
class InferenceEstimate:
    """Predicted serving figures (seconds, tokens/s, bytes per GPU); arrays when ``batch`` was an array."""

    model: str
    gpu: str
    batch: Any
    prompt: int
    output: int
    ttft: Any  # s: the prefill (and the engine's host work per request)
    tpot: Any  # s: the mean decode step (and the engine's host work per token)
    decode_tokens_per_s: Any  # batch / tpot
    latency: Any  # s: ttft + output x tpot
    throughput: Any  # generated tokens/s over the whole request: batch x output / latency
    memory: Any  # per GPU: a MemoryFootprint (closed form), or a captured program's CaptureMemory
    engine: str = "hf-eager"
    tp: int = 1
    comm_ttft: Any = 0.0  # s of TTFT in the tensor-parallel collectives
    comm_tpot: Any = 0.0  # s of TPOT in the tensor-parallel collectives
    #: s of TTFT the GPU waits on the host: generate's per request, the prefill's issue beyond its kernels
    host_ttft: Any = 0.0
    #: s of TPOT likewise: generate's per token, the decode step's issue beyond its kernels (hf-static: generate's per
    #: token alone, its CUDA-graph decode issuing nothing per kernel)
    host_tpot: Any = 0.0
    cost_per_request: Cost | None = None  # latency / batch on tp GPUs
    cost_per_token: Cost | None = None  # latency / (batch x output) on tp GPUs
    assumptions: tuple[str, ...] = field(default=())
    system: str | None = None  # the system whose links carry the collectives (tp > 1)

    @property
    def fits(self) -> Any:
        """Whether the weights, KV cache and working set fit one GPU's memory."""
        return self.memory.fits

    @property
    def n_gpus(self) -> int:
        """GPUs serving the model (``tp``)."""
        return self.tp

    def to_dict(self) -> dict[str, Any]:
        """Plain figures for a table or JSON (seconds, tokens/s, bytes per GPU, GPU-hours, joules, dollars)."""
        out = {k: getattr(self, k) for k in ("model", "gpu", "engine", "tp", "batch", "prompt", "output", "ttft",
                                             "tpot", "decode_tokens_per_s", "latency", "throughput", "comm_ttft",
                                             "comm_tpot", "host_ttft", "host_tpot")}
        out.update(memory_bytes=self.memory.total, fits=self.memory.fits)
        for name, c in (("request", self.cost_per_request), ("token", self.cost_per_token)):
            if c is not None:
                out.update({f"gpu_hours_per_{name}": c.gpu_hours, f"energy_j_per_{name}": c.energy_j,
                            f"usd_per_{name}": c.usd})
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in out.items()}

    def to_frame(self) -> Any:
        """A pandas DataFrame: one row per batch size."""
        pd = require_pandas("InferenceEstimate.to_frame()")
        d = self.to_dict()
        rows = int(np.size(self.batch))
        return pd.DataFrame({k: (v if isinstance(v, list) else [v] * rows) for k, v in d.items()})

    def _where(self) -> str:
        return self.gpu if self.tp == 1 else f"{self.tp} x {self.gpu} of {self.system} (tp={self.tp})"

    def _rows(self) -> list[tuple[Any, ...]]:
        b = np.atleast_1d(self.batch)
        cols = [np.broadcast_to(np.atleast_1d(np.asarray(v, dtype=float)), b.shape) for v in
                (self.ttft, self.tpot, self.decode_tokens_per_s, self.memory.total)]
        fits = np.broadcast_to(np.atleast_1d(self.fits if self.fits is not None else True), b.shape)
        return [(f"{bi:g}", fmt_seconds(t), fmt_seconds(p), f"{r:,.4g}", fmt_bytes(mem), "yes" if f else "NO")
                for bi, t, p, r, mem, f in zip(b, *cols, fits)]

    def __repr__(self) -> str:
        head = f"{self.model} on {self._where()}, engine {self.engine}"
        if np.ndim(self.batch):
            lines = [(f"InferenceEstimate({head}, prompt {self.prompt}, output {self.output}, a sweep over "
                     f"{np.size(self.batch)} batch sizes:")]
            table = [("batch", "TTFT", "TPOT", "tokens/s", "memory/GPU", "fits")] + self._rows()
            widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
            lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in table]
            return "\n".join(lines) + ")"
        fit = "" if self.fits in (None, True) else " (does NOT fit)"
        per = " per GPU" if self.tp > 1 else ""
        return (f"InferenceEstimate({head}, batch {self.batch:g}, prompt {self.prompt}, output {self.output}: "
                f"TTFT {fmt_seconds(self.ttft)}, TPOT {fmt_seconds(self.tpot)}, {self.decode_tokens_per_s:,.4g} "
                f"tokens/s decoding, {fmt_bytes(self.memory.total)}{per}{fit})")

    def _repr_html_(self) -> str:
        rows = [r[:4] + (r[4], r[5]) for r in self._rows()]
        caption = (f"{self.model} on {self._where()}, engine {self.engine}, prompt {self.prompt}, output "
                   f"{self.output}; " + "; ".join(self.assumptions))
        return html_table(("batch", "TTFT", "TPOT", "tokens/s", "memory per GPU", "fits"), rows, caption=caption)


def _engine(engine: Any, kernels: Any) -> str:
    """The engine named by ``engine`` or the older ``kernels`` (module docstring); both must agree."""
    chosen = None if engine is None else choice("engine", engine, ENGINES)
    if kernels is not None:
        mapped = _KERNELS_ENGINE[choice("kernels", kernels, tuple(_KERNELS_ENGINE))]
        if chosen is not None and chosen != mapped:
            raise OptionError(f"kernels={kernels!r} is engine={mapped!r}, but engine={engine!r} was given: pass one")
        chosen = mapped
    return chosen or "hf-eager"


@checked_call
def tp_collectives(model: Transformer, batch: Any, seq: Any, tp: Any, dtype: Any = "bf16", rows: Any = None) -> Workload:
    """One forward's tensor-parallel collectives (Megatron) of ``batch`` x ``seq`` tokens over ``tp`` GPUs.

    Two all-reduces per layer and one after the vocab-parallel embedding, each of batch x seq x d_model x bytes of
    ``dtype``; one all-gather of the logits, ``rows`` (default batch x seq) x ceil(vocab / tp) x tp x bytes.
    """
    if not isinstance(model, Transformer):
        raise ArgumentTypeError(f"model must be a solkit.models.Transformer, got {shown(model)}")
    n = whole("tp", tp, ShapeError)
    if n < 2:
        raise OptionError(f"tp must be at least 2 for tensor-parallel collectives, got {n}")
    cd = normalize(dtype, "dtype")
    e = storage_bytes(cd)
    tokens = dim("batch", batch) * dim("seq", seq)
    r = tokens if rows is None else dim("rows", rows)
    act = tokens * model.d_model * e  # [b*s, d] activations
    reduce = collective("all_reduce", act, n, cd).renamed("tp all-reduce", kernels=True)
    logits = collective("all_gather", r * math.ceil(model.vocab / n) * n * e, n, cd).renamed(
        "tp all-gather (logits)", kernels=True)
    return Workload.of(f"tensor-parallel collectives (tp={n})", ((reduce, 2 * model.layers + 1), (logits, 1)))


@checked_call
def inference(model: Transformer | CapturedModel, gpu: GPULike, batch: Dim = 1, prompt: Dim = 2048, output: Dim = 256,
              dtype: DType = "bf16", kv_dtype: DType | None = None, quant: Quantization | None = None,
              kernels: KernelStyle | None = None, impl: AttentionImpl = "sdpa", engine: Engine | None = None,
              tp: int = 1, usd_per_gpu_hour: float | None = None, host_probe_us: float | None = None) -> InferenceEstimate:
    """Predicted TTFT, TPOT, tokens/s, memory per GPU and cost of serving ``model`` (module docstring).

    ``gpu``: a GPU (or its name), a System or a system's name; ``tp`` GPUs of it serve the model.
    ``host_probe_us``: your host's launch probe (``solkit.profile.host_probe()``): the eager and generate host times
    scale by it.
    """
    if isinstance(model, CapturedModel):
        return _captured(model, gpu, batch, prompt, output, dtype, kv_dtype, quant, kernels, impl, engine, tp,
                         usd_per_gpu_hour, host_probe_us)
    if not isinstance(model, Transformer):
        hint = (f": build it with models.preset({shown(model)}) or models.from_hf_config(...)" if isinstance(model, str)
                else "")
        raise ArgumentTypeError(f"model must be a solkit.models.Transformer or a captured model (models.preset(...), "
                                f"models.from_hf_config(...)), got the {type(model).__name__} {shown(model)}{hint}")
    name = _engine(engine, kernels)
    g, system = as_system(gpu)
    n_tp = whole("tp", tp, ShapeError)
    if n_tp > system.n_gpus:
        raise OptionError(f"tp={n_tp} is more GPUs than {system.name} has ({system.n_gpus}); pass a system with more "
                          f"nodes (sk.load_system({system.name!r}, nodes=...)) or a smaller tp")
    part = shard(model, tp=n_tp) if n_tp > 1 else model
    b = dim("batch", batch)
    p = int(dim("prompt", prompt)) if np.ndim(prompt) == 0 else _scalar("prompt")
    n = int(dim("output", output)) if np.ndim(output) == 0 else _scalar("output")
    options: dict[str, Any] = {"dtype": dtype, "kv_dtype": kv_dtype, "quant": quant, "impl": impl}
    ttft, tpot, host_ttft, host_tpot = _served(part, g, b, p, n, name, options, host_probe_us)
    comm_ttft: Any = 0.0
    comm_tpot: Any = 0.0
    if n_tp > 1:
        comm_ttft = predict(tp_collectives(model, b, p, n_tp, dtype, rows=b), system, warn=False).seconds
        comm_tpot = predict(tp_collectives(model, b, 1, n_tp, dtype), system, warn=False).seconds
    pre_k = _ENGINE_KERNELS[name][0]
    ttft = result(ttft + comm_ttft)
    tpot = result(tpot + comm_tpot)
    latency = result(ttft + n * tpot)
    footprint = memory(part, batch=b, seq=p + n, gpu=g, dtype=dtype, kv_dtype=kv_dtype, quant=quant, kernels=pre_k)
    per_request = cost(result(latency / b), g, n_tp, usd_per_gpu_hour, what="per request")
    per_token = cost(result(latency / (b * n)), g, n_tp, usd_per_gpu_hour, what="per output token")
    return InferenceEstimate(model.name, g.name, b, p, n, ttft, tpot, result(b / tpot),
                             latency, result(b * n / latency), footprint, name, n_tp, comm_ttft, comm_tpot, host_ttft,
                             host_tpot, per_request, per_token, _assumptions(name, n_tp, g.name),
                             system.name if n_tp > 1 else None)


def _probe(host_probe_us: Any) -> float:
    """The host-time scale of generate's fitted figures: the caller's probe over the fit host's (1 without one)."""
    if host_probe_us is None:
        return 1.0
    if isinstance(host_probe_us, bool) or not isinstance(host_probe_us, (int, float, np.integer, np.floating)):
        raise ArgumentTypeError(f"host_probe_us must be one number of microseconds, got {shown(host_probe_us)}")
    return float(host_probe_us) / hf.FIT_PROBE_US


@dataclass(frozen=True)
class GenerateHost:
    """generate's host figures, us in the fit host's probe units (``stacks.transformers517``'s; a fit tries others)."""

    request: Mapping[str, float] = field(default_factory=lambda: dict(hf.GENERATE_REQUEST_US))
    token: Mapping[str, float] = field(default_factory=lambda: dict(hf.GENERATE_TOKEN_US))
    layer: float = hf.GENERATE_LAYER_US
    cache_layer: float = hf.STATIC_CACHE_LAYER_US


#: every host parameter zero: a program's kernels alone, as ``predict`` times a program without host time
_NO_HOST = {name: 0.0 for name in HOST_TIME_PARAMETERS}


def _served(part: Transformer, g: Any, b: Any, p: int, n: int, engine: str, options: Mapping[str, Any],
            host_probe_us: Any, figures: Optional[GenerateHost] = None) -> tuple[Any, Any, Any, Any]:
    """(TTFT, TPOT, the host's share of each) of ``part`` served by ``engine`` on one GPU, without tensor-parallel
    collectives: the prefill and the mean decode step (``DECODE_POINTS`` contexts; hf-static's at its whole cache) as
    ``predict`` times them under ``engine``'s host parameters (``_engine_host``), plus generate's own host work."""
    pre_k, dec_k = _ENGINE_KERNELS[engine]
    forward, request, token = _engine_host(engine, part.layers, _probe(host_probe_us), figures=figures)
    prefill, prefill_host = _timed(part.prefill(batch=b, seq=p, kernels=pre_k, **options), g, host_probe_us, forward)
    if engine == "hf-static":  # every step attends over the whole preallocated cache: one context
        contexts = np.array([float(p + n - 1)])
    else:
        contexts = np.unique(np.linspace(p, p + n - 1, DECODE_POINTS).round())
    decode = part.decode(batch=np.asarray(b)[..., None], context=contexts, kernels=dec_k, **options)
    steps, steps_host = _timed(decode, g, host_probe_us, forward if dec_k == "eager" else None)
    tpot = result(np.mean(steps, axis=-1) + token)
    # hf-static's CUDA-graph decode issues nothing per kernel: generate's per-token work alone, of tpot's shape
    host_tpot = result((np.mean(steps_host, axis=-1) if dec_k == "eager" else np.zeros(np.shape(tpot))) + token)
    return result(prefill + request), tpot, result(prefill_host + request), host_tpot


def _engine_host(engine: str, layers: int, scale: float, captured: bool = False,
                 figures: Optional[GenerateHost] = None) -> tuple[Optional[dict[str, float]], float, float]:
    """What ``engine`` does on the host (``stacks.transformers517``): (the host parameters, seconds, of each eager forward
    inside ``generate`` in place of the spec's, or None; the seconds per request and per output token the GPU waits on
    generate's own host work).

    An eager forward inside generate runs generate's Python per layer (``GENERATE_LAYER_US``) in place of the spec's
    ``host_layer``, and its preamble is in generate's per request (``GENERATE_REQUEST_US``: the prefill's) and per
    token (``GENERATE_TOKEN_US``: each decode step's) in place of the spec's ``host_program`` (a captured program's
    ``host_captured_program``; its modules' Python it counted itself). Those two run while the GPU waits (generate reads
    the GPU every token); the per-layer Python and the launches overlap the kernels as ``predict``'s timeline lays them.
    hf-static adds its cache's per-layer setup to the request. ``scale``: the caller's probe over the fit host's.
    """
    if engine == "fused":
        return None, 0.0, 0.0
    f = GenerateHost() if figures is None else figures
    forward = {"host_captured_program": 0.0} if captured else {"host_program": 0.0, "host_layer": f.layer * 1e-6 * scale}
    request = (f.request[engine] + (f.cache_layer * layers if engine == "hf-static" else 0.0)) * 1e-6 * scale
    return forward, request, f.token[engine] * 1e-6 * scale


def _timed(program: Workload, g: Any, host_probe_us: Any, host: Optional[dict[str, float]]) -> tuple[Any, Any]:
    """``program``'s predicted seconds with ``host`` in place of the spec's host parameters, and the seconds of it the
    GPU waits on the host: those less its kernels' alone (every host parameter 0; NB: at least 0, where a timeline's
    rounding would leave a few ns below). ``host`` None: a fused program, which ``predict`` gives no host time."""
    if host is None:
        seconds = predicted(program, g, False, True, host_probe_us).seconds
        return seconds, result(np.zeros(np.shape(seconds)))
    seconds = predicted(program, g, False, True, host_probe_us, host).seconds
    alone = predicted(program, g, False, True, host_probe_us, _NO_HOST).seconds
    return seconds, result(np.maximum(seconds - alone, 0.0))


def _assumptions(engine: str, tp: int, gpu: str) -> tuple[str, ...]:
    """What an estimate assumes, in words (its HTML caption)."""
    said = {"hf-eager": "Hugging Face generate, dynamic cache: eager kernels, host time included",
            "hf-static": "Hugging Face generate, static cache: eager prefill, CUDA-graph decode over the whole cache, "
                         "host time included",
            "fused": "a fused engine (paged attention, CUDA graphs): no host time"}[engine]
    split = "one GPU" if tp == 1 else f"tp={tp}: per-GPU memory, Megatron's all-reduces in line"
    return (said, split, f"cost at {gpu}'s board power (an upper bound)")


def _captured(model: CapturedModel, gpu: Any, batch: Any, prompt: Any, output: Any, dtype: Any, kv_dtype: Any,
              quant: Any, kernels: Any, impl: Any, engine: Any, tp: Any, usd_per_gpu_hour: Any = None,
              host_probe_us: Any = None) -> InferenceEstimate:
    """``inference`` of a captured model: one shape, each decode point captured (NB: its memory is the prefill's peak
    at prompt + output tokens, whose activations a decode step never holds: a ceiling on the served footprint)."""
    name = _engine(engine, kernels)
    if name == "hf-static" or tp != 1:
        raise OptionError(f"a captured model is served on one GPU by engine 'hf-eager' or 'fused'; got engine={name!r}, "
                          f"tp={tp!r} (build a closed-form models.Transformer for tp or the static engine)")
    g, _ = as_system(gpu)
    if np.ndim(batch) or np.ndim(prompt) or np.ndim(output):
        raise OptionError("a captured model runs one shape: batch, prompt and output must each be one number (call "
                          "inference once per shape, or sweep a closed-form models.Transformer)")
    b, p, n = (int(dim(name_, value)) for name_, value in (("batch", batch), ("prompt", prompt), ("output", output)))
    options = {"dtype": dtype, "kv_dtype": kv_dtype, "quant": quant, "kernels": _ENGINE_KERNELS[name][0], "impl": impl}
    forward, request, token = _engine_host(name, model.layers, _probe(host_probe_us), captured=True)
    prefill, prefill_host = _timed(model.prefill(batch=b, seq=p, **options), g, host_probe_us, forward)
    contexts = np.unique(np.linspace(p, p + n - 1, DECODE_POINTS).round())
    steps = [_timed(model.decode(batch=b, context=int(c), **options), g, host_probe_us, forward) for c in contexts]
    ttft, host_ttft = float(prefill) + request, float(prefill_host) + request
    tpot = float(np.mean([float(s) for s, _ in steps])) + token
    host_tpot = float(np.mean([float(h) for _, h in steps])) + token
    latency = ttft + n * tpot
    footprint = model.memory(batch=b, seq=p + n, gpu=g, dtype=dtype)
    return InferenceEstimate(model.name, g.name, b, p, n, ttft, tpot, b / tpot, latency, b * n / latency, footprint,
                             name, 1, 0.0, 0.0, host_ttft, host_tpot,
                             cost(latency / b, g, 1, usd_per_gpu_hour, what="per request"),
                             cost(latency / (b * n), g, 1, usd_per_gpu_hour, what="per output token"),
                             _assumptions(name, 1, g.name))


def _scalar(name: str) -> Any:
    raise OptionError(f"{name} must be one number (sweep the batch, or call once per {name})")


def __dir__() -> list[str]:
    """``__all__`` (lazy names included), the dunders and the submodules loaded (``solkit._dir``)."""
    return public_dir(globals(), __all__)
