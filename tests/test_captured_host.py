"""The host time of captured programs: what capture counts, the rule predict applies, the fit, the committed counts."""

from __future__ import annotations

import dataclasses

import pytest

from solkit.calibration.captured_host import (CAPTURED_HOST_PARAMETERS, HostCount, fit_captured_host, fit_rows,
                                              load_host_counts)
from solkit.calibration.manifest import manifest
from solkit.errors import SpecError
from solkit.hardware import load_gpu
from solkit.prediction import calibration
from solkit.prediction.host import captured_host_overhead, host_scaled, program_host_overhead
from solkit.workload import HostCalls

US = 1e-6


def _row(preamble: bool, training: bool, launches: float, silent: int, modules: int, host_ms: float,
         probe_us: float = 5.0, syncs: int = 0, cpu_bound: bool = True, file: str = "f.json") -> HostCount:
    return HostCount(file=file, id=f"c{launches}-{silent}-{modules}-{training}", family="x",
                     mode="train" if training else "infer", training=training, preamble=preamble, launches=launches,
                     silent=silent, modules=modules, syncs=syncs, host_ms=host_ms, wall_ms=host_ms, probe_us=probe_us,
                     cpu_bound=cpu_bound)


# the parameters the synthetic steps below are made of (us): preamble 500, launch 9, training launch 12, call 7, module 5
TRUE = {"host_captured_program": 500 * US, "host_captured_launch": 9 * US, "host_captured_launch_training": 12 * US,
        "host_captured_call": 7 * US, "host_captured_module": 5 * US}


def _host_ms(preamble: bool, training: bool, launches: float, silent: int, modules: int) -> float:
    us = 500 * preamble + (12 if training else 9) * launches + 7 * silent + 5 * modules
    return us * 1e-3


SHAPES = [(True, False, 300, 200, 400), (True, False, 900, 350, 300), (True, False, 1600, 500, 850),
          (False, False, 180, 60, 110), (True, True, 2000, 2100, 400), (True, True, 5300, 3200, 430),
          (False, True, 700, 400, 60), (True, False, 460, 410, 590), (True, True, 3700, 2600, 320),
          (False, False, 260, 100, 54), (True, False, 800, 250, 240)]


def test_the_fit_recovers_the_parameters_steps_were_made_of():
    """Steps whose host time is exactly the rule's at probe 5 us, fitted at the reference 5 us: the five values back."""
    rows = [_row(*s, host_ms=_host_ms(*s)) for s in SHAPES]
    fitted = fit_captured_host(rows, 5.0 * US)
    for name in CAPTURED_HOST_PARAMETERS:
        assert fitted[name] == pytest.approx(TRUE[name], rel=1e-6), name


def test_the_fit_brings_each_case_to_the_reference_probe():
    """The same steps measured on a CPU twice as slow (probe 10 us, host times doubled) fit the same parameters."""
    rows = [_row(*s, host_ms=2 * _host_ms(*s), probe_us=10.0) for s in SHAPES]
    fitted = fit_captured_host(rows, 5.0 * US)
    assert fitted["host_captured_launch"] == pytest.approx(9 * US, rel=1e-6)  # 2 x 9 us x 5/10
    assert fitted["host_captured_program"] == pytest.approx(500 * US, rel=1e-6)


def test_the_fit_reads_cpu_bound_cases_of_fit_files_with_at_most_one_read_of_the_device():
    """A GPU-bound case (its host time is not the step's pace), one with 25 stalls and one of another file are left out."""
    from solkit.calibration.captured_host import HostCounts

    kept = _row(True, False, 300, 200, 400, 5.0, syncs=1)
    counts = HostCounts(schema_version=1, captured_with={}, command="", rows=(
        kept, _row(True, False, 301, 200, 400, 5.0, cpu_bound=False), _row(True, True, 302, 200, 400, 5.0, syncs=25),
        _row(True, False, 303, 200, 400, 5.0, file="other.json")))
    assert fit_rows(counts, ["f.json"]) == [kept]


def test_the_fit_refuses_too_few_cases_and_a_bad_probe():
    rows = [_row(*s, host_ms=_host_ms(*s)) for s in SHAPES]
    with pytest.raises(SpecError, match="at least 10"):
        fit_captured_host(rows[:4], 5.0 * US)
    with pytest.raises(SpecError, match="reference_probe"):
        fit_captured_host(rows, 0.0)


