"""Whole programs: the eager issue timeline (host vs GPU), the host-time fit, the step files and their report."""

from __future__ import annotations

import numpy as np
import pytest

import solkit as sk
from solkit.workload import issued_launches
from solkit import models
from solkit.calibration.programs import (STEP_FIT_DATA, STEP_TEST_DATA, nonnegative_least_squares, fit_host,
                                         load_steps, workload_of_step)
from solkit.prediction.timeline import clocks, compose, power
from solkit.prediction import calibration, program_map
from solkit.workload import Kernel, Workload


def _simulate(bodies, host):
    """Launch i issued at (i+1)*host, starts at max(issue, previous end): the end of the last kernel."""
    end = 0.0
    for i, body in enumerate(bodies):
        end = max((i + 1) * host, end) + body
    return end


def _kernels(*bodies):
    parts = tuple((Kernel(f"k{i}", "elementwise", "bf16", bytes_read=1.0), 1) for i, _ in enumerate(bodies))
    w = Workload.of("w", parts)
    return w, {id(k): b for (k, _), b in zip(w.parts, bodies)}


def test_issue_timeline_by_hand():
    """Bodies 10, 1, 1 us, 5 us of host per launch: 5 -> 15, 15 -> 16, 16 -> 17: the GPU finishes at 17 us."""
    w, body = _kernels(10e-6, 1e-6, 1e-6)
    host, stream, gradients, prefetch = clocks(program_map(w, body, 5e-6, 0.0))
    assert host == pytest.approx(15e-6)  # the host issued 3 launches
    assert stream == pytest.approx(17e-6) and gradients == prefetch == 0.0
    # CPU-bound: bodies 1 us each, 5 us per launch: the last launch at 15 us ends at 16 us
    w, body = _kernels(1e-6, 1e-6, 1e-6)
    _, stream, _, _ = clocks(program_map(w, body, 5e-6, 0.0))
    assert stream == pytest.approx(16e-6)


@pytest.mark.parametrize("bodies, n, host", [((10.0, 1.0, 1.0), 7, 5.0), ((1.0, 1.0), 50, 3.0), ((2.0, 30.0, 2.0), 4, 9.0)])
def test_repeated_blocks_match_the_launch_by_launch_simulation(bodies, n, host):
    """n repeats of a block in closed form (max-plus algebra) equal simulating every launch."""
    w, body = _kernels(*bodies)
    block = program_map(w, body, host, 0.0)
    h, stream, _, _ = clocks(power(block, n))
    assert stream == pytest.approx(_simulate(list(bodies) * n, host)) and h == pytest.approx(n * len(bodies) * host)
    h2, stream2, _, _ = clocks(compose(block, power(block, n - 1)))
    assert stream2 == pytest.approx(stream) and h2 == pytest.approx(h)


def test_nonnegative_least_squares_by_hand():
    """y = 2 + 3 x exactly: (2, 3); with the intercept forced negative by the data, it is pinned at 0."""
    x = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    assert nonnegative_least_squares(x, np.array([2.0, 5.0, 8.0])) == pytest.approx((2.0, 3.0))
    # y = -1 + 2 x: the best fit with b0 >= 0 is b0 = 0 and b1 = (0*(-1) + 1*1 + 2*3) / (0 + 1 + 4) = 7/5
    assert nonnegative_least_squares(x, np.array([-1.0, 1.0, 3.0])) == pytest.approx((0.0, 1.4))


def test_committed_host_times_equal_their_fit():
    """The spec's host_* parameters are fit_host of the committed step files, rounded as the file keeps them."""
    host = fit_host([load_steps(name) for name in STEP_FIT_DATA])
    cal = calibration(sk.load_gpu("h200"))
    for name in ("host_program", "host_layer", "host_launch", "host_launch_training"):
        assert getattr(cal, name) == pytest.approx(getattr(host, name), abs=1e-12), name
    assert host.inference_cases >= 20 and host.training_cases >= 10


