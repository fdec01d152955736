"""The operator registry: every operator registered once, with a hand-checked count, a backward, kinds and keys."""

from __future__ import annotations

import inspect
import itertools
import re

import pytest

import solkit as sk
from solkit import models, ops
from solkit.errors import OptionError, SpecError
from solkit.ops.registry import boolean, operator, size
from solkit.workload import KERNEL_KINDS

import test_ops_program  # noqa: F401  (registers its hand-checked operators in HAND_CHECKED)
import test_ragged  # noqa: F401  (likewise)
from test_ops import HAND_CHECKED

NAMES = sorted(ops.REGISTRY)


def _variants(op: ops.Operator) -> list[dict]:
    """The op's example called with every combination of its options and flags."""
    choices = {p.name: list(p.choices) if p.kind == "option" else [False, True] for p in op.params
               if p.kind in ("option", "flag")}
    return [{**op.example, **dict(zip(choices, combo))} for combo in itertools.product(*choices.values())]


def test_every_operator_is_hand_checked():
    """Each registered operator's counts are worked out by hand in tests/test_ops.py or test_ops_program.py (and no other name is)."""
    assert HAND_CHECKED == set(ops.REGISTRY)


@pytest.mark.parametrize("name", NAMES)
def test_kinds_keys_and_backward(name):
    """Every variant emits only its declared kinds and known calibration keys; its backward is twice its model FLOPs."""
    op = ops.REGISTRY[name]
    keys = set(ops.calibration_keys())
    assert op.kinds and set(op.kinds) <= set(KERNEL_KINDS)
    for args in _variants(op):
        w = op.function(**args)
        assert w.call.op == name
        for k, _ in w.counted:
            assert k.kind in op.kinds, (args, k)
            assert k.op in keys, (args, k)
        back = models.backward(w)
        assert back.flops == pytest.approx(2 * w.flops, rel=1e-12, abs=0), args
        assert back.executed_flops >= back.flops
        assert back.bytes > 0
        assert all(k.op in keys for k, _ in back.counted)


@pytest.mark.parametrize("name", NAMES)
def test_public_function_is_the_count_validated(name):
    """The public function has the count function's signature; with valid arguments it returns what counting gives."""
    op = ops.REGISTRY[name]
    assert inspect.signature(op.function) == inspect.signature(op.count)
    assert op.function.__wrapped__ is op.count
    assert {p.name for p in op.params} == set(inspect.signature(op.count).parameters)
    args = op.validate({**op.defaults, **op.example})
    assert op.count(**args).bytes == op.function(**op.example).bytes


def test_registering_a_name_twice_is_refused():
    """A second @operator("matmul") is an error, and the registry is unchanged."""
    before = dict(ops.REGISTRY)
    with pytest.raises(ValueError, match="registered twice"):
        operator("matmul", params={"m": size("rows")}, kinds=("gemm",), backward=None, example={"m": 1})(lambda m: None)
    with pytest.raises(ValueError, match="do not match the signature"):
        operator("nothing_like_it", params={"x": boolean("x")}, kinds=("gemm",), backward=None, example={})(lambda y: None)
    assert dict(ops.REGISTRY) == before


def test_aten_names_map_to_operators():
    """ATen names resolve to their operator, the backward ones flagged; an unknown name is a LookupError."""
    assert ops.by_aten("aten::addmm") == (ops.REGISTRY["matmul"], False)
    assert ops.by_aten("aten::native_layer_norm_backward") == (ops.REGISTRY["layernorm"], True)
    assert ops.by_aten("aten::_scaled_dot_product_flash_attention")[0].name == "attention"
    with pytest.raises(LookupError, match="aten::frobnicate"):
        ops.by_aten("aten::frobnicate")
    claimed = [a for op in ops.REGISTRY.values() for a in op.aten + op.aten_backward]
    assert len(claimed) == len(set(claimed))  # no ATen op claimed twice


def test_get_names_the_known_operators():
    """An unknown operator name lists the registered ones."""
    assert ops.get("conv2d") is ops.REGISTRY["conv2d"]
    assert ops.get("layernorm-residual") is ops.REGISTRY["layernorm_residual"]  # the CLI's spelling
    assert ops.get("qkv_projection") is ops.REGISTRY["qkv_projection"]
    with pytest.raises(OptionError, match="op must be one of .*matmul"):
        ops.get("matmull")


def test_spec_calibration_keys_come_from_the_registry():
    """Every key of the H200 calibration tables is a kernel kind or a registered operator's key."""
    keys = set(ops.calibration_keys())
    m = sk.load_gpu("h200").measured
    for table in (m.kernel_latency_us, m.compute_efficiency, m.memory_efficiency):
        assert set(table) <= keys


def test_unknown_calibration_key_is_a_spec_error(tmp_path):
    """A typo in a calibration table's key is a SpecError naming the file and the field, when the predictor reads it."""
    text = sk.load_gpu("h200").path
    spec = tmp_path / "h200-typo.yaml"
    content = open(text).read().replace("name: h200-sxm", "name: h200-typo")
    key = re.search(r"kernel_latency_us: \{(\w+):", content).group(1)  # the table's first key
    content = content.replace(f"kernel_latency_us: {{{key}:", f"kernel_latency_us: {{{key}_typo:", 1)
    spec.write_text(content)
    with pytest.raises(SpecError, match=rf"h200-typo.yaml: field 'measured.kernel_latency_us': '{key}_typo' is neither"):
        sk.predict(ops.add(1000), spec)