def test_predict_takes_the_captured_rule_for_a_program_that_counted_its_host_work():
    """Per launch: launch + (preamble + call x silent + module x modules) / launches, by hand."""
    cal = calibration(load_gpu("h200"))
    recipe = _Recipe(training=False, preamble=True, counted=HostCalls(silent=400, modules=300))
    w = _Workload(recipe)
    per_launch = program_host_overhead(w, cal, issued=1000.0)
    expected = (cal.host_captured_launch + (cal.host_captured_program + 400 * cal.host_captured_call
                                            + 300 * cal.host_captured_module) / 1000.0)
    assert per_launch == pytest.approx(expected)
    # the committed spec's values: 9.12 + (549.4 + 400 x 6.32 + 300 x 5.77) / 1000 = 9.12 + (549.4 + 2528 + 1731) / 1000
    # = 9.12 + 4.8084 = 13.9284 us
    assert per_launch == pytest.approx(13.9284 * US, rel=1e-9)
    assert captured_host_overhead(w, cal, recipe.host_calls, 1000.0) == per_launch
    # a probe twice the fit machine's doubles it, as it does the closed forms' host time
    slow = host_scaled(cal, 2 * cal.host_probe)
    assert program_host_overhead(w, slow, issued=1000.0) == pytest.approx(2 * expected)


def test_a_spec_without_the_captured_fit_keeps_the_general_rule():
    """host_captured_launch 0 (not measured): a captured program's host time is the closed forms' rule."""
    cal = dataclasses.replace(calibration(load_gpu("h200")), host_captured_launch=0.0)
    w = _Workload(_Recipe(training=True, preamble=True, counted=HostCalls(silent=400, modules=300)))
    expected = cal.host_launch_training + (cal.host_program + cal.host_layer * 4) / 1000.0
    assert program_host_overhead(w, cal, issued=1000.0) == pytest.approx(expected)


def test_the_committed_spec_holds_the_fit_of_the_committed_counts():
    """The spec's host_captured_* are what the fit gives on the manifest's fit files' counts (rounded as the spec keeps
    them), at the spec's host_probe."""
    cal = calibration(load_gpu("h200"))
    counts = load_host_counts()
    fit_files = set(manifest().files(role="fit", measures="captured_steps"))
    assert {r.file for r in counts.rows} == fit_files  # the counts cover exactly the fit files
    fitted = fit_captured_host(fit_rows(counts), cal.host_probe)
    for name in CAPTURED_HOST_PARAMETERS:
        assert getattr(cal, name) == pytest.approx(fitted[name], rel=1e-9), name


@dataclasses.dataclass(frozen=True)
class _Recipe:
    training: bool
    preamble: bool
    counted: HostCalls
    kernels: str = "eager"
    layers: int = 4

    @property
    def host_calls(self) -> HostCalls:
        return self.counted


class _Workload:
    def __init__(self, recipe: _Recipe) -> None:
        self.recipe = recipe


# ---- with torch: what capture counts, and the committed counts against a fresh capture -------------------------------

def test_capture_counts_silent_calls_and_module_forwards_by_hand():
    """Sequential(Linear, ReLU) under no_grad: 3 module forwards (the Sequential and its two children); 1 call that
    launches nothing (aten::t, the weight's transpose, a view: Linear's addmm reads it); 2 launches (addmm, relu)."""
    torch = pytest.importorskip("torch", reason="capture needs PyTorch (pip install torch==2.13.0, the CPU build)")
    import solkit as sk

    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU())

    def run(x):
        with torch.no_grad():
            return m(x)

    w = sk.capture(run, torch.randn(4, 8))
    assert w.recipe.host_calls == HostCalls(silent=1, modules=3)


def test_the_committed_counts_are_a_fresh_capture_of_their_cases():
    """Four committed rows (four families and modes, the MoE's routing among them) against capturing their cases again
    with this torch."""
    pytest.importorskip("torch", reason="capture needs PyTorch (pip install torch==2.13.0, the CPU build)")
    pytest.importorskip("transformers", reason="captured programs need transformers")
    from solkit.calibration.captured import captured_workload
    from solkit.calibration.programs import load_steps
    from solkit.workload import issued_launches

    counts = load_host_counts()
    wanted = ("d2044-mistral-prefill-s1063-b3", "d2045-qwen2-decode-ctx1055-b19", "d2046-bert-large-train-s189-b22",
              "d2046-mixtral-prefill-s410-b4")
    rows = [r for r in counts.rows if r.id in wanted]
    assert len(rows) == len(wanted)
    for row in rows:
        case = next(c for c in load_steps(row.file).cases if c.id == row.id)
        w = captured_workload(case)
        assert (w.recipe.host_calls.silent, w.recipe.host_calls.modules) == (row.silent, row.modules), row.id
        assert issued_launches(w) == row.launches and w.recipe.syncs == row.syncs
        assert row.host_ms == case.host_ms and row.probe_us == case.probe_us
