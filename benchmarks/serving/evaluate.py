#!/usr/bin/env python3
"""solkit's serving predictions against ``generate.py``'s measurements: fit the engines' host figures, or report.

    python benchmarks/serving/evaluate.py data/h200_serving_fit_seed3001.json data/h200_serving_fit_seed3003.json \
        --profile data/h200_serving_decode_profile.json --fit                              # the figures to freeze
    python benchmarks/serving/evaluate.py data/h200_serving_test_seed3004.json --markdown  # the frozen report
    python benchmarks/serving/evaluate.py data/h200_serving_repeat_seed3006.json --repeat-of \
        data/h200_serving_test_seed3006.json --markdown --case-probe                        # two timings of one draw

Each measured case is predicted by ``planning.inference(model, "h200", batch, prompt, output, engine=...)``, the
model built by ``models.from_hf_config`` from the case's recorded config, as a user calls it: without a launch probe up
to seed 3005 (``--probe`` passes the draw's recorded one: a diagnosis), or with each case's (``--case-probe``, as a user passes
``host_probe_us=sk.host_probe()``: a diagnosis up to seed 3005, whose reading chose it as the protocol of the frozen
draws from seed 3006 on, declared before seed 3006 was measured). ``--fit``
(``fit``'s docstring): the figures of ``stacks.transformers517`` from the pooled fit files and the profile's timings
(the full models and their 2-layer cuts). The report: per family and engine, the median and p90 of
exp(|log(pred / meas)|) - 1.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import sys
from typing import Any

import numpy as np

import solkit as sk
from solkit import models, planning
from solkit.calibration.metrics import apart, median_p90


def predictions(doc: dict[str, Any], probe: bool, case_probe: bool = False,
                figures: planning.GenerateHost | None = None, timed_probe: bool = False) -> list[dict[str, Any]]:
    """One row per measured case: measured and predicted TTFT and TPOT and the host's share of each. ``figures``:
    generate's host figures to try in place of ``stacks.transformers517``'s (the fit's; then through ``planning``'s
    own ``_served``, the path ``inference`` takes on one GPU). ``timed_probe``: TTFT read at the probe taken just
    before its timed calls, TPOT at the one just before the timed calls of all N tokens (from seed 3008 on)."""
    gpu = sk.load_gpu("h200")
    rows = []
    probe_us = doc.get("host_probe_us") if probe else None
    for cid, c in doc["cases"].items():
        if c.get("status") != "ok":
            continue
        m = _model(c)
        if timed_probe:
            if not (c.get("ttft_probe_us") and c.get("t_n_probe_us")):
                raise SystemExit(f"{cid}: --timed-probe reads ttft_probe_us and t_n_probe_us (generate.py from seed "
                                 f"3008 on); this case recorded none")
            at_ttft = _served(m, gpu, c, c["ttft_probe_us"], figures)
            at_t_n = _served(m, gpu, c, c["t_n_probe_us"], figures)
            ttft, host_ttft, tpot, host_tpot = at_ttft[0], at_ttft[2], at_t_n[1], at_t_n[3]
        else:
            ttft, tpot, host_ttft, host_tpot = _served(m, gpu, c, c["case_probe_us"] if case_probe else probe_us,
                                                       figures)
        rows.append({"id": cid, "family": c["family"], "engine": c["engine"], "layers": m.layers,
                     "ttft_meas": c["ttft_s"], "tpot_meas": c["tpot_s"], "ttft_pred": float(ttft),
                     "tpot_pred": float(tpot), "host_ttft": float(host_ttft), "host_tpot": float(host_tpot)})
    return rows


def _served(m: Any, gpu: Any, c: dict[str, Any], probe_us: float | None,
            figures: planning.GenerateHost | None) -> tuple[Any, Any, Any, Any]:
    """(TTFT, TPOT, host TTFT, host TPOT) predicted for case ``c`` at ``probe_us``: ``inference`` as a user calls it,
    or with ``figures`` in place of the stack's (``planning._served``, the path ``inference`` takes on one GPU)."""
    if figures is None:
        e = planning.inference(m, gpu, batch=c["batch"], prompt=c["prompt"], output=c["output"], engine=c["engine"],
                               host_probe_us=probe_us)
        return e.ttft, e.tpot, e.host_ttft, e.host_tpot
    return planning._served(m, gpu, c["batch"], c["prompt"], c["output"], c["engine"], SERVE_OPTIONS, probe_us,
                            figures)


