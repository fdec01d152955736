"""Training-only kernels: ``dropout``, the ``nll_loss`` of cross-entropy, and optimizer steps (``adamw``,
``foreach``).

DESIGN: dropout and optimizer kernels carry zero model FLOPs; their arithmetic is executed (vector)
FLOPs only, so a step's model FLOPs stay 3x the forward's. Cross-entropy is ``softmax`` over the
logits (aten::_log_softmax, same counts) then ``nll_loss``.
"""

from __future__ import annotations

from typing import Any

from ..workload import Kernel, Workload
from ._common import element_bytes, single
from .elementwise import pointwise
from .embedding import INDEX_BYTES
from .registry import MEMORY_BOUND, operator, option, precision, size, text

__all__ = ["dropout", "nll_loss", "adamw", "foreach", "DROPOUT_FLOPS", "ADAMW_FLOPS", "MASK_BYTES", "REDUCTIONS"]

#: executed vector FLOPs per element of dropout: compare the random number with p, scale (the RNG's own
#: integer arithmetic is not counted); its backward: dy * mask * scale
DROPOUT_FLOPS = 2
#: bytes of one element of dropout's keep-mask (torch.bool)
MASK_BYTES = 1
#: executed vector FLOPs per parameter of one AdamW step: decay p -= lr*wd*p (2); m = b1*m + (1-b1)*g (3);
#: v = b2*v + (1-b2)*g*g (4); the bias corrections m/bc1, v/bc2 (2); sqrt, + eps, divide (3); p -= lr*ratio (2)
ADAMW_FLOPS = 16
REDUCTIONS = ("mean", "sum", "none")


def _dropout_backward(label: str, elements: Any, dtype: str) -> Workload:
    """dx = dy * mask * scale: reads dy (N*e) and the mask (N*1 B), writes dx (N*e); 2 vector FLOPs per
    element, no model FLOPs (twice the forward's 0)."""
    e = element_bytes(dtype)
    kernel = Kernel(f"{label} backward", "elementwise", dtype, vector_flops=DROPOUT_FLOPS * elements,
                    bytes_read=elements * (e + MASK_BYTES), bytes_written=elements * e, model_flops=0.0, op="dropout")
    return single(f"{label} backward", kernel)


@operator(
    "dropout",
    params=dict(elements=size("elements of x"), dtype=precision()),
    kinds=("elementwise",),
    aten=("aten::native_dropout",),
    aten_backward=("aten::native_dropout_backward",),
    backward=_dropout_backward,
    example=dict(elements=8 * 512 * 768),
)
def dropout(elements: Any, dtype: Any = "bf16") -> Workload:
    """y = x * mask / (1 - p), mask ~ Bernoulli(1 - p), one kernel that also writes the mask.

    Bytes: N*e read (x); N*e (y) + N*1 (the bool mask) written. FLOPs: 2*N executed (vector), 0 model.
    """
    e = element_bytes(dtype)
    # x [N] -> y [N], mask [N] (bool)
    kernel = Kernel("dropout", "elementwise", dtype, vector_flops=DROPOUT_FLOPS * elements, bytes_read=elements * e,
                    bytes_written=elements * (e + MASK_BYTES), model_flops=0.0, op="dropout")
    return single("dropout", kernel)


def _nll_written(rows: Any, reduction: str) -> Any:
    """Elements the forward writes: the loss and the total weight (mean, sum) or one loss per row (none)."""
    return rows if reduction == "none" else 2.0


def _nll_backward(label: str, rows: Any, classes: Any, reduction: str, dtype: str) -> Workload:
    """grad_input[i, target[i]] = -grad / total_weight: reads the targets (rows*8) and the incoming gradient
    (1 element, or rows for reduction="none"), writes one element per row (rows*e); 2*rows FLOPs (twice the
    forward's, vector, model). NB: grad_input [rows, classes] is zeroed first by its own kernel (ATen's
    aten::zero_, a ``fill`` of rows*classes elements), not counted here.
    """
    e = element_bytes(dtype)
    grad = rows if reduction == "none" else 1.0
    kernel = Kernel(f"{label} backward", "reduction", dtype, vector_flops=2.0 * rows,
                    bytes_read=rows * INDEX_BYTES + grad * e, bytes_written=rows * e, op="nll_loss")
    return single(f"{label} backward", kernel)


