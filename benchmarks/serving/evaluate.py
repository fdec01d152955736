#!/usr/bin/env python3
"""solkit's serving predictions against ``generate.py``'s measurements: fit the engines' host figures, or report.

    python benchmarks/serving/evaluate.py data/h200_serving_fit_seed3001.json --fit     # the figures to freeze
    python benchmarks/serving/evaluate.py data/h200_serving_test_seed3002.json --markdown  # the frozen report

Each measured case is predicted by ``planning.inference(model, "h200", batch, prompt, output, engine=...)``, the
model built by ``models.from_hf_config`` from the case's recorded config, as a user calls it: without a launch probe
(``--probe`` passes the host's recorded one as ``host_probe_us``; on the fit draw it over-predicts the eager steps and
makes generate's per-token figure negative, so the figures are fitted without it). ``--fit``: each figure of ``stacks.transformers517`` is the median over
the draw's cases of measured minus predicted without that figure (generate's host work per token from TPOT, per
request from the eager TTFT, the static cache's per layer from the static TTFT less the per-request figure), in the
fit host's probe units. The report: per family and engine, the median and p90 of exp(|log(pred / meas)|) - 1.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from typing import Any

import numpy as np

import solkit as sk
from solkit import models, planning
from solkit.stacks import transformers517 as hf


def predictions(doc: dict[str, Any], probe: bool, case_probe: bool = False) -> list[dict[str, Any]]:
    """One row per measured case: measured and predicted TTFT and TPOT, and the host figures inside the prediction."""
    gpu = sk.load_gpu("h200")
    built: dict[str, Any] = {}
    rows = []
    probe_us = doc.get("host_probe_us") if probe else None
    for cid, c in doc["cases"].items():
        if c.get("status") != "ok":
            continue
        if c["family"] not in built:
            built[c["family"]] = models.from_hf_config(c["model"]["hf_config"])
        m = built[c["family"]]
        e = planning.inference(m, gpu, batch=c["batch"], prompt=c["prompt"], output=c["output"], engine=c["engine"],
                               host_probe_us=c["case_probe_us"] if case_probe else probe_us)
        rows.append({"id": cid, "family": c["family"], "engine": c["engine"], "layers": m.layers,
                     "ttft_meas": c["ttft_s"], "tpot_meas": c["tpot_s"], "ttft_pred": float(e.ttft),
                     "tpot_pred": float(e.tpot), "host_ttft": float(e.host_ttft), "host_tpot": float(e.host_tpot)})
    return rows


def fit(rows: list[dict[str, Any]], scale: float) -> dict[str, Any]:
    """The medians that become ``stacks.transformers517``'s figures (us, in the fit host's probe units)."""
    def us(values: list[float]) -> float:
        return round(statistics.median(values) * 1e6 / scale, 1)

    eager = [r for r in rows if r["engine"] == "hf-eager"]
    static = [r for r in rows if r["engine"] == "hf-static"]
    request = us([r["ttft_meas"] - (r["ttft_pred"] - r["host_ttft"]) for r in eager])
    token = {e: us([r["tpot_meas"] - (r["tpot_pred"] - r["host_tpot"]) for r in rows if r["engine"] == e])
             for e in ("hf-eager", "hf-static")}
    layer = us([(r["ttft_meas"] - (r["ttft_pred"] - r["host_ttft"]) - request * 1e-6 * scale) / r["layers"]
                for r in static])
    return {"GENERATE_REQUEST_US": {"hf-eager": request, "hf-static": request}, "GENERATE_TOKEN_US": token,
            "STATIC_CACHE_LAYER_US": layer, "cases": {"hf-eager": len(eager), "hf-static": len(static)}}


def error(pred: float, meas: float) -> float:
    """exp(|log(pred / meas)|) - 1: 0.1 is 10% off either way."""
    return math.exp(abs(math.log(pred / meas))) - 1


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
    ap.add_argument("data")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--probe", action="store_true", help="predict with the recorded launch probe (host_probe_us)")
    ap.add_argument("--case-probe", action="store_true", help="predict each case with the probe taken just before it "
                    "(case_probe_us; the seed-3002 draw onwards): a diagnosis of the host's drift, not the protocol")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--cases", action="store_true", help="print every case's row")
    args = ap.parse_args(argv)
    with open(args.data) as f:
        doc = json.load(f)
    probe = args.probe
    rows = predictions(doc, probe, args.case_probe)
    if args.fit:
        scale = (doc["host_probe_us"] / hf.FIT_PROBE_US) if probe else 1.0
        print(json.dumps(fit(rows, scale), indent=1))
    if args.cases:
        for r in rows:
            print(f"{r['id']:42s} TTFT {r['ttft_pred'] / r['ttft_meas']:.2f}  TPOT {r['tpot_pred'] / r['tpot_meas']:.2f}")
    summary = table(rows)
    print(markdown(summary) if args.markdown else json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
