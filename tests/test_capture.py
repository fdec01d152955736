"""Capture: a PyTorch program run on fake tensors becomes a Workload whose counts are the registry's, by hand."""

from __future__ import annotations

from typing import Any

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="capture needs PyTorch (pip install torch==2.13.0, the CPU build)")

import solkit as sk  # noqa: E402
import solkit.capture as cap  # noqa: E402
from solkit import ops  # noqa: E402
from solkit.capture import CaptureError, calls, capture, capture_call, setup  # noqa: E402
from solkit.errors import ArgumentTypeError, OptionError, SolkitError  # noqa: E402
from solkit.ops.aten import Mapped, map_call  # noqa: E402
from solkit.profile._read import read_text  # noqa: E402
from solkit.profile.chrome import read_chrome  # noqa: E402

PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"


def _same(w, expected) -> None:
    """Two workloads launch the same kernels: FLOPs by unit, model FLOPs and bytes, kernel for kernel."""
    got = [(k.kind, k.precision, k.matrix_flops, k.vector_flops, k.model_flops, k.bytes_read, k.bytes_written, n)
           for k, n in w.counted]
    want = [(k.kind, k.precision, k.matrix_flops, k.vector_flops, k.model_flops, k.bytes_read, k.bytes_written, n)
            for k, n in expected.counted]
    assert got == want


# ---- the package ---------------------------------------------------------------------------------------------


def test_import_solkit_imports_no_torch():
    """``import solkit`` and ``import solkit.capture`` leave torch unimported (it loads on the first capture)."""
    code = "import sys, solkit, solkit.capture; assert 'torch' not in sys.modules, 'torch imported'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_module_is_callable_as_capture():
    """``solkit.capture(fn, ...)`` is ``solkit.capture.capture(fn, ...)``: the package name cannot shadow the function."""
    lin = torch.nn.Linear(8, 4)
    x = torch.randn(2, 8)
    assert len(cap(lin, x)) == len(capture(lin, x)) == 1


def test_capture_error_is_a_solkit_runtime_error():
    """CaptureError is a SolkitError and a RuntimeError."""
    assert issubclass(CaptureError, SolkitError) and issubclass(CaptureError, RuntimeError)


def test_bad_arguments_are_refused():
    """A non-callable fn, non-tuple args and an unknown sync policy are errors naming the argument."""
    with pytest.raises(ArgumentTypeError, match="fn must be a callable"):
        capture(42)
    with pytest.raises(ArgumentTypeError, match="args must be a tuple"):
        capture_call(torch.nn.ReLU(), args=torch.ones(2))
    with pytest.raises(OptionError, match="syncs"):
        capture_call(torch.nn.ReLU(), (torch.ones(2),), syncs="maybe")


def test_real_tensors_are_not_touched():
    """A module with real weights and a real input: nothing runs on them and they come back as they were."""
    lin = torch.nn.Linear(16, 8)
    before = lin.weight.detach().clone()
    weight = lin.weight
    capture(lambda m, x: m(x).sum().backward(), lin, torch.randn(4, 16))
    assert lin.weight is weight and lin.weight.grad is None and torch.equal(lin.weight, before)


# ---- single ops: exactly the registry's counts ---------------------------------------------------------------


def test_linear_is_the_registry_matmul():
    """nn.Linear(768, 3072) on [4, 512, 768] fp32: one addmm = ops.matmul(2048, 3072, 768, bias=True)."""
    w = capture(torch.nn.Linear(768, 3072), torch.randn(4, 512, 768))
    m, n, k = 4 * 512, 3072, 768
    _same(w, ops.matmul(m, n, k, dtype="fp32", bias=True))
    assert w.matrix_flops == 2 * m * n * k  # 2*2048*3072*768 = 9,663,676,416