@operator(
    "nll_loss",
    params=dict(rows=size("rows (tokens or images) each with one target"),
                classes=size("classes per row (the vocabulary); the kernel reads one per row"),
                reduction=option("mean or sum: one loss; none: one per row", *REDUCTIONS),
                dtype=precision("precision of the log-probabilities")),
    kinds=("reduction",),
    aten=("aten::nll_loss_forward",),
    aten_backward=("aten::nll_loss_backward",),
    backward=_nll_backward,
    example=dict(rows=4096, classes=30522),
)
def nll_loss(rows: Any, classes: Any, reduction: Any = "mean", dtype: Any = "bf16") -> Workload:
    """loss = -mean_i logp[i, target[i]] over logp [rows, classes] (cross-entropy after a log-softmax), one kernel.

    Bytes: rows*8 (int64 targets) + rows*e (the picked log-probabilities) read; mean and sum write the loss
    and the total weight (2*e), none writes rows*e. FLOPs: rows (one add per row; vector, model).
    NB: the other classes are never read (classes does not change the counts); class weights are not modeled.
    """
    e = element_bytes(dtype)
    # logp [rows, classes], target [rows] (int64) -> loss [] (mean, sum) or [rows] (none)
    kernel = Kernel("nll_loss", "reduction", dtype, vector_flops=rows, bytes_read=rows * (INDEX_BYTES + e),
                    bytes_written=_nll_written(rows, reduction) * e, op="nll_loss")
    return single(f"nll_loss ({reduction})", kernel)


@operator(
    "adamw",
    params=dict(elements=size("parameters updated (all tensors of the list)"),
                dtype=precision("precision of the parameters and both moments"),
                grad_dtype=precision("precision of the gradients (default: dtype)", optional=True)),
    kinds=("elementwise",),
    aten=("aten::_fused_adamw_", "aten::_fused_adam_"),
    backward=MEMORY_BOUND,
    example=dict(elements=109_514_298, dtype="fp32"),
)
def adamw(elements: Any, dtype: Any = "fp32", grad_dtype: Any = None) -> Workload:
    """One fused AdamW step over every parameter (``torch.optim.AdamW(fused=True)``), one kernel per chunk of lists.

    Per element: reads p, g, m, v; writes p, m, v. Bytes: P*(3*e + e_g) read, 3*P*e written.
    FLOPs: 16*P executed (vector; see ``ADAMW_FLOPS``), 0 model. NB: Adam (aten::_fused_adam_) counts
    the same (its L2 decay is added to g instead of p); amsgrad's fourth state is not modeled; an
    optimizer step has no gradient, its backward is only the registry's convention.
    """
    e = element_bytes(dtype)
    e_g = element_bytes(grad_dtype or dtype)
    # p, g, m, v [P] -> p, m, v [P]
    kernel = Kernel("adamw", "elementwise", dtype, vector_flops=ADAMW_FLOPS * elements,
                    bytes_read=elements * (3.0 * e + e_g), bytes_written=3.0 * elements * e, model_flops=0.0,
                    op="adamw")
    return single("adamw", kernel)


@operator(
    "foreach",
    params=dict(elements=size("elements of one tensor list (all its tensors)"),
                inputs=size("tensor lists read", minimum=0), outputs=size("tensor lists written"),
                flops_per_element=size("vector FLOPs per element", minimum=0), dtype=precision(),
                name=text("the kernel's name")),
    kinds=("elementwise",),
    aten=("aten::_foreach_add_", "aten::_foreach_add", "aten::_foreach_sub_", "aten::_foreach_sub",
          "aten::_foreach_mul_", "aten::_foreach_mul", "aten::_foreach_div_", "aten::_foreach_div",
          "aten::_foreach_addcmul_", "aten::_foreach_addcdiv_", "aten::_foreach_lerp_", "aten::_foreach_sqrt",
          "aten::_foreach_sqrt_", "aten::_foreach_zero_", "aten::_foreach_copy_"),
    backward=MEMORY_BOUND,
    example=dict(elements=25_557_032, inputs=2, outputs=1, flops_per_element=2, dtype="fp32"),
)
def foreach(
    elements: Any,
    inputs: Any = 1,
    outputs: Any = 1,
    flops_per_element: Any = 1,
    dtype: Any = "fp32",
    name: Any = "foreach",
) -> Workload:
    """An elementwise op over tensor lists (``torch._foreach_*``: the foreach optimizers' steps), one kernel.

    Bytes: (inputs + outputs)*elements*e. FLOPs: flops_per_element*elements executed (vector), 0 model
    (optimizer arithmetic). SGD with momentum and weight decay: d = g + wd*p (2 lists in, 1 out),
    buf *= momentum, buf += d, p += -lr*buf.
    """
    # inputs x [elements] lists -> outputs x [elements] lists: the elementwise kernel, with no model FLOPs
    kernel = pointwise(name, elements, inputs, outputs, flops_per_element, dtype, op="foreach")
    return single(name, kernel._replace(model_flops=0.0))