@functools.lru_cache(maxsize=None)
def _built(config: str) -> Any:
    return models.from_hf_config(json.loads(config))


def _model(c: dict[str, Any]) -> Any:
    """The case's model from its recorded config (the profile's layer sweep: the family with its layers cut)."""
    config = dict(c["model"]["hf_config"])
    if c.get("layers") is not None:
        config.update({k: c["layers"] for k in LAYER_KEYS if k in config})
        if config.get("layer_types"):
            config["layer_types"] = config["layer_types"][:c["layers"]]
    return _built(json.dumps(config, sort_keys=True))


LAYER_KEYS = ("num_hidden_layers", "n_layer")
#: inference's defaults, which the draws ran (bf16, no quantization, SDPA)
SERVE_OPTIONS = {"dtype": "bf16", "kv_dtype": None, "quant": None, "impl": "sdpa"}


def profile_doc(path: str, configs: dict[str, Any]) -> dict[str, Any]:
    """``profile_decode.py``'s timings as hf-eager cases (the full model and its cut to a few layers; the configs are
    the draws' own): fit data, measured by the same TTFT / TPOT protocol at one shape."""
    with open(path) as f:
        prof = json.load(f)
    cases = {}
    for family, rec in prof["families"].items():
        for label in ("full", "few"):
            t = rec[label]
            cases[f"profile-{family}-{label}"] = {
                "status": "ok", "family": family, "engine": "hf-eager", "batch": prof["batch"], "prompt": prof["prompt"],
                "output": prof["tokens"], "ttft_s": t["ttft_s"], "tpot_s": t["tpot_s"], "case_probe_us": rec[f"{label}_probe_us"],
                "layers": t["layers"] if label == "few" else None, "model": {"hf_config": configs[family]}}
    return {"host_probe_us": None, "cases": cases}