def test_grouped_channels_last_conv_is_the_registry_conv():
    """A grouped 3x3 conv (4 groups) on a channels-last [8, 64, 32, 32] bf16 input: ops.conv2d(..., layout="nhwc")."""
    conv = torch.nn.Conv2d(64, 128, 3, padding=1, groups=4, bias=False).to(torch.bfloat16)
    conv = conv.to(memory_format=torch.channels_last)
    x = torch.randn(8, 64, 32, 32, dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    w = capture(conv, x)
    _same(w, ops.conv2d(8, 64, 32, 32, 128, 3, 1, 1, groups=4, layout="nhwc", dtype="bf16"))
    assert w.flops == 2 * 8 * 128 * 32 * 32 * (64 // 4) * 3 * 3  # 2*N*K*Ho*Wo*(C/g)*R*S = 301,989,888


def test_layernorm_is_the_registry_layernorm():
    """nn.LayerNorm(768) on [2048, 768] fp32: ops.layernorm(2048, 768); bytes (2*T*d + 2*d)*4."""
    w = capture(torch.nn.LayerNorm(768), torch.randn(2048, 768))
    _same(w, ops.layernorm(2048, 768, dtype="fp32"))
    assert w.bytes == (2 * 2048 * 768 + 2 * 768) * 4  # 12,589,056


def test_causal_sdpa_is_the_registry_attention():
    """Causal SDPA on [2, 8, 256, 64] bf16: ops.attention(impl="sdpa"); model FLOPs 4*b*h*d*s(s+1)/2."""
    q = torch.randn(2, 8, 256, 64, dtype=torch.bfloat16)
    w = capture(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True), q, q, q)
    _same(w, ops.attention(2, 8, 256, 256, 64, causal=True, impl="sdpa", dtype="bf16"))
    assert w.flops == 4 * 2 * 8 * 64 * (256 * 257 // 2)  # 134,742,016


def test_gqa_sdpa_keeps_its_kv_heads():
    """SDPA with 8 query heads over 2 KV heads (enable_gqa): ops.attention(kv_heads=2)."""
    q = torch.randn(1, 8, 128, 64, dtype=torch.bfloat16)
    kv = torch.randn(1, 2, 128, 64, dtype=torch.bfloat16)
    w = capture(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                                  enable_gqa=True), q, kv, kv)
    _same(w, ops.attention(1, 8, 128, 128, 64, kv_heads=2, causal=True, impl="sdpa", dtype="bf16"))


def test_embedding_is_the_registry_embedding():
    """nn.Embedding(1000, 64) on [4, 128] ids: ops.embedding(512, 1000, 64)."""
    w = capture(torch.nn.Embedding(1000, 64), torch.zeros(4, 128, dtype=torch.long))
    _same(w, ops.embedding(512, 1000, 64, dtype="fp32"))


def test_sdpa_backward_is_the_registry_gradient():
    """SDPA's backward is the registered gradient of its forward call (model FLOPs twice the forward's)."""
    q = torch.randn(1, 4, 64, 32, dtype=torch.bfloat16, requires_grad=True)
    w = capture(lambda q: torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward(), q)
    forward = ops.attention(1, 4, 64, 64, 32, causal=True, impl="sdpa", dtype="bf16")
    grad = ops.REGISTRY["attention"].gradient(forward.call)
    attention = [k for k, _ in w.counted if k.kind == "attention"]
    assert len(attention) == 2
    assert attention[1].model_flops == grad.flops == 2 * forward.flops  # 2 * 4*1*4*32*(64*65/2) = 2,129,920


# ---- a whole training step -----------------------------------------------------------------------------------


def _mlp_step(net, x):
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, foreach=True)
    with setup():  # a steady-state step: the momentum buffers exist already
        for p in net.parameters():
            opt.state[p]["momentum_buffer"] = torch.zeros_like(p)
    net(x).pow(2).mean().backward()
    opt.step()


