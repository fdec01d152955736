"""models.training_step of a Transformer's forward: what eager PyTorch AMP runs, counted by hand."""

from __future__ import annotations

import math

import pytest

from solkit import models, ops
from solkit.errors import OptionError

B, S = 8, 512
P_BERT = 109_514_298  # BertForMaskedLM parameters


def _named(w, name):
    return [(k, n) for k, n in w.counted if k.name == name]


def test_step_model_flops_are_three_forwards():
    """Casts, dropout, zeroing and AdamW carry no model FLOPs: the step is 3x the training forward (loss included)."""
    bert = models.preset("bert-base")
    step = models.training_step(bert.forward(batch=B, seq=S))
    forward = bert.forward(batch=B, seq=S, amp=True, training=True)
    assert step.flops == pytest.approx(3 * forward.flops, rel=1e-12)


def test_fused_adamw_over_every_parameter():
    """AdamW(fused=True): reads p, g, m, v and writes p, m, v in fp32: 16 P read, 12 P written; multi_tensor_apply
    launches max(ceil(202 tensors / 36), ceil((P / 65536 + 202) / 320)) = max(6, ceil(5.85)) = 6."""
    step = models.training_step(models.preset("bert-base").forward(batch=B, seq=S))
    (adam, count), = _named(step, "adamw")
    assert count == 1
    assert adam.bytes_read == 16 * P_BERT and adam.bytes_written == 12 * P_BERT
    assert adam.launches == 6
    assert adam.model_flops == 0


def test_the_loss_over_the_vocabulary():
    """GPT-2 (ForCausalLMLoss): logits.float() (T x V: 2 bytes in, 4 out), log_softmax in fp32, NLL; the backward zeroes
    a T x V fp32 gradient first."""
    t, v = 4 * 1024, 50257
    step = models.training_step(models.preset("gpt2").forward(batch=4, seq=1024))
    (cast, _), = [(k, n) for k, n in step.counted if k.name == "cast bf16->fp32" and k.bytes_read == 2 * t * v]
    assert cast.bytes_written == 4 * t * v  # 823,410,688
    (softmax, _), = _named(step, "log_softmax")
    assert softmax.precision == "fp32" and softmax.bytes == 2 * 4 * t * v
    (zero, _), = _named(step, "zero the logits' gradient")
    assert zero.bytes_written == 4 * t * v


def test_tied_embedding_gradients_are_added():
    """GPT-2 ties wte to the LM head: the two gradients (fp32 under AMP) are summed: 2 x 4 V d read, 4 V d written."""
    step = models.training_step(models.preset("gpt2").forward(batch=1, seq=128))
    (tied, _), = _named(step, "tied embedding gradients add")
    assert tied.bytes_read == 2 * 4 * 50257 * 768 and tied.bytes_written == 4 * 50257 * 768


def test_amp_weight_gradients_are_cast_back():
    """Each autocast weight cast fp32 -> bf16 has its gradient cast bf16 -> fp32 in the backward (ToCopyBackward)."""
    step = models.training_step(models.preset("bert-base").forward(batch=B, seq=S))
    down = [n for k, n in step.counted if k.name == "cast fp32->bf16" and k.bytes_read == 4 * 3072 * 768]
    back = [n for k, n in step.counted if k.name.startswith("cast fp32->bf16 backward") and k.bytes_read == 2 * 3072 * 768]
    assert sum(down) == 2 * 12 and sum(back) == 2 * 12  # the up and down weights of 12 layers


def test_checkpointing_recomputes_the_layers_without_model_flops():
    """Checkpointing runs every layer's forward again: executed FLOPs grow by the layers', model FLOPs do not."""
    m = models.preset("llama3.2-1b")
    plain = models.training_step(m.forward(batch=1, seq=1024))
    ckpt = models.training_step(m.forward(batch=1, seq=1024), checkpointing=True)
    layers = next(node for node, _ in m.forward(batch=1, seq=1024, amp=True, training=True).parts if node.name == "layers")
    assert ckpt.flops == plain.flops
    assert ckpt.executed_flops == pytest.approx(plain.executed_flops + layers.executed_flops, rel=1e-12)


def test_microbatches_accumulate_gradients():
    """4 microbatches: 4 x (forward, backward), 3 accumulations of every fp32 gradient (read 2, write 1), one AdamW."""
    m = models.preset("gpt2")
    one = models.training_step(m.forward(batch=2, seq=256))
    four = models.training_step(m.forward(batch=2, seq=256), microbatches=4)
    (acc, count), = _named(four, "gradient accumulation")
    assert count == 3 and acc.bytes == 3 * 4 * 124_439_808
    assert four.flops == pytest.approx(4 * one.flops, rel=1e-12)
    assert len(_named(four, "adamw")) == 1


def test_sgd_and_no_optimizer():
    """optimizer='sgd': foreach SGD with momentum, 4 passes over P; None: no optimizer kernels at all."""
    m = models.preset("gpt2")
    sgd = models.training_step(m.forward(batch=1, seq=128), optimizer="sgd")
    passes = _named(sgd, "sgd (foreach)")
    assert len(passes) == 4
    # d = g + wd p (8 P read, 4 P written), buf *= m (4, 4), buf += d (8, 4), p -= lr buf (8, 4): 44 P bytes
    assert sum(k.bytes for k, _ in passes) == 44 * 124_439_808
    none = models.training_step(m.forward(batch=1, seq=128), optimizer=None)
    assert not _named(none, "adamw") and not _named(none, "sgd (foreach)")


def test_launch_rule_of_multi_tensor_apply():
    """A 1B model: ceil((P / 65536 + tensors) / 320) launches when the chunks, not the tensor lists, fill first."""
    m = models.preset("llama3.2-1b")  # 1,235,814,400 parameters in 146 tensors
    step = models.training_step(m.forward(batch=1, seq=128))
    (adam, _), = _named(step, "adamw")
    assert m.param_tensors == 1 + 16 * 9 + 1  # embedding, 16 x (7 linear + 2 norms), final norm: 146
    assert adam.launches == max(math.ceil(146 / 36), math.ceil((1_235_814_400 / 65536 + 146) / 320))  # 60


def test_bad_steps_are_refused():
    """A decode is not trainable; params belongs to ops-built workloads; amp needs a 16-bit forward."""
    m = models.preset("gpt2")
    with pytest.raises(OptionError, match="needs a forward pass"):
        models.training_step(m.decode(batch=1, context=128))
    with pytest.raises(OptionError, match="counts its own parameters"):
        models.training_step(m.forward(batch=1, seq=128), params=10)
    with pytest.raises(OptionError, match="amp=True autocasts to a 16-bit precision"):
        models.training_step(m.forward(batch=1, seq=128, dtype="fp32"), amp=True)
    with pytest.raises(OptionError, match="needs a forward built by solkit.models"):
        models.training_step(ops.matmul(64, 64, 64), optimizer=None, amp=True)
    step = models.training_step(ops.matmul(64, 64, 64), params=64 * 64)
    assert len(_named(step, "adamw")) == 1


def test_training_step_signature_follows_the_design():
    """DESIGN: training_step(forward, optimizer="adamw", microbatches=1, checkpointing=False, ...)."""
    import inspect

    names = list(inspect.signature(models.training_step).parameters)
    assert names[:4] == ["forward", "optimizer", "microbatches", "checkpointing"]
    assert inspect.signature(models.training_step).parameters["optimizer"].default == "adamw"