def fit(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of ``stacks.transformers517`` (us, in the fit hosts' probe units) from the pooled fit cases.

    generate's per-request and per-token figures add to TTFT and TPOT as they are (the GPU waits on them); its Python
    per layer enters each eager forward's timeline (``planning._engine_host``), where the kernels may hide it. So for a
    tried per-layer figure each case is predicted with the other figures 0, and the request and token figures are the
    median residuals of hf-eager's TTFT and TPOT (least absolute deviations of an intercept); the per-layer figure is the
    one of least summed absolute deviation over both (a grid of 10 us, then 1 us, then 0.1 us about the best).
    hf-static: the per-token figure is the median TPOT residual (its compiled step launches nothing from the host), the
    static cache's per-layer figure the median of (TTFT residual - request) / layers.
    """
    def rows(layer: float) -> list[dict[str, Any]]:
        zero = planning.GenerateHost(request={"hf-eager": 0.0, "hf-static": 0.0},
                                     token={"hf-eager": 0.0, "hf-static": 0.0}, layer=layer, cache_layer=0.0)
        return [r for d in docs for r in predictions(d, False, figures=zero)]

    def deviation(layer: float) -> tuple[float, float, float, list[dict[str, Any]]]:
        got = rows(layer)
        eager = [r for r in got if r["engine"] == "hf-eager"]
        ttft = np.array([r["ttft_meas"] - r["ttft_pred"] for r in eager])
        tpot = np.array([r["tpot_meas"] - r["tpot_pred"] for r in eager])
        request, token = float(np.median(ttft)), float(np.median(tpot))
        return float(np.abs(ttft - request).sum() + np.abs(tpot - token).sum()), request, token, got

    best = 0.0
    for step, span in ((10.0, (0.0, 1000.0)), (1.0, (-10.0, 10.0)), (0.1, (-1.0, 1.0))):
        low, high = (span if step == 10.0 else (best + span[0], best + span[1]))
        grid = np.round(np.arange(max(low, 0.0), high + step / 2, step), 1)
        best = float(min(grid, key=lambda x: deviation(float(x))[0]))
    _, request, token, got = deviation(best)
    static = [r for r in got if r["engine"] == "hf-static"]
    static_token = statistics.median(r["tpot_meas"] - r["tpot_pred"] for r in static)
    cache = statistics.median((r["ttft_meas"] - r["ttft_pred"] - request) / r["layers"] for r in static)

    def us(v: Any) -> float:
        return round(float(v) * 1e6, 1)

    return {"GENERATE_REQUEST_US": {"hf-eager": us(request), "hf-static": us(request)},
            "GENERATE_TOKEN_US": {"hf-eager": us(token), "hf-static": us(static_token)},
            "GENERATE_LAYER_US": best, "STATIC_CACHE_LAYER_US": us(cache),
            "cases": {"hf-eager": sum(r["engine"] == "hf-eager" for r in got), "hf-static": len(static)}}


def error(pred: float, meas: float) -> float:
    """exp(|log(pred / meas)|) - 1: 0.1 is 10% off either way."""
    return apart(pred, meas)


def table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (family, engine) and overall per engine: cases, median and p90 error of TTFT and TPOT."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["family"], r["engine"]), []).append(r)
        groups.setdefault(("all", r["engine"]), []).append(r)
    out = []
    for (family, engine), rs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0] == "all", kv[0][0])):
        row: dict[str, Any] = {"family": family, "engine": engine, "cases": len(rs)}
        for what in ("ttft", "tpot"):
            errs = np.array([error(r[f"{what}_pred"], r[f"{what}_meas"]) for r in rs])
            ratio = np.array([r[f"{what}_pred"] / r[f"{what}_meas"] for r in rs])
            row.update({f"{what}_median": float(np.median(errs)), f"{what}_p90": float(np.percentile(errs, 90)),
                        f"{what}_ratio_range": (float(ratio.min()), float(ratio.max()))})
        out.append(row)
    return out


def repeatability(first: dict[str, Any], second: dict[str, Any]) -> list[dict[str, Any]]:
    """Per engine, of the cases measured in both of two timings of one draw (``second`` the same cases timed again):
    their number and the median and p90 of ``error(a, b)`` of their TTFT, their TPOT and their launch probes."""
    out = []
    for engine in sorted({c["engine"] for c in first["cases"].values()}):
        pairs = [(c, second["cases"][i]) for i, c in first["cases"].items() if c["engine"] == engine
                 and c.get("status") == "ok" and second["cases"].get(i, {}).get("status") == "ok"]
        row: dict[str, Any] = {"engine": engine, "cases": len(pairs)}
        for what in ("ttft_s", "tpot_s", "case_probe_us"):
            row[f"{what}_median"], row[f"{what}_p90"] = median_p90([apart(a[what], b[what]) for a, b in pairs])
        out.append(row)
    return out


def common(doc: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with only its cases measured in ``other`` too (both ok): two timings scored on the same cases."""
    ok = {i for i, c in other["cases"].items() if c.get("status") == "ok"}
    return {**doc, "cases": {i: c for i, c in doc["cases"].items() if c.get("status") == "ok" and i in ok}}


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1%}"


def repeat_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| engine | cases in both | TTFT apart: median | p90 | TPOT apart: median | p90 | launch probe apart: median |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['engine']} | {r['cases']} | {_pct(r['ttft_s_median'])} | {_pct(r['ttft_s_p90'])} | "
                     f"{_pct(r['tpot_s_median'])} | {_pct(r['tpot_s_p90'])} | {_pct(r['case_probe_us_median'])} |")
    return "\n".join(lines)