def test_a_training_step_counts_what_eager_autograd_runs():
    """Linear(64, 32) -> ReLU -> Linear(32, 8) on 16 rows, MSE-like loss, SGD foreach: the GEMMs are the forward's two,
    layer 2's data and weight gradients, layer 1's weight gradient only (its input needs none)."""
    net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    w = capture(_mlp_step, net, torch.randn(16, 64))
    gemm = sum(k.matrix_flops * n for k, n in w.counted if k.kind == "gemm")
    b, d0, d1, d2 = 16, 64, 32, 8
    forward = 2 * b * d0 * d1 + 2 * b * d1 * d2  # 65,536 + 8,192
    backward = 2 * (2 * b * d1 * d2) + 2 * b * d0 * d1  # layer 2: dX, dW; layer 1: dW
    assert gemm == forward + backward  # 155,648
    params = d0 * d1 + d1 + d1 * d2 + d2  # 2,344
    assert w.recipe.params == params and w.recipe.training
    foreach = [k for k, _ in w.counted if k.name.startswith("_foreach")]
    # momentum buf *= 0.9; buf += grad; p += -lr * buf: three foreach launches over every parameter element
    assert len(foreach) == 3
    _same(_one(foreach[0]), ops.foreach(params, 1, 1, 1, "fp32"))
    assert foreach[2].vector_flops == 2 * params  # alpha = -lr: a multiply-add per element


def _one(kernel):
    """A one-kernel workload of ``kernel``."""
    return sk.Workload("one", [kernel])


