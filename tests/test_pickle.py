"""Workloads, rooflines and predictions pickle (a ``multiprocessing`` pool's results, ``joblib``'s cache): what comes
back reads the same figures, and stays immutable."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import solkit as sk
from solkit import models, ops


def _round_trip(x):
    return pickle.loads(pickle.dumps(x))


@pytest.mark.parametrize("build", [
    lambda: ops.matmul(4096, 4096, 4096),
    lambda: ops.matmul(np.array([512.0, 1024.0, 4096.0]), 4096, 4096),  # a sweep
    lambda: ops.attention(2, 16, 2048, 2048, 128),
    lambda: models.preset("gpt2").forward(batch=2, seq=256),
    lambda: models.training_step(models.preset("llama3-8b").forward(batch=1, seq=2048), dp=4, tp=2),
])
def test_round_trips_read_the_same(build):
    w = build()
    back = _round_trip(w)
    assert back.name == w.name and type(back.recipe) is type(w.recipe)
    assert [(k.name, n) for k, n in back.counted] == [(k.name, n) for k, n in w.counted]
    assert np.array_equal(back.flops, w.flops) and np.array_equal(back.bytes, w.bytes)
    r = sk.roofline(w, "h200")
    assert r.bound is not None  # read one lazy figure before pickling, leave the rest for after
    r_back = _round_trip(r)
    assert np.array_equal(r_back.t_sol, r.t_sol) and str(r_back) == str(r)
    p = sk.predict(w, "h200", warn=False)
    p_back = _round_trip(p)
    assert np.array_equal(p_back.seconds, p.seconds) and str(p_back) == str(p)
    assert p_back.notes == p.notes and len(p_back.kernels) == len(p.kernels)
    for a, b in zip(p_back.kernels, p.kernels):  # a sweep's rows hold arrays: compared field by field
        assert a.name == b.name and a.count == b.count and np.array_equal(a.seconds, b.seconds)
    assert np.array_equal(sk.predict(back, "h200", warn=False).seconds, p.seconds)  # the workload predicts alike


def test_what_comes_back_is_still_immutable():
    w = _round_trip(ops.matmul(64, 64, 64))
    with pytest.raises(AttributeError, match="Workload is immutable: cannot set 'name'"):
        w.name = "other"
    r = _round_trip(sk.roofline(w, "h200"))
    with pytest.raises(AttributeError, match="Roofline is immutable"):
        r.t_sol = 0.0
    p = _round_trip(sk.predict(w, "h200", warn=False))
    with pytest.raises(AttributeError, match="immutable"):
        p.seconds = 0.0