def markdown(summary: list[dict[str, Any]]) -> str:
    lines = ["| engine | family | cases | TTFT median | TTFT p90 | TTFT pred/meas | TPOT median | TPOT p90 | TPOT pred/meas |",
             "|---|---|---:|---:|---:|---|---:|---:|---|"]
    for r in summary:
        lo, hi = r["ttft_ratio_range"]
        plo, phi = r["tpot_ratio_range"]
        fam = f"**{r['family']}**" if r["family"] == "all" else r["family"]
        lines.append(f"| {r['engine']} | {fam} | {r['cases']} | {r['ttft_median']:.1%} | {r['ttft_p90']:.1%} | "
                     f"{lo:.2f}-{hi:.2f} | {r['tpot_median']:.1%} | {r['tpot_p90']:.1%} | {plo:.2f}-{phi:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="+", help="one or more generate.py files (pooled)")
    ap.add_argument("--profile", help="profile_decode.py's file: its timings join the cases (fit data only)")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--probe", action="store_true", help="predict with the recorded launch probe (host_probe_us)")
    ap.add_argument("--case-probe", action="store_true", help="predict each case with the probe taken just before it "
                    "(case_probe_us; the seed-3002 draw onwards): the frozen draws' protocol from seed 3006 on, a diagnosis "
                    "before")
    ap.add_argument("--timed-probe", action="store_true", help="predict each case's TTFT at the probe taken just "
                    "before its timed calls and its TPOT at the one before the timed calls of all N tokens "
                    "(ttft_probe_us, t_n_probe_us): the frozen draws' reading from seed 3008 on")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--cases", action="store_true", help="print every case's row")
    ap.add_argument("--repeat-of", metavar="FIRST", help="DATA (one file) times again the cases of this generate.py "
                    "file: print how far the two timings agree (repeatability), then the report of each timing on the "
                    "cases measured in both (FIRST's first)")
    args = ap.parse_args(argv)
    if sum((args.probe, args.case_probe, args.timed_probe)) > 1:
        ap.error("--probe, --case-probe and --timed-probe are three readings: give one")
    if args.repeat_of and (len(args.data) != 1 or args.fit or args.profile):
        ap.error("--repeat-of compares one DATA file with FIRST (no --fit, no --profile)")
    probe = args.probe
    rows: list[dict[str, Any]] = []
    docs = []
    for path in args.data:
        with open(path) as f:
            docs.append(json.load(f))
        rows += predictions(docs[-1], probe, args.case_probe, timed_probe=args.timed_probe)
    if args.profile:
        configs = {c["family"]: c["model"]["hf_config"] for d in docs for c in d["cases"].values() if "model" in c}
        rows += predictions(profile_doc(args.profile, configs), False, args.case_probe)
    if args.fit:
        if probe or args.case_probe or args.timed_probe:
            raise SystemExit("--fit fits without a probe (the figures are in the fit hosts' units: the module's docstring)")
        pooled = docs + ([profile_doc(args.profile, configs)] if args.profile else [])
        print(json.dumps(fit(pooled), indent=1))
    if args.cases:
        for r in rows:
            print(f"{r['id']:42s} TTFT {r['ttft_pred'] / r['ttft_meas']:.2f}  TPOT {r['tpot_pred'] / r['tpot_meas']:.2f}")
    if args.repeat_of:
        with open(args.repeat_of) as f:
            first = json.load(f)
        again = repeatability(first, docs[0])
        print(repeat_markdown(again) if args.markdown else json.dumps(again, indent=1))
        both = [table(predictions(common(d, o), probe, args.case_probe, timed_probe=args.timed_probe))
                for d, o in ((first, docs[0]), (docs[0], first))]
        for summary in both:
            print(markdown(summary) if args.markdown else json.dumps(summary, indent=1))
        return 0
    summary = table(rows)
    print(markdown(summary) if args.markdown else json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