def test_fused_adamw_launches_as_multi_tensor_apply():
    """AdamW(fused=True) over 40 parameter tensors: ops.adamw of all their elements, ceil(40 / 36) = 2 launches."""
    net = torch.nn.Sequential(*[torch.nn.Linear(8, 8, bias=False) for _ in range(40)])

    def step(net, x):
        opt = torch.optim.AdamW(net.parameters(), fused=True)
        with setup():
            for p in net.parameters():
                opt.state[p] = {"step": torch.zeros(()), "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.zeros_like(p)}
        net(x).sum().backward()
        opt.step()

    w = capture(step, net, torch.randn(2, 8))
    fused = [k for k, _ in w.counted if k.name.startswith("_fused_adamw_")]
    assert len(fused) == 1
    _same(_one(fused[0]._replace(launches=1.0)), ops.adamw(40 * 64, "fp32"))
    assert fused[0].launches == 2  # 40 tensors at most 36 per launch (4 lists deep); 2,560 elements fit 320 chunks


# ---- what a profile maps, capture maps identically ------------------------------------------------------------


def _records(name: str) -> dict:
    text, path = read_text(PROFILES / f"{name}.json.gz")
    found: dict = {}
    for r in read_chrome(text, path):
        if r.kind == "kernel" and r.op:
            found.setdefault((r.op, r.shapes), r)
    return found


def _strided(shape, strides, dtype):
    return torch.empty_strided(shape, strides, dtype=dtype)


#: (ATen op, the profiled call's input dims, the program making it on tensors of the same dims, strides and dtypes)
BERT_CALLS = [
    ("aten::addmm", ((768,), (4096, 768), (768, 768), (), ()),
     lambda: torch.addmm(_strided((768,), (1,), torch.bfloat16), _strided((4096, 768), (768, 1), torch.bfloat16),
                         _strided((768, 768), (768, 1), torch.bfloat16).t())),
    ("aten::native_layer_norm", ((8, 512, 768), (), (768,), (768,), ()),
     lambda: torch.nn.functional.layer_norm(torch.empty(8, 512, 768), (768,), torch.empty(768), torch.empty(768),
                                            1e-12)),
    ("aten::_log_softmax", ((4096, 30522), (), ()),
     lambda: torch._log_softmax(torch.empty(4096, 30522, dtype=torch.bfloat16), 1, False)),
    ("aten::gelu", ((8, 512, 3072), ()), lambda: torch.nn.functional.gelu(torch.empty(8, 512, 3072, dtype=torch.bfloat16))),
    ("aten::native_dropout", ((8, 512, 768), (), ()),
     lambda: torch.native_dropout(torch.empty(8, 512, 768), 0.1, True)),
]


@pytest.mark.parametrize("op, dims, program", BERT_CALLS, ids=[c[0] for c in BERT_CALLS])
def test_a_profiled_call_maps_as_its_capture(op, dims, program):
    """The H200 BERT profile's call and the same call captured: identical dims, dtypes and strides, one mapping."""
    record = _records("bert_train")[(op, dims)]
    event = next(e for e in calls(program) if e.op == op)
    assert event.trace.shapes == record.shapes and event.trace.dtypes == record.dtypes
    assert event.trace.strides == record.strides
    assert event.trace.concrete == record.concrete  # the profiler's text: "1", "[768]", "9.9999999999999998e-13"
    profiled = map_call(record.op, record.shapes, record.dtypes, record.concrete, record.strides)
    captured = map_call(event.op, *event.trace)
    assert isinstance(profiled, Mapped) and isinstance(captured, Mapped)
    assert (captured.operator, captured.arguments) == (profiled.operator, profiled.arguments)


# ---- eager semantics: views, unmodeled ops, autocast, fills ----------------------------------------------------


def test_views_launch_nothing():
    """Reshapes, transposes, slices and detach launch no kernel: a program of views only is refused as empty."""
    with pytest.raises(CaptureError, match="launched no kernel"):
        capture(lambda x: x.view(4, 8).t()[1:].detach().unsqueeze(0), torch.randn(32))


def test_an_unmodeled_op_stays_visible():
    """torch.sort of [1024, 256] fp32 has no operator: an unmodeled kernel reading x and writing values and int64
    indices, no FLOPs, and in the coverage (beside the indices' arange and its copy into the 1,024 slices, which are
    modelled: 2 of 3 calls)."""
    w = capture(lambda x: torch.sort(x, dim=-1), torch.randn(1024, 256))
    (kernel, count), = [(k, n) for k, n in w.counted if k.name.startswith("sort")]
    n = 1024 * 256
    assert kernel.op == "unmodeled" and count == 1
    assert kernel.bytes_read == n * 4 and kernel.bytes_written == n * 4 + n * 8  # 1,048,576 read; 3,145,728 written
    assert kernel.executed_flops == 0
    cov = w.recipe.coverage
    assert cov.unmodeled == (("aten::sort", 1),) and cov.calls == 3 and cov.fraction == pytest.approx(2 / 3)


def _launches(w) -> list[tuple[str, float]]:
    """(ATen name, kernels launched) of each captured launch, in program order."""
    return [(k.name.split(" ")[0], k.launches) for k, n in w.counted for _ in range(n)]


def test_sort_launches_as_cuda_sorts():
    """torch.sort as ATen's CUDA sort runs it (Sort.cpp, the H200 traces of a MoE's routing): a slice of at most 4,096
    elements is sorted in place after an arange of its indices (a memcpy copies them into one slice, a kernel into
    several); one longer slice of int64 keys is cub's radix sort: the reverse-index fill, histogram, exclusive sum and
    8 one-byte passes (3 + 8 = 11 launches); several longer slices stay one launch."""
    ids = torch.randint(0, 8, (772,))  # 386 tokens x top-2: the small sort
    assert _launches(capture(lambda x: torch.sort(x), ids)) == [("arange", 1.0), ("sort", 1.0)]
    rows = torch.randn(4, 300)  # 4 slices of 300: the arange copied into the 4 slices
    assert _launches(capture(lambda x: torch.sort(x), rows)) == [("arange", 1.0), ("copy_", 1.0), ("sort", 1.0)]
    long_ids = torch.randint(0, 8, (6792,))  # 3,396 tokens x top-2 > 4,096: cub
    assert _launches(capture(lambda x: torch.sort(x), long_ids)) == [("sort", 11.0)]
    stable = capture(lambda x: torch.sort(x, stable=True), long_ids)  # sort.stable: dim after the stable flag
    assert _launches(stable) == [("sort", 11.0)]
    assert _launches(capture(lambda x: torch.sort(x, dim=0), torch.randn(5000, 2))) == [("sort", 1.0)]  # segmented
    unstable = capture(lambda x: torch.sort(x, stable=False, dim=0), long_ids)  # sort.stable with stable=False
    assert _launches(unstable) == [("sort", 11.0)]
    fp32 = capture(lambda x: torch.sort(x), torch.randn(6792))  # 4-byte keys: 3 + 4 passes
    assert _launches(fp32) == [("sort", 7.0)]


def test_sort_into_out_tensors_reads_its_dim():
    """sort.values(self, dim, descending, *, values, indices) has dim second, as sort has; sort.values_stable has it
    after the stable flag. Of [2, 5000]: along dim 0 (5,000 slices of 2) the small sort, the arange copied into the
    slices; along dim 1 (2 slices of 5,000 > 4,096) the segmented sort, one launch."""
    def into(dim):
        return lambda x, v, i: torch.sort(x, dim, False, out=(v, i))

    x, v, i = torch.randn(2, 5000), torch.empty(2, 5000), torch.empty(2, 5000, dtype=torch.int64)
    small = [("arange", 1.0), ("copy_", 1.0), ("sort", 1.0)]
    assert _launches(capture(into(0), x, v, i)) == small
    assert _launches(capture(into(1), x, v, i)) == [("sort", 1.0)]
    stable = capture(lambda x, v, i: torch.sort(x, stable=True, dim=0, out=(v, i)), x, v, i)  # sort.values_stable
    assert _launches(stable) == small


def test_a_routers_topk_and_histc_launch_two_kernels():
    """A router's top-2 of 8 experts (sorted) is ATen's single-block selection, then the 2 results sorted (2 launches);
    unsorted, or k = 1, the selection alone. histc over a given range zero-fills its histogram first (2 launches)."""
    logits = torch.randn(1640, 8)
    assert _launches(capture(lambda x: torch.topk(x, 2, dim=-1), logits)) == [("topk", 2.0)]
    assert _launches(capture(lambda x: torch.topk(x, 2, dim=-1, sorted=False), logits)) == [("topk", 1.0)]
    assert _launches(capture(lambda x: torch.topk(x, 1, dim=-1), logits)) == [("topk", 1.0)]
    assert _launches(capture(lambda x: torch.topk(x, 2, dim=-1), torch.randn(8, 4096))) == [("topk", 1.0)]
    ids = torch.randn(3280)
    assert _launches(capture(lambda x: torch.histc(x, bins=8, min=0, max=7), ids)) == [("fill_", 1.0), ("histc", 1.0)]


def test_zeros_launch_one_fill():
    """torch.zeros launches a fill of its output (eager: empty then fill_); torch.empty launches nothing."""
    def f(x):
        return torch.zeros(256, 1024) + x, torch.empty(1024)

    w = capture(f, torch.randn(256, 1024))
    names = [k.name.split(" ")[0] for k, _ in w.counted]
    assert names == ["fill_", "add"]
    _same(_one(w.counted[0][0]), ops.fill(256 * 1024, "fp32"))


def test_dropout_is_cudas_fused_kernel():
    """nn.Dropout(0.1) in train mode is one native_dropout kernel (ops.dropout), as on a GPU (a CPU build would
    decompose it); in eval mode it launches nothing."""
    w = capture(torch.nn.Dropout(0.1), torch.randn(64, 1024))
    _same(w, ops.dropout(64 * 1024, dtype="fp32"))
    with pytest.raises(CaptureError, match="launched no kernel"):
        capture(torch.nn.Dropout(0.1).eval(), torch.randn(64, 1024))


def test_autocast_casts_as_cuda_autocast_does():
    """A fp32 Linear called twice under torch.autocast("cuda", bf16): input, weight and bias cast for the first call,
    the input only for the second (the weight cache of the autocast region); the GEMMs run in bf16."""
    lin = torch.nn.Linear(64, 32)

    def f(lin, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return lin(x), lin(x)

    w = capture(f, lin, torch.randn(16, 64))
    copies = [k for k, n in w.counted for _ in range(n) if k.name.startswith("_to_copy")]
    gemms = [k for k, _ in w.counted if k.kind == "gemm"]
    assert len(copies) == 3 + 1 and all(k.precision == "bf16" for k in gemms) and len(gemms) == 2


def test_autocast_runs_layer_norm_in_fp32():
    """Under CUDA autocast a bf16 layer_norm input is cast to fp32 first, and the norm runs in fp32."""
    def f(x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return torch.nn.functional.layer_norm(x, (256,))

    w = capture(f, torch.randn(32, 256, dtype=torch.bfloat16))
    (cast, _), (norm, _) = w.counted
    assert cast.name.startswith("_to_copy") and norm.precision == "fp32"
    _same(_one(norm), ops.layernorm(32, 256, dtype="fp32"))


# ---- repeats ---------------------------------------------------------------------------------------------------


class _Block(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


class _Stack(torch.nn.Module):
    def __init__(self, n: int, d: int = 32) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(_Block(d) for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_identical_layers_are_held_once():
    """Six identical blocks of a ModuleList: one block x 6 (Workload.repeat), 4 kernels each, 24 runs in all."""
    w = capture(_Stack(6), torch.randn(8, 32))
    (body, count), = w.parts
    assert count == 1 and body.parts[0][1] == 6 and len(body.parts[0][0]) == 4
    assert len(w) == 6 * 4 and w.recipe.layers == 6
    single = capture(_Stack(1), torch.randn(8, 32))
    assert w.flops == 6 * single.flops


class _Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2


#: one module instance outside every model, called from each block's forward: how transformers 5.25 (with `kernels`)
#: runs apply_rotary_pos_emb, as a global `Func` module that no model registers
_SHARED_SCALE = _Scale()


class _CallsShared(_Block):
    def forward(self, x):
        return x + self.down(torch.relu(self.up(_SHARED_SCALE(x))))


def test_a_module_outside_the_model_called_inside_a_layer_is_that_layers():
    """Six blocks each calling one shared module that no model registers: its mul is the calling block's (5 kernels
    a block: the mul and _Block's 4), and the six blocks are still one block x 6, as in
    test_identical_layers_are_held_once."""
    stack = _Stack(6)
    stack.layers = torch.nn.ModuleList(_CallsShared(32) for _ in range(6))
    w = capture(stack, torch.randn(8, 32))
    (body, count), = w.parts
    assert count == 1 and body.parts[0][1] == 6 and len(body.parts[0][0]) == 4 + 1  # _Block's 4 and the mul
    assert len(w) == 6 * 5 and w.recipe.layers == 6
    assert not any("_Scale" in node.name for node, _ in w.parts)


def test_backward_layers_are_held_once_too():
    """The backward of six blocks: the last block's alone (its incoming gradient is sum's broadcast, stride 0, so its
    calls differ), then one block's backward x 5."""
    w = capture(lambda m, x: m(x).sum().backward(), _Stack(6), torch.randn(8, 32, requires_grad=True))
    counts = [(node.name, node.parts[0][1] if node.name.endswith(tuple(f" x {n}" for n in range(2, 7))) else 1)
              for node, _ in w.parts if node.name.startswith("layers")]
    assert [c for _, c in counts] == [6, 1, 5]
    assert counts[1][0].startswith("layers.5 ") and counts[2][0].startswith("layers.4-0 ")
    assert len(w) == 6 * 4 + 2 + 6 * 8  # forward, sum and its seed fill, 8 backward kernels per block


# ---- memory ----------------------------------------------------------------------------------------------------


def test_peak_follows_allocation_and_free_order():
    """x, a = 2x, b = 3a, del a, c = 4b on 1 MiB tensors: at most x, a and b live at once, 3 MiB."""
    def f(x):
        a = x * 2
        b = a * 3
        del a
        return b * 4

    w = capture(f, torch.randn(256, 1024))  # 256 * 1024 * 4 B = 1,048,576 B, a multiple of 512
    mem = w.recipe.memory
    assert mem.peak == 3 * 1_048_576 and mem.activations == mem.peak and mem.parameters == 0


def test_training_memory_by_kind():
    """Linear(1024, 1024, bias=False) fp32 with AdamW: 4 MiB of weights, 4 MiB of gradients, 8 MiB of moments."""
    lin = torch.nn.Linear(1024, 1024, bias=False)

    def step(lin, x):
        opt = torch.optim.AdamW(lin.parameters(), fused=True)
        with setup():
            opt.state[lin.weight] = {"step": torch.zeros(()), "exp_avg": torch.zeros_like(lin.weight),
                                     "exp_avg_sq": torch.zeros_like(lin.weight)}
        lin(x).sum().backward()
        opt.step()

    mem = capture(step, lin, torch.randn(64, 1024)).recipe.memory
    weights = 1024 * 1024 * 4  # 4,194,304
    assert mem.parameters == weights and mem.optimizer_states == 2 * weights
    assert mem.gradients in (0, weights)  # the peak comes before the gradient or with it
    assert mem.peak == mem.parameters + mem.gradients + mem.optimizer_states + mem.activations


# ---- syncs -----------------------------------------------------------------------------------------------------


class _Reads(torch.nn.Module):
    def forward(self, x):
        return x * float(x.sum().item())


def test_a_host_read_is_a_recorded_stall():
    """``.item()`` becomes a host stall (counted, its place kept), the value read standing in as zero."""
    w = capture(_Reads(), torch.randn(64))
    assert w.recipe.syncs == 1 and len(w.recipe.stalls) == 1
    assert any("stands in as zero" in n for n in w.recipe.notes)


def test_a_host_read_can_be_an_error():
    """syncs="error": ``.item()`` is a CaptureError naming the op and where it ran (the root module's class here)."""
    with pytest.raises(CaptureError, match=r"aten::_local_scalar_dense in the root module \(_Reads\) reads"):
        capture_call(_Reads(), (torch.randn(64),), syncs="error")


def test_a_failed_capture_leaves_the_callers_objects_real():
    """A real module and optimizer (its state a defaultdict, as every torch optimizer's) come back holding their real
    tensors, after a capture that ran and after one that failed inside the program."""
    net = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.randn(2, 8)).sum().backward()
    opt.step()  # the momentum buffers: real optimizer state

    def step(net: Any, opt: Any, x: Any) -> None:
        net(x).sum().backward()
        opt.step()

    def broken(net: Any, opt: Any, x: Any) -> None:
        net(x)
        raise RuntimeError("the program fails part way")

    capture(step, net, opt, torch.randn(4, 8))
    with pytest.raises(CaptureError, match="the program fails part way"):
        capture(broken, net, opt, torch.randn(4, 8))
    real = type(torch.randn(1))
    assert type(net.weight) is torch.nn.Parameter and type(net.weight.data) is real
    assert all(type(p.data) is real for g in opt.param_groups for p in g["params"])
    assert all(type(s["momentum_buffer"]) is real for s in opt.state.values())
    assert opt.param_groups[0]["params"][0] is net.weight


def test_a_loop_on_a_host_read_is_refused(monkeypatch):
    """A loop waiting for a value the GPU computes never ends on fake tensors (it reads zero): refused, not a hang
    (the limit lowered to 50 reads here; it is ``MAX_STALLS``)."""
    from solkit.capture import record

    monkeypatch.setattr(record, "MAX_STALLS", 50)
    MAX_STALLS = 50

    def waits(x: Any) -> Any:
        while not bool((x > 0).all().item()):
            x = x + 1
        return x

    with pytest.raises(CaptureError, match=f"read on the host {MAX_STALLS:,} times"):
        capture(waits, torch.randn(4))


def test_a_read_inside_setup_is_no_stall():
    """``setup()`` launches nothing in the program: a host read there is no stall of the program."""
    def prepared(x: Any) -> Any:
        with setup():
            x.sum().item()
        return x * 2

    assert capture(prepared, torch.randn(8)).recipe.syncs == 0


class _Picks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Identity()

    def forward(self, x):
        return torch.nonzero(self.inner(x) > 0)


def test_a_data_dependent_shape_is_an_error_naming_what_gets_past_it():
    """nonzero's output size depends on the data: a CaptureError naming aten::nonzero, and the grouped-GEMM route."""
    with pytest.raises(CaptureError, match="aten::nonzero.*grouped_mm"):
        capture(_Picks(), torch.randn(64))


# ---- predict -----------------------------------------------------------------------------------------------------


def test_a_captured_program_predicts_as_an_eager_program():
    """predict reads the recipe (eager, its layers): a captured stack predicts a positive time with host time."""
    w = capture(_Stack(4), torch.randn(64, 32))
    assert w.recipe.kernels == "eager" and not w.recipe.preamble and not w.recipe.training
    p = sk.predict(w, "h200")
    assert p.seconds > 0