def test_eager_programs_pay_host_time_fused_ones_do_not():
    """The same decode step: eager adds the CPU's issue time (CPU-bound at batch 1), fused (a graph replay) does not."""
    m = models.preset("llama3-8b")
    eager = sk.predict(m.decode(batch=1, context=1024), "h200", warn=False)
    fused = sk.predict(m.decode(batch=1, context=1024, kernels="fused"), "h200", warn=False)
    cal = calibration(sk.load_gpu("h200"))
    launches = issued_launches(m.decode(batch=1, context=1024))
    assert eager.host_seconds == pytest.approx(cal.host_program + 32 * cal.host_layer + launches * cal.host_launch)
    assert fused.host_seconds == 0
    assert eager.seconds >= eager.host_seconds and "CPU-bound" in eager.notes[-1]


def test_step_files_build_their_programs():
    """Every measured case of the fit file maps to a solkit program of the same family and mode."""
    steps = load_steps(STEP_FIT_DATA[0])
    assert len(steps.cases) >= 80 and all(c.ok for c in steps.cases)
    seen = set()
    for case in steps.cases:
        w = workload_of_step(case)
        assert w.recipe is not None and len(w) > 0
        seen.add((case.family, case.mode))
    assert {("bert", "train"), ("gpt2", "decode"), ("llama", "prefill"), ("resnet50", "train")} <= seen


@pytest.mark.parametrize("name", STEP_FIT_DATA + STEP_TEST_DATA)
def test_t_sol_of_every_measured_step_is_below_it(name):
    """T_SOL of each whole program solkit builds stays below the step's measured time (fit runs and the frozen test)."""
    steps = load_steps(name)
    fractions = [sk.roofline(workload_of_step(c), "h200").t_sol / (c.wall_ms * 1e-3) for c in steps.cases if c.ok]
    assert len(fractions) >= 60 and max(fractions) <= 1.0


@pytest.mark.parametrize("name, all_median, gpu_p90", [("h200_steps_test_seed2062.json", 0.11, 0.20),
                                                       ("h200_steps_test_seed2042.json", 0.15, 0.25),
                                                       ("h200_steps_test_seed2041.json", 0.10, 0.20)])
def test_the_frozen_tests(name, all_median, gpu_p90):
    """The frozen draws (90 steps each), timed before any profiler ran in the process, each case predicted with the
    launch probe it recorded. Seed 2042, after commit be3dbc7 (the model as it stands; its machine's probes 8.89 us
    median against the fit's 5.67): all 13.5% median (p90 38.0%), GPU-bound 5.8% / 21.7%, CPU-bound 16.1%; without the
    probe 42.1%. Seed 2041, after commit f08f101 (probes 8.09 us): all 6.2% / 23.8%, GPU-bound 5.1% / 12.8%; without
    the probe 17.6%. Seed 2062, after commit c926dc3 (probes 6.99 us; each case at its within-block probe): all 10.2%
    / 27.1%, GPU-bound 4.3% / 18.8%, CPU-bound 12.2%; without the probe 28.8%. The GPU-bound steps within issue 13's
    10% median on all three; the bounds here guard those figures."""
    from solkit.calibration.programs import _summary, step_errors

    assert name in STEP_TEST_DATA
    steps = load_steps(name)
    assert all(c.probe_us for c in steps.cases if c.ok)
    probed = step_errors(steps, "h200", probe=True)
    n, median, _, _ = _summary(probed)
    assert n == 90 and median <= all_median
    n, median, p90, _ = _summary([r for r in probed if not r[0].cpu_bound])
    assert n >= 15 and median <= 0.10 and p90 <= gpu_p90
    plain_cpu = _summary([r for r in step_errors(steps, "h200") if r[0].cpu_bound])
    probed_cpu = _summary([r for r in probed if r[0].cpu_bound])
    assert probed_cpu[1] < plain_cpu[1] / 2  # the probe is what brings the slow machine's host in


