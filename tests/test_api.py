"""The public API of DESIGN.md, pinned: names, signatures, defaults."""

from __future__ import annotations

import inspect

import solkit as sk
from solkit import ops


def test_top_level_names():
    """solkit.__all__ holds the contract names (more may be added, none removed)."""
    contract = {"load_gpu", "list_gpus", "clear_cache", "roofline", "sol_fraction", "mfu", "hfu", "ops", "Workload", "Kernel",
                "GPU", "compare", "predict", "models", "plot", "sweep", "comm", "load_system"}
    assert contract <= set(sk.__all__)
    for name in sk.__all__:
        assert hasattr(sk, name), name


def test_ops_names():
    """solkit.ops exports every operator of DESIGN.md, and its operator list is the registry's."""
    contract = {"matmul", "qkv_projection", "layernorm", "rmsnorm", "softmax", "layernorm_residual", "conv2d",
                "attention", "add", "gelu", "silu", "elementwise", "embedding", "copy"}
    assert contract <= set(ops.OPERATORS)
    assert ops.OPERATORS == tuple(ops.REGISTRY)
    for name in ops.OPERATORS:
        function = getattr(ops, name)
        assert function.operator is ops.REGISTRY[name] and ops.REGISTRY[name].function is function, name
        assert name in ops.__all__
    for name in ops.__all__:
        assert hasattr(ops, name), name


def _params(fn) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


E = inspect.Parameter.empty


def test_design_signatures():
    """Argument names, order and defaults of DESIGN.md's public API."""
    assert _params(ops.matmul)[:6] == [("m", E), ("n", E), ("k", E), ("dtype", "bf16"), ("batch", 1), ("out_dtype", None)]
    assert _params(ops.qkv_projection) == [("tokens", E), ("d_model", E), ("heads", None), ("kv_heads", None),
                                           ("head_dim", None), ("fused", True), ("dtype", "bf16")]
    assert _params(ops.layernorm) == [("tokens", E), ("d_model", E), ("dtype", "bf16")]
    assert _params(ops.rmsnorm) == [("tokens", E), ("d_model", E), ("dtype", "bf16")]
    assert _params(ops.softmax) == [("rows", E), ("cols", E), ("dtype", "bf16")]
    assert _params(ops.layernorm_residual) == [("tokens", E), ("d_model", E), ("fused", True), ("dtype", "bf16")]
    assert _params(ops.conv2d)[:11] == [("batch", E), ("in_channels", E), ("height", E), ("width", E),
                                        ("out_channels", E), ("kernel", 3), ("stride", 1), ("padding", 0),
                                        ("groups", 1), ("layout", "nhwc"), ("dtype", "bf16")]
    # new keywords go after dtype (DESIGN): kv_dtype
    assert _params(ops.attention)[:9] == [("batch", E), ("heads", E), ("seq_q", E), ("seq_kv", None), ("head_dim", 128),
                                          ("kv_heads", None), ("causal", False), ("impl", "flash"), ("dtype", "bf16")]
    assert _params(sk.mfu)[:5] == [("flops", E), ("seconds", E), ("gpu", E), ("dtype", "bf16"), ("n_gpus", 1)]
    assert [p[0] for p in _params(sk.sol_fraction)][:3] == ["workload", "gpu", "measured_seconds"]
    assert [p[0] for p in _params(sk.roofline)][:2] == ["workload", "gpu"]
    from solkit import comm, models

    for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"):
        assert [p[0] for p in _params(getattr(comm, name))][:3] == ["nbytes", "n_gpus", "dtype"], name
    assert _params(comm.all_reduce)[1:3] == [("n_gpus", 8), ("dtype", "bf16")]
    assert _params(sk.load_system)[:2] == [("name", E), ("nodes", 1)]
    assert _params(models.training_step)[:10] == [("forward", E), ("optimizer", "adamw"), ("microbatches", 1),
                                                  ("checkpointing", False), ("dp", 1), ("tp", 1), ("pp", 1), ("sp", False),
                                                  ("ep", 1), ("zero", 0)]


def test_result_fields(h200):
    """Workload and Roofline carry the documented attributes."""
    w = ops.matmul(64, 64, 64)
    for attr in ("flops", "executed_flops", "bytes", "kernels"):
        assert hasattr(w, attr)
    r = sk.roofline(w, h200)
    for attr in ("t_sol", "t_compute", "t_memory", "bound", "intensity", "ridge_point", "kernels"):
        assert hasattr(r, attr)
    for attr in ("memory_bandwidth", "memory_capacity"):
        assert getattr(h200, attr) > 0