def _step_set(*cases):
    """A StepSet of (id, wall_ms, host_ms) cases."""
    from solkit.calibration.programs import StepSet

    return StepSet(created_utc="2026-12-01T00:00:00", env={}, cases=tuple(
        {"id": i, "family": "gpt2", "mode": "prefill", "batch": 1, "seq": 8, "status": "ok", "wall_ms": w, "host_ms": h}
        for i, w, h in cases))


def test_timing_repeat_by_hand():
    """Two timings (wall, host, probe before the case): a CPU-bound in both (10.5, 10, 8 then 13, 12.5, 10); b likewise
    (20, 20, 5 then 30, 30, read at its reported block's probe 6: its probe before the case, 99, is not the one); c
    GPU-bound in both (40, 10, 8 then 50, 10, 8); e CPU-bound first (10, 10) and GPU-bound second (20, 10); d in the
    first only; f failed the second time.
    Walls apart: a 13 / 10.5 - 1 = 23.81%, b 50%, c 25%, e 100%: median (25% + 50%) / 2 = 37.5%, p90 (linear, at
    2.7) 50% + 0.7 x 50% = 85%. Hosts of a and b only (CPU-bound in both): 25%, 50% (median 37.5%, p90 47.5%); over
    each timing's probe: a 1.25 against 1.25, 0%; b 20 / 5 = 4 against 30 / 6 = 5, 25% (median 12.5%, p90 22.5%).
    Midway, sqrt(ratio) - 1: walls 11.27%, 22.47%, 11.80%, 41.42% (median (11.80% + 22.47%) / 2 = 17.14%, p90
    22.47% + 0.7 x 18.95% = 35.74%); the probed hosts 0% and 11.80% (median 5.90%, p90 10.62%)."""
    from solkit.calibration.captured import timing_repeat
    from solkit.calibration.programs import StepSet
    from solkit.errors import SpecError

    def timing(*cases, **extra):
        return StepSet(created_utc="2026-12-03T00:00:00", env={}, cases=tuple(
            {"id": i, "family": "gpt2", "mode": "prefill", "batch": 1, "seq": 8, "status": st, "wall_ms": w,
             "host_ms": h, "probe_us": p, **extra.get(i, {})} for i, w, h, p, st in cases))

    first = timing(("a", 10.5, 10, 8, "ok"), ("b", 20, 20, 5, "ok"), ("c", 40, 10, 8, "ok"), ("d", 5, 5, 8, "ok"),
                   ("e", 10, 10, 8, "ok"), ("f", 7, 7, 8, "ok"))
    second = timing(("a", 13, 12.5, 10, "ok"), ("b", 30, 30, 99, "ok"), ("c", 50, 10, 8, "ok"), ("e", 20, 10, 8, "ok"),
                    ("f", 7, 7, 8, "error: out of memory"),
                    b={"wall_ms_blocks": (31.0, 30.0, 32.0), "probe_us_blocks": (9.0, 6.0, 7.0)})
    r = timing_repeat(first, second)
    assert (r.steps, r.cpu_bound, r.probed, r.model) == (4, 2, 2, None)
    assert r.wall == (pytest.approx(0.375), pytest.approx(0.85))
    assert r.host == (pytest.approx(0.375), pytest.approx(0.475))
    assert r.host_per_probe == (pytest.approx(0.125), pytest.approx(0.225))
    assert r.midway == (pytest.approx(0.171390, abs=1e-6), pytest.approx(0.357373, abs=1e-6))
    assert r.midway_per_probe == (pytest.approx(0.059017, abs=1e-6), pytest.approx(0.106231, abs=1e-6))
    with pytest.raises(SpecError, match="times none of the cases"):
        timing_repeat(first, timing(("g", 1, 1, 8, "ok")))


def test_captured_repeat_scores_the_model_on_the_common_cases():
    """Given each timing's predicted rows, the model's (median, p90) error is over the cases timed in both: the first
    timing's rows a, b, c, e are 10%, 20%, 0%, 50% off (median 15%, p90 20% + 0.7 x 30% = 41%) and its d, timed once
    and 200% off, is left out; the second's a, c 0% and 30% (median 15%, p90 27%)."""
    from solkit.calibration.captured import CapturedStep, captured_repeat
    from solkit.calibration.programs import StepSet

    def timing(*ids):
        return StepSet(created_utc="2026-12-03T00:00:00", env={}, cases=tuple(
            {"id": i, "family": "gpt2", "mode": "prefill", "batch": 1, "seq": 8, "status": "ok", "wall_ms": 40.0,
             "host_ms": 10.0, "probe_us": 8.0} for i in ids))

    def row(i, ratio):
        return CapturedStep(i, "gpt2", "prefill", 1.0, ratio, 1.0, None, None, 0)

    first, second = timing("a", "b", "c", "d", "e"), timing("a", "b", "c", "e")
    rows = ([row("a", 1.1), row("b", 1.2), row("c", 1.0), row("d", 3.0), row("e", 1.5)], [row("a", 1.0), row("c", 1.3)])
    r = captured_repeat(first, second, rows=rows)
    assert r.model == ((pytest.approx(0.15), pytest.approx(0.41)), (pytest.approx(0.15), pytest.approx(0.27)))


def test_repeatability_by_hand():
    """Two timings of three cases: a (CPU-bound in both: wall 10.5 < 1.1 x host 10), b (CPU-bound in both, host 20 then
    30), c (GPU-bound in both, wall 40 then 50). Host of a: 10 vs 12.5 -> 12.5/10 - 1 = 25%; of b: 30/20 - 1 = 50%;
    median of (25%, 50%) = 37.5%; wall of c: 50/40 - 1 = 25%."""
    from solkit.calibration.programs import repeatability

    first = _step_set(("a", 10.5, 10.0), ("b", 20.5, 20.0), ("c", 40.0, 12.0))
    second = _step_set(("a", 13.0, 12.5), ("b", 30.5, 30.0), ("c", 50.0, 12.0), ("d", 5.0, 5.0))
    r = repeatability(first, second)
    assert r["CPU-bound host"][:2] == (2, pytest.approx(0.375))
    assert r["GPU-bound wall"] == (1, pytest.approx(0.25), pytest.approx(0.25))
    only_cpu = repeatability(_step_set(("a", 10.5, 10.0)), _step_set(("a", 13.0, 12.5)))
    assert only_cpu["CPU-bound host"][0] == 1 and only_cpu["GPU-bound wall"][0] == 0  # none: no error, no figure


def test_two_timings_of_the_fit_disagree_beyond_the_cpu_bound_goal():
    """The fit's cases timed twice the same way (two machines, never profiled): GPU-bound wall times agree to a few
    percent, CPU-bound host times do not agree within 20% at the p90 (51% when committed): the floor under issue 13's
    CPU-bound goal on these shared hosts."""
    from solkit.calibration.programs import STEP_REPEAT_DATA, repeatability

    r = repeatability(load_steps(STEP_FIT_DATA[0]), load_steps(STEP_REPEAT_DATA[0]))
    assert r["GPU-bound wall"][0] >= 20 and r["GPU-bound wall"][1] <= 0.05
    assert r["CPU-bound host"][0] >= 20 and r["CPU-bound host"][2] > 0.20


def test_cpu_bound_is_the_wall_within_ten_percent_of_the_host():
    """One definition, the predictor's: wall < 1.1 x host. A 10.5 ms step of 10 ms host time is CPU-bound
    (10.5 < 11.0), an 11 ms one is not; the step files and the split steps' fit and report use the same function, and
    neither re-exports the predictor's factor (CPU_BOUND, whose meaning once differed in parallel)."""
    from solkit import prediction
    from solkit.calibration import parallel, programs

    assert parallel.cpu_bound is programs.cpu_bound is prediction.cpu_bound and prediction.CPU_BOUND == 1.1
    for module in (parallel, programs):
        assert "CPU_BOUND" not in module.__all__ and not hasattr(module, "CPU_BOUND") and "cpu_bound" not in module.__all__
    case = _step_set(("a", 10.5, 10.0), ("b", 11.0, 10.0)).cases
    assert [c.cpu_bound for c in case] == [True, False]


def test_the_step_files_are_read_from_the_manifest_by_role():
    """step_files gives the manifest's step files of a role (STEP_FIT_DATA and the others are the same lists by their
    old names, read on use): the one never-profiled fit file, the frozen seed-2062, 2042 and 2041 draws (newest first);
    a role of no step file is an OptionError naming the roles."""
    from solkit.calibration import programs
    from solkit.errors import OptionError

    assert programs.step_files("fit") == programs.STEP_FIT_DATA == ("h200_steps_fit_unprofiled.json",)
    assert programs.step_files("test") == programs.STEP_TEST_DATA == ("h200_steps_test_seed2062.json",
                                                                      "h200_steps_test_seed2042.json",
                                                                      "h200_steps_test_seed2041.json")
    assert programs.step_files("repeat") == programs.STEP_REPEAT_DATA == ("h200_steps_fit_unprofiled_run2.json",)
    with pytest.raises(OptionError, match="role must be one of fit, test, spent, repeat, profiled, got 'bank'"):
        programs.step_files("bank")
    with pytest.raises(AttributeError, match="has no attribute 'STEP_BANK_DATA'"):
        programs.STEP_BANK_DATA


def test_a_cases_probe_is_the_one_before_its_reported_block(tmp_path):
    """steps.py reports the block of least median wall time; the probe read with it is the one taken just before that
    block (``reported_block`` where recorded, else the least median), a case without blocks keeps the probe before the
    case, and blocks that do not pair with their probes, a reported block out of range or a block time that is not a
    positive number are refused (a SpecError from a file)."""
    import json

    from pydantic import ValidationError

    from solkit.calibration.programs import StepCase, load_steps
    from solkit.errors import SpecError

    base = dict(id="x", family="gpt2", mode="train", batch=1, status="ok", wall_ms=16.2, host_ms=16.1, probe_us=8.4)
    walls, probes = (17.0, 16.2, 16.9), (8.5, 7.1, 9.0)
    assert StepCase(**base, wall_ms_blocks=walls, probe_us_blocks=probes).timed_probe_us == 7.1  # the middle block
    assert StepCase(**base, wall_ms_blocks=walls, probe_us_blocks=probes, reported_block=2).timed_probe_us == 9.0
    assert StepCase(**base).timed_probe_us == 8.4  # no blocks: the probe before the case
    for bad, match in (({"probe_us_blocks": probes[:2]}, "2 probes for 3 blocks"),
                       ({"probe_us_blocks": probes, "reported_block": 3}, "one of its 3 blocks, got 3"),
                       ({"probe_us_blocks": probes, "wall_ms_blocks": (17.0, float("nan"), 16.9)}, "finite"),
                       ({"probe_us_blocks": (8.5, 0.0, 9.0)}, "greater than 0")):
        with pytest.raises(ValidationError, match=match):
            StepCase(**{**base, "wall_ms_blocks": walls, **bad})
    raw = {"created_utc": "2026-12-03T00:00:00+00:00", "env": {},
           "cases": [{**base, "wall_ms_blocks": list(walls), "probe_us_blocks": [8.5, 7.1]}]}
    (tmp_path / "steps.json").write_text(json.dumps(raw))
    with pytest.raises(SpecError, match="probe_us_blocks holds 2 probes for 3 blocks"):
        load_steps(str(tmp_path / "steps.json"))


def test_seed_2048_is_read_at_its_reported_blocks_probe():
    """A committed case (seed 2048's Qwen3 inference under autocast at 7 x 280): blocks of 25.78, 24.77 and 29.05 ms,
    read at the second block's probe, 5.64 us (the probes 5.871, 5.64, 7.552; 8.031 before the case), as the captured
    host counts file carries it."""
    walls = (25.7842, 24.7695, 29.0488)
    from solkit.calibration.captured_host import load_host_counts
    from solkit.calibration.programs import load_steps

    name = "h200_captured_steps_test_seed2048.json"
    case = next(c for c in load_steps(name).cases if c.id == "d2048-qwen3-infer_amp-s280-b7")
    assert (case.probe_us, case.probe_us_blocks, case.wall_ms_blocks) == (8.031, (5.871, 5.64, 7.552), walls)
    assert case.timed_probe_us == 5.64
    row = next(r for r in load_host_counts().rows if r.file == name and r.id == case.id)
    assert row.timed_probe_us == 5.64


def test_accuracy_md_quotes_the_seed_2062_report():
    """docs/accuracy.md's seed-2062 rows (with each case's probe, and without) are the generated report's
    (data/h200_programs.md) GPU-bound, CPU-bound and all rows for that file, median / p90 (cases)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    report = (root / "data" / "h200_programs.md").read_text()
    section = report.split("Step time, h200_steps_test_seed2062.json", 1)[1].split("\nStep time, ", 1)[0]
    plain, probed = section.split("Each case predicted with its probe", 1)

    def rows(text: str) -> dict[str, tuple[str, str, str]]:
        out = {}
        for line in text.splitlines():
            cells = [c.strip() for c in line.split("|")[1:-1]]
            if len(cells) == 5 and cells[0] in ("all", "GPU-bound", "CPU-bound"):
                out[cells[0]] = (cells[2], cells[3], cells[1])
        return out

    p, q = rows(probed), rows(plain)
    accuracy = (root / "docs" / "accuracy.md").read_text()
    assert (f"each case at its within-block probe | **{p['GPU-bound'][0]}** / {p['GPU-bound'][1]} ({p['GPU-bound'][2]}) | "
            f"{p['CPU-bound'][0]} / {p['CPU-bound'][1]} ({p['CPU-bound'][2]}) | {p['all'][0]} / {p['all'][1]} "
            f"({p['all'][2]}) |") in accuracy
    assert (f"| the same without the probe | {q['GPU-bound'][0]} / {q['GPU-bound'][1]} | {q['CPU-bound'][0]} / "
            f"{q['CPU-bound'][1]} | {q['all'][0]} / {q['all'][1]} |") in accuracy


def test_readme_and_the_before_row_of_seed_2062():
    """README's whole-steps row is seed 2062's (all and GPU-bound, median / p90, at each case's probe, as the report
    gives them; peak memory: exp(|log(predicted / measured)|) - 1 over its training, prefill and decode steps), and
    docs/accuracy.md's row at the probe before the reported block is each case predicted at ``probe_at("before")``."""
    import math
    from pathlib import Path

    import numpy as np

    from solkit.calibration.programs import _summary, predicted_memory, step_errors

    root = Path(__file__).resolve().parents[1]
    steps = load_steps("h200_steps_test_seed2062.json")
    at = step_errors(steps, "h200", probe=True)
    every, gpu = _summary(at), _summary([r for r in at if not r[0].cpu_bound])
    memory = [math.expm1(abs(math.log(m / c.peak_memory_bytes))) for c in steps.cases
              if c.ok and c.peak_memory_bytes and c.mode != "infer" and (m := predicted_memory(c)) is not None]
    readme = (root / "README.md").read_text()
    assert (f"(90 cases, seed 2062) | {every[1]:.1%} / {every[2]:.1%} (GPU-bound {gpu[1]:.1%} / {gpu[2]:.1%}; peak "
            f"memory {np.median(memory):.1%} / {np.percentile(memory, 90):.1%}) |") in readme
    before = []
    for c in steps.cases:
        if c.ok:
            p = sk.predict(workload_of_step(c), "h200", warn=False, host_probe_us=c.probe_at("before"))
            before.append((c, math.expm1(abs(math.log(float(p.seconds) / (c.wall_ms * 1e-3))))))

    def pair(rows):
        e = [x for _, x in rows]
        return f"{np.median(e):.1%} / {np.percentile(e, 90):.1%}"

    row = (f"| the same at the probe before the reported block | {pair([r for r in before if not r[0].cpu_bound])} | "
           f"{pair([r for r in before if r[0].cpu_bound])} | {pair(before)} |")
    assert row in (root / "docs" / "accuracy.md").read_text()
