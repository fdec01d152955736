"""planning.inference served as people serve: tensor parallelism over a system, named engines, cost, views."""

from __future__ import annotations

import numpy as np
import pytest

import solkit as sk
from solkit import models, planning
from solkit.errors import ArgumentTypeError, OptionError
from solkit.models.parallel import shard
from solkit.prediction import calibration
from solkit.workload import issued_launches
from solkit.stacks import transformers517 as hf

L70 = models.preset("llama3-70b")  # 80 layers, d 8192, 64 heads, 8 KV heads, head_dim 128, ffn 28672, vocab 128256
GPT2 = models.preset("gpt2")  # 12 layers
NODE = sk.load_system("hgx-h200")  # 8 x H200 SXM, NVLink


def test_tp_shards_the_weights_per_gpu_by_hand():
    """Llama-3-70B over tp=8: each GPU holds 1/8 of every linear layer, embedding and head, and the norms whole."""
    e = planning.inference(L70, NODE, batch=1, prompt=128, output=16, tp=8, engine="fused")
    # per layer: q 8192*1024 + o 1024*8192 = 16,777,216; k, v 8192*128 each = 2,097,152; gate, up, down 3*8192*3584
    # = 88,080,384; two norms 2*8192 = 16,384: 106,971,136; x 80 = 8,557,690,880
    # embedding and head 2 * 16032 * 8192 = 262,668,288; final norm 8192: 8,820,367,360 params x 2 bytes
    assert e.memory.weights == 17_640_734_720
    # params x 2 / tp = 70,553,706,496 * 2 / 8 = 17,638,426,624: the replicated norms add 2,308,096 bytes
    assert e.memory.weights == pytest.approx(L70.params * 2 / 8, rel=2e-4)
    # the KV cache per GPU: 80 layers x 2 (k, v) x 1 KV head x 128 x 144 tokens x 2 bytes = 5,898,240
    assert e.memory.kv_cache == 5_898_240


def test_tp_collectives_count_and_buffers_by_hand():
    """Two all-reduces per layer and one after the embedding, each batch x tokens x d_model x 2 bytes; the logits gathered."""
    w = planning.tp_collectives(L70, batch=4, seq=1, tp=8)
    (reduce, count), (gather, one) = w.parts
    k = reduce.parts[0][0]
    assert (k.link.collective, k.link.n_gpus, count) == ("all_reduce", 8, 2 * 80 + 1)  # 161
    assert k.link.nbytes == 4 * 1 * 8192 * 2  # 65,536
    g = gather.parts[0][0]
    assert (g.link.collective, one) == ("all_gather", 1)
    assert g.link.nbytes == 4 * 16032 * 8 * 2  # rows x ceil(128256 / 8) x 8 x 2 = 1,026,048


def test_a_70b_model_fits_and_is_predicted_on_4_and_8_h200s():
    """Llama-3-70B (141 GB of bf16 weights) does not fit one H200; on 4 and 8 of an HGX node it does, and is faster."""
    one = planning.inference(L70, "h200", batch=8, prompt=2048, output=256, engine="fused")
    assert one.fits is False
    four = planning.inference(L70, NODE, batch=8, prompt=2048, output=256, tp=4, engine="fused")
    eight = planning.inference(L70, NODE, batch=8, prompt=2048, output=256, tp=8, engine="fused")
    assert four.fits and eight.fits and (four.tp, eight.tp) == (4, 8)
    assert eight.memory.total < four.memory.total < 141e9
    assert eight.tpot < four.tpot < one.tpot
    assert "8 x h200-sxm of hgx-h200 (tp=8)" in repr(eight)


def test_tp_adds_the_collectives_to_the_shards_steps():
    """TPOT under tp is the shard's decode step plus its collectives over the node's links (in line), fused: no host."""
    e = planning.inference(L70, NODE, batch=4, prompt=1024, output=2, tp=8, engine="fused")
    part = shard(L70, tp=8)
    contexts = np.unique(np.linspace(1024, 1025, planning.DECODE_POINTS).round())  # 1024, 1025
    steps = [float(sk.predict(part.decode(batch=4, context=c, kernels="fused"), "h200", warn=False).seconds)
             for c in contexts]
    comm = float(sk.predict(planning.tp_collectives(L70, 4, 1, 8), NODE, warn=False).seconds)
    assert e.comm_tpot == pytest.approx(comm, rel=1e-12)
    assert e.tpot == pytest.approx(np.mean(steps) + comm, rel=1e-12)
    # a lower bound of the collectives: 161 ring all-reduces of 65,536 B, 2 x 7/8 of it over 450 GB/s each way
    # (NVLink 4's 900 GB/s both ways): 161 x 114,688 / 450e9 = 4.1e-5 s
    assert comm > 161 * 2 * 7 / 8 * 65536 / 450e9


def test_tp_refusals():
    """More GPUs than the system has, a tp that does not divide the heads, a tp that is not a count."""
    with pytest.raises(OptionError, match="tp=16 is more GPUs than hgx-h200 has"):
        planning.inference(L70, NODE, tp=16)
    with pytest.raises(OptionError, match="must divide"):
        planning.inference(L70, NODE, tp=3)
    with pytest.raises(ValueError, match="tp"):
        planning.inference(L70, NODE, tp=0)
    with pytest.raises(OptionError, match="tp must be at least 2"):
        planning.tp_collectives(L70, 1, 1, 1)


def test_a_system_and_its_name_serve_one_gpu_by_default():
    """A System (or its name) with tp=1 is one of its GPUs: the same figures as that GPU."""
    a = planning.inference(GPT2, "h200", batch=2, prompt=256, output=8)
    b = planning.inference(GPT2, NODE, batch=2, prompt=256, output=8)
    c = planning.inference(GPT2, "hgx-h200", batch=2, prompt=256, output=8)
    assert a.ttft == b.ttft == c.ttft and a.tpot == b.tpot == c.tpot and b.tp == 1


def test_engines_host_figures_by_hand():
    """Inside generate an eager forward runs generate's Python per layer (357.3 us) in place of the spec's host_layer and
    no preamble of its own (generate's per request, 3,230.4 us, and per token, 863.0 us, hold it, the GPU waiting);
    hf-static's cache adds 444.6 us a layer to the request and its compiled step only its 903.3 us; fused none."""
    forward, request, token = planning._engine_host("hf-eager", 12, 1.0)
    assert forward == {"host_program": 0.0, "host_layer": pytest.approx(357.3e-6)}
    assert (request, token) == (pytest.approx(3230.4e-6), pytest.approx(863.0e-6))
    _, request, token = planning._engine_host("hf-static", 12, 1.0)
    assert (request, token) == (pytest.approx((3230.4 + 444.6 * 12) * 1e-6), pytest.approx(903.3e-6))  # 8,565.6 us
    assert planning._engine_host("fused", 12, 1.0) == (None, 0.0, 0.0)
    static = planning.inference(GPT2, "h200", batch=1, prompt=128, output=8, engine="hf-static")
    assert static.host_tpot == pytest.approx(903.3e-6)  # the graph's replay launches nothing from the host
    fused = planning.inference(GPT2, "h200", batch=1, prompt=128, output=8, engine="fused")
    assert fused.host_ttft == fused.host_tpot == 0.0
    assert (hf.GENERATE_TOKEN_US["hf-eager"], hf.GENERATE_LAYER_US, hf.STATIC_CACHE_LAYER_US) == (863.0, 357.3, 444.6)


def test_a_host_bound_decode_step_is_its_host_issue_time():
    """GPT-2's batch-1 decode step is host-bound: its TPOT is at least generate's 863.0 us a token + 357.3 us of Python
    for each of its 12 layers + the spec's 8.73 us for each of its launches (the GPU waits for each)."""
    launches = float(issued_launches(GPT2.decode(batch=1, context=128, kernels="eager")))
    e = planning.inference(GPT2, "h200", batch=1, prompt=128, output=2)
    assert e.tpot >= (863.0 + 357.3 * 12 + 8.73 * launches) * 1e-6  # 233 launches: 7,183.0 us
    assert e.host_tpot <= e.tpot


def test_a_few_layers_never_take_negative_host_time():
    """The host's share of TTFT and TPOT is what the GPU waits on it: at least generate's own per request and per
    token, for a model of one layer too (generate's figures once replaced the spec's preamble, 2,255.8 us, net,
    which left a 1-layer model's TPOT 1,035.6 us below its steps: 863.0 + 357.3 - 2,255.8)."""
    tiny = models.Transformer(layers=1, d_model=256, heads=4, vocab=1024)
    prefill = _kernels_alone(tiny.prefill(batch=1, seq=64, kernels="eager"))
    for engine, request, token in (("hf-eager", 3230.4, 863.0), ("hf-static", 3230.4 + 444.6, 903.3)):
        e = planning.inference(tiny, "h200", batch=1, prompt=64, output=4, engine=engine)
        assert e.host_ttft >= request * 1e-6 and e.host_tpot >= token * 1e-6, engine
        assert e.ttft - e.host_ttft == pytest.approx(prefill, rel=1e-12), engine  # the rest of TTFT: kernels alone
    static = planning.inference(tiny, "h200", batch=1, prompt=64, output=4, engine="hf-static")
    assert static.host_tpot == pytest.approx(903.3e-6)  # its CUDA-graph step issues nothing: generate's token alone


def test_a_batch_sweep_gives_every_host_share_the_sweeps_shape():
    """A sweep over 3 batch sizes: TTFT, TPOT and their host shares are 3 figures each under every engine (hf-static's
    host TPOT is generate's 903.3 us per token at each, a fused engine's 0 at each)."""
    batch = np.array([1, 4, 8])
    for engine in ("hf-eager", "hf-static", "fused"):
        e = planning.inference(GPT2, "h200", batch=batch, prompt=128, output=8, engine=engine)
        assert [np.shape(x) for x in (e.ttft, e.tpot, e.host_ttft, e.host_tpot)] == [(3,)] * 4, engine
    static = planning.inference(GPT2, "h200", batch=batch, prompt=128, output=8, engine="hf-static")
    assert static.host_tpot == pytest.approx([903.3e-6] * 3)
    fused = planning.inference(GPT2, "h200", batch=batch, prompt=128, output=8, engine="fused")
    assert list(fused.host_ttft) == list(fused.host_tpot) == [0.0] * 3


def test_a_probe_scales_generates_host_figures():
    """host_probe_us twice the fit host's doubles generate's own figures (the forward's launches scale as predict
    scales them: the probe over the spec's)."""
    forward, request, token = planning._engine_host("hf-eager", 12, 2.0)  # scale: the probe over the fit host's
    assert (forward["host_layer"], request, token) == (pytest.approx(2 * 357.3e-6), pytest.approx(2 * 3230.4e-6),
                                                       pytest.approx(2 * 863.0e-6))
    e = planning.inference(GPT2, "h200", batch=1, prompt=128, output=8, engine="hf-static",
                           host_probe_us=2 * hf.FIT_PROBE_US)
    assert e.host_tpot == pytest.approx(2 * 903.3e-6)  # 1,806.6 us: the compiled step's host work alone
    one = planning.inference(GPT2, "h200", batch=1, prompt=128, output=8)
    two = planning.inference(GPT2, "h200", batch=1, prompt=128, output=8, host_probe_us=2 * hf.FIT_PROBE_US)
    # the kernels alone do not change with the host's speed: the decode steps at contexts 128, 130, 132, 133, 135
    contexts = np.unique(np.linspace(128, 135, planning.DECODE_POINTS).round())
    kernels = np.mean([_kernels_alone(GPT2.decode(batch=1, context=c, kernels="eager")) for c in contexts])
    assert two.tpot - two.host_tpot == pytest.approx(kernels, rel=1e-12)
    assert one.tpot - one.host_tpot == pytest.approx(kernels, rel=1e-12)
    assert two.host_tpot > one.host_tpot


def test_the_static_engine_attends_over_the_whole_preallocated_cache():
    """hf-static's step reads the cache of prompt + output tokens at every step: (100, 900) and (900, 100) decode alike;
    the eager engine's context grows from the prompt, so its mean step differs."""
    a = planning.inference(GPT2, "h200", batch=16, prompt=100, output=900, engine="hf-static")
    b = planning.inference(GPT2, "h200", batch=16, prompt=900, output=100, engine="hf-static")
    assert a.tpot == b.tpot
    c = planning.inference(GPT2, "h200", batch=16, prompt=100, output=900, engine="fused")
    d = planning.inference(GPT2, "h200", batch=16, prompt=900, output=100, engine="fused")
    assert c.tpot < d.tpot  # mean context 550 against 950


def test_kernels_maps_onto_engines():
    """kernels='fused' is engine='fused', kernels='eager' is 'hf-eager' (the default); a disagreement is refused."""
    f1 = planning.inference(GPT2, "h200", batch=2, prompt=64, output=4, kernels="fused")
    f2 = planning.inference(GPT2, "h200", batch=2, prompt=64, output=4, engine="fused")
    assert (f1.engine, f1.tpot, f1.ttft) == ("fused", f2.tpot, f2.ttft)
    e1 = planning.inference(GPT2, "h200", batch=2, prompt=64, output=4, kernels="eager")
    e2 = planning.inference(GPT2, "h200", batch=2, prompt=64, output=4)
    assert (e1.engine, e1.tpot) == ("hf-eager", e2.tpot) and e2.engine == "hf-eager"
    with pytest.raises(OptionError, match="pass one"):
        planning.inference(GPT2, "h200", kernels="eager", engine="fused")
    with pytest.raises(OptionError, match="'hf-static'"):
        planning.inference(GPT2, "h200", engine="static")
    with pytest.raises(ArgumentTypeError, match="engine"):
        planning.inference(GPT2, "h200", engine=1)


def test_cost_per_request_and_token_by_hand():
    """Per request: latency / batch on tp GPUs; per output token: latency / (batch x output); at 700 W per H200."""
    e = planning.inference(L70, NODE, batch=8, prompt=512, output=64, tp=8, engine="fused", usd_per_gpu_hour=4.0)
    r, t = e.cost_per_request, e.cost_per_token
    assert r.seconds == pytest.approx(e.latency / 8) and t.seconds == pytest.approx(e.latency / (8 * 64))
    assert r.n_gpus == t.n_gpus == 8
    assert r.gpu_hours == pytest.approx(e.latency / 8 * 8 / 3600)
    assert r.energy_j == pytest.approx(e.latency / 8 * 8 * 700)
    assert t.usd == pytest.approx(e.latency / 512 * 8 / 3600 * 4.0)
    free = planning.inference(GPT2, "h200", batch=1, prompt=64, output=4)
    assert free.cost_per_token.usd is None and free.to_dict()["usd_per_token"] is None


def test_reprs_choose_their_units():
    """A TTFT over a second reads in s, a sweep prints one row per batch size, HTML and a frame of the same rows."""
    e = planning.inference(L70, NODE, batch=8, prompt=2048, output=256, tp=4, engine="fused")
    text = repr(e)
    assert e.ttft > 1 and f"TTFT {e.ttft:.4g} s," in text and "e+" not in text
    sweep = planning.inference(GPT2, "h200", batch=np.array([1, 4, 16]), prompt=256, output=32)
    lines = repr(sweep).splitlines()
    assert "a sweep over 3 batch sizes" in lines[0] and len(lines) == 5  # title, header, three rows
    assert [ln.split()[0] for ln in lines[2:]] == ["1", "4", "16"]
    assert "TTFT" in lines[1] and "tokens/s" in lines[1]
    html = sweep._repr_html_()
    assert html.count("<tr>") == 4 and "hf-eager" in html  # header + 3 rows; the caption states the engine
    frame = sweep.to_frame()
    assert list(frame["batch"]) == [1, 4, 16] and frame["tpot"].iloc[2] == pytest.approx(sweep.tpot[2])


def test_split_results_carry_their_step_cost_and_views():
    """search_splits' results: the step's cost on all the system's GPUs, a readable repr, HTML and a frame."""
    from solkit import splits

    found = planning.search_splits(GPT2, NODE, 8, 1024, top=2, usd_per_gpu_hour=2.0)
    r = found[0]
    assert (r.n_gpus, r.cost.n_gpus, r.cost.seconds) == (8, 8, r.seconds)
    assert r.cost.usd == pytest.approx(r.seconds * 8 / 3600 * 2.0)
    assert r.cost.energy_j == pytest.approx(r.seconds * 8 * 700)
    assert "/step" in repr(r) and "GPU-hours" in repr(r) and "<table" in r._repr_html_()
    assert len(splits.frame(found)) == 2 and r.to_frame()["n_gpus"].iloc[0] == 8
    with pytest.raises(ArgumentTypeError, match="SplitResult"):
        splits.frame([1])


def _kernels_alone(w) -> float:
    """An eager program's kernels alone, as predict times a program without host time: the launch floor + every
    kernel's body + a gap per launch after the first (the module docstring of solkit.prediction.expected)."""
    cal = calibration(sk.load_gpu("h200"))
    return float(sk.predict(w, "h200", warn=False).kernel_seconds) + cal.launch_floor + \
        (float(issued_launches(w)) - 1) * cal.kernel_gap


def test_the_estimate_less_its_host_share_is_the_kernels_alone():
    """ttft - host_ttft and tpot - host_tpot are the eager programs' kernels alone, as predict times a program without
    host time: the launch floor + every kernel's body + a gap per launch after the first (the module docstring of
    solkit.prediction.expected); the decode steps' at contexts 300, 310, ..., 340, averaged."""
    alone = _kernels_alone
    e = planning.inference(GPT2, "h200", batch=4, prompt=300, output=41)
    contexts = np.unique(np.linspace(300, 340, planning.DECODE_POINTS).round())  # 300, 310, 320, 330, 340
    steps = [alone(GPT2.decode(batch=4, context=c, kernels="eager")) for c in contexts]
    assert e.tpot - e.host_tpot == pytest.approx(np.mean(steps), rel=1e-12)
    assert e.ttft - e.host_ttft == pytest.approx(alone(GPT2.prefill(batch=4, seq=300, kernels="eager")), rel=1e-12)


def _evaluate():
    """benchmarks/serving/evaluate.py, the script that writes the serving report."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "serving" / "evaluate.py"
    spec = importlib.util.spec_from_file_location("serving_evaluate", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_frozen_serving_figures_are_the_datas():
    """The seed-3004 draw's table with today's model in data/h200_serving.md, and the medians docs/many-gpus.md quotes
    for today's model, are what evaluate.py computes from the measured file (the draw was the frozen test of bc018d1's
    model; its table for that model stays as it was reported)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    ev = _evaluate()
    doc = json.loads((root / "data" / "h200_serving_test_seed3004.json").read_text())
    assert doc["frozen_by_commit"] == "bc018d1" and doc["seed"] == 3004
    summary = ev.table(ev.predictions(doc, False))
    report = (root / "data" / "h200_serving.md").read_text()
    for line in ev.markdown(summary).splitlines()[2:]:
        assert line in report, line
    overall = {r["engine"]: r for r in summary if r["family"] == "all"}
    page = " ".join((root / "docs" / "many-gpus.md").read_text().split())
    e, s = overall["hf-eager"], overall["hf-static"]
    assert (f"today's model (the same figures, meeting the kernels as above) reads that draw hf-eager "
            f"{e['ttft_median']:.1%} off at the median in TTFT and {e['tpot_median']:.1%} in TPOT, "
            f"hf-static {s['ttft_median']:.1%} and {s['tpot_median']:.1%}") in page
    assert sum(r["cases"] for r in overall.values()) == 11


def test_the_seed_3008_frozen_figures_are_the_datas():
    """The seed-3008 draw (16 cases measured after 2ce089f declared its reading: each TTFT at the probe just before
    its timed calls, each TPOT at the one before the timed calls of all N tokens): its table in data/h200_serving.md,
    the medians docs/many-gpus.md and the changelog quote, the verdict (every median within the issue's 15%) and the
    comparison at the probe before each case, recomputed from the raw file."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    ev = _evaluate()
    doc = json.loads((root / "data" / "h200_serving_test_seed3008.json").read_text())
    assert doc["frozen_by_commit"] == "2ce089f" and doc["seed"] == 3008 and doc["fresh_process"] == ["hf-static"]
    ok = [c for c in doc["cases"].values() if c["status"] == "ok"]
    assert all(c["ttft_probe_us"] > 0 and c["t_n_probe_us"] > 0 for c in ok)
    summary = ev.table(ev.predictions(doc, False, timed_probe=True))
    report = (root / "data" / "h200_serving.md").read_text()
    for line in ev.markdown(summary).splitlines()[2:]:
        assert line in report, line
    e, s = ({r["engine"]: r for r in summary if r["family"] == "all"}[k] for k in ("hf-eager", "hf-static"))
    assert (e["cases"], s["cases"]) == (8, 8)
    assert max(e["ttft_median"], e["tpot_median"], s["ttft_median"], s["tpot_median"]) <= 0.15
    page = " ".join((root / "docs" / "many-gpus.md").read_text().split())
    assert (f"model was hf-eager {e['ttft_median']:.1%} off in TTFT and {e['tpot_median']:.1%} in TPOT, hf-static "
            f"{s['ttft_median']:.1%} and {s['tpot_median']:.1%}.") in page
    log = " ".join((root / "CHANGELOG.md").read_text().split())
    assert (f"was hf-eager {e['ttft_median']:.1%} off in TTFT and {e['tpot_median']:.1%} in TPOT, hf-static "
            f"{s['ttft_median']:.1%} and {s['tpot_median']:.1%}: the issue's 15% median is met") in log
    before = {r["engine"]: r for r in ev.table(ev.predictions(doc, False, True)) if r["family"] == "all"}
    assert (f"{before['hf-eager']['ttft_median']:.1%} / {before['hf-eager']['tpot_median']:.1%} and "
            f"{before['hf-static']['ttft_median']:.1%} / {before['hf-static']['tpot_median']:.1%}") in page


def test_the_seed_3007_frozen_figures_are_the_datas():
    """The seed-3007 draw (24 cases, its 8 static ones each in a fresh process, measured after ba73a3d declared that
    protocol): its table in data/h200_serving.md, the medians docs/many-gpus.md and the changelog quote, and the
    protocol the file records, are what evaluate.py computes from the raw file."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    ev = _evaluate()
    doc = json.loads((root / "data" / "h200_serving_test_seed3007.json").read_text())
    assert doc["frozen_by_commit"] == "ba73a3d" and doc["seed"] == 3007 and doc["fresh_process"] == ["hf-static"]
    cases = list(doc["cases"].values())
    assert all(c["process"] == "fresh" for c in cases if c["engine"] == "hf-static")
    assert all("process" not in c for c in cases if c["engine"] == "hf-eager")
    summary = ev.table(ev.predictions(doc, False, True))
    report = (root / "data" / "h200_serving.md").read_text()
    for line in ev.markdown(summary).splitlines()[2:]:
        assert line in report, line
    e, s = ({r["engine"]: r for r in summary if r["family"] == "all"}[k] for k in ("hf-eager", "hf-static"))
    assert (e["cases"], s["cases"]) == (16, 8)
    quoted = (f"hf-eager {e['ttft_median']:.1%} off in TTFT and {e['tpot_median']:.1%} in TPOT, hf-static "
              f"{s['ttft_median']:.1%} and {s['tpot_median']:.1%}")
    for doc_path in ("docs/many-gpus.md", "CHANGELOG.md"):
        assert quoted in " ".join((root / doc_path).read_text().split()), doc_path
    # the verdict's split: both TPOT medians within the issue's 15%, both TTFT medians beyond it
    assert e["tpot_median"] <= 0.15 and s["tpot_median"] <= 0.15
    assert e["ttft_median"] > 0.15 and s["ttft_median"] > 0.15


def test_the_seed_3006_frozen_figures_are_the_datas():
    """The seed-3006 draw (15 cases, measured after 2047fe8 declared its reading: each case with its own probe): its
    table in data/h200_serving.md and the medians docs/many-gpus.md quotes are what evaluate.py computes."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    ev = _evaluate()
    doc = json.loads((root / "data" / "h200_serving_test_seed3006.json").read_text())
    assert doc["frozen_by_commit"] == "2047fe8" and doc["seed"] == 3006
    summary = ev.table(ev.predictions(doc, False, True))
    report = (root / "data" / "h200_serving.md").read_text()
    for line in ev.markdown(summary).splitlines()[2:]:
        assert line in report, line
    e, s = ({r["engine"]: r for r in summary if r["family"] == "all"}[k] for k in ("hf-eager", "hf-static"))
    page = " ".join((root / "docs" / "many-gpus.md").read_text().split())
    assert (f"was hf-eager {e['ttft_median']:.1%} off in TTFT and {e['tpot_median']:.1%} in TPOT, hf-static "
            f"{s['ttft_median']:.1%} and {s['tpot_median']:.1%}") in page
    assert e["cases"] + s["cases"] == 15
    plain = {r["engine"]: r for r in ev.table(ev.predictions(doc, False)) if r["family"] == "all"}
    pe, ps = plain["hf-eager"], plain["hf-static"]  # the earlier reading, for comparison (the report's words)
    assert (f"Without the probe (the earlier reading, for comparison only) they are {pe['ttft_median']:.1%} / "
            f"{pe['tpot_median']:.1%}, the static engine's {ps['ttft_median']:.1%} / {ps['tpot_median']:.1%}") in \
        " ".join(report.split())


def test_the_seed_3005_frozen_figures_are_the_datas():
    """The seed-3005 draw (24 cases, measured after d525a14 froze today's model): its table in data/h200_serving.md, the
    medians docs/many-gpus.md quotes, and the eager medians with each case's probe, are what evaluate.py computes."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    ev = _evaluate()
    doc = json.loads((root / "data" / "h200_serving_test_seed3005.json").read_text())
    assert doc["frozen_by_commit"] == "d525a14" and doc["seed"] == 3005
    report = (root / "data" / "h200_serving.md").read_text()
    page = " ".join((root / "docs" / "many-gpus.md").read_text().split())
    plain, probed = (ev.table(ev.predictions(doc, False, case_probe)) for case_probe in (False, True))
    for summary in (plain, probed):
        for line in ev.markdown(summary).splitlines()[2:]:
            assert line in report, line
    e, s = ({r["engine"]: r for r in plain if r["family"] == "all"}[k] for k in ("hf-eager", "hf-static"))
    assert (f"it was hf-eager {e['ttft_median']:.1%} off at the median in TTFT and {e['tpot_median']:.1%} in TPOT, "
            f"hf-static {s['ttft_median']:.1%} and {s['tpot_median']:.1%}") in page
    p = {r["engine"]: r for r in probed if r["family"] == "all"}["hf-eager"]
    assert f"the eager engine's medians on that draw were {p['ttft_median']:.1%} and {p['tpot_median']:.1%}" in page
    assert e["cases"] + s["cases"] == 24


def test_the_static_decode_profile_docs_quote_is_the_records():
    """docs/many-gpus.md's static-engine figures are data/h200_serving_static_decode_profile.json's: the Llama's
    kernels a decode step (ms) and its TPOT at batch 1 and 13, its kernels a step, the eager engine's at batch 13;
    and its weights' streaming time by hand: 1.2358e9 parameters x 2 bytes / 4.8e12 B/s = 0.515 ms (embedding tied:
    128256 x 2048 = 262.7M, each of 16 layers 10.49M attention + 50.33M MLP)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    runs = json.loads((root / "data" / "h200_serving_static_decode_profile.json").read_text())["runs"]
    page = " ".join((root / "docs" / "many-gpus.md").read_text().split())
    b1 = runs["hf-static_b1"]["families"]["llama"]
    b13 = next(x for x in runs["hf-static_b13"]["stdout"] if x["family"] == "llama" and x["phase"] == "profile")
    b13_time = next(x for x in runs["hf-static_b13"]["stdout"] if x["family"] == "llama" and x["phase"] == "timing")
    eager = runs["hf-eager_b13"]["families"]["llama"]
    assert (f"{b1['profile']['kernel_us_per_step'] / 1e3:.2f} ms of kernels at batch 1 and {b13['kernel_us'] / 1e3:.2f} "
            f"ms at batch 13") in page
    assert f"{b1['profile']['kernels']['total']:.0f} kernels a step through its CUDA graphs ({b13['kernels']:.0f} at" in page
    assert f"in a TPOT of {b1['full']['tpot_s'] * 1e3:.2f} and {b13_time['tpot_full_ms']:.2f} ms" in page
    assert (f"{eager['profile']['kernel_us_per_step'] / 1e3:.2f} ms of kernels ({eager['profile']['kernels']['total']:.0f}) "
            f"in {eager['full']['tpot_s'] * 1e3:.1f} ms") in page
    params = 128256 * 2048 + 16 * ((2 * 2048 * 2048 + 2 * 2048 * 512) + 3 * 2048 * 8192 + 2 * 2048) + 2048
    assert params == 1_235_814_400 and "weights' 0.51 ms at the HBM's 4.8 TB/s" in page
    assert params * 2 / 4.8e12 == pytest.approx(0.515e-3, rel=1e-3)


def test_the_static_decode_repeat_docs_quote_is_the_records():
    """docs/many-gpus.md's static TPOTs timed again (data/h200_serving_static_decode_profile_run2.json's timing lines,
    kernels from its profile lines) beside the frozen draws' own for the same shapes (seeds 3006 and 3004) and the
    first record's at 13 x 128 + 33; the largest ratio of the three (4.98 / 3.17 = 1.57); the worst static miss of seed
    3006 predicted at its own probe (2.89 ms, 0.58x of 4.98) and at this run's probe (2.63 ms: 1 - 2.63 / 3.17 = 17%
    under)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    record = json.loads((root / "data" / "h200_serving_static_decode_profile_run2.json").read_text())
    out = record["stdout"]
    first = json.loads((root / "data" / "h200_serving_static_decode_profile.json").read_text())["runs"]
    page = " ".join((root / "docs" / "many-gpus.md").read_text().split())

    def line(run: str, phase: str) -> dict:
        return next(x for x in out[run] if x["phase"] == phase)

    def drawn(seed: int, case: str) -> dict:
        return json.loads((root / "data" / f"h200_serving_test_seed{seed}.json").read_text())["cases"][case]

    llama13 = line("llama-b13-p125-t52", "timing")["tpot_full_ms"]
    llama6 = line("llama-b6-p1868-t21", "timing")["tpot_full_ms"]
    qwen20 = line("qwen2-b20-p1028-t29", "timing")["tpot_full_ms"]
    c13 = drawn(3006, "d3006-llama-hf-static-b13-p125-o52")
    d13, d6 = c13["tpot_s"] * 1e3, drawn(3006, "d3006-llama-hf-static-b6-p1868-o21")["tpot_s"] * 1e3
    d20 = drawn(3004, "d3004-qwen2-hf-static-b20-p1028-o29")["tpot_s"] * 1e3
    assert (f"13 x 125 + 52 tokens {llama13:.2f} ms a token (seed 3006's run: {d13:.2f}), at 6 x 1868 + 21 {llama6:.2f} "
            f"ms (seed 3006: {d6:.2f}), Qwen2.5-0.5B at 20 x 1028 + 29 {qwen20:.2f} ms (seed 3004: {d20:.2f})") in page
    then = next(x for x in first["hf-static_b13"]["stdout"] if x["family"] == "llama" and x["phase"] == "timing")
    assert (f"13 x 128 + 33 repeats ({line('llama-b13-p128-t33', 'timing')['tpot_full_ms']:.2f} ms against "
            f"{then['tpot_full_ms']:.2f})") in page
    kernels = [line(r, "profile")["kernel_us"] / 1e3 for r in ("llama-b13-p125-t52", "llama-b6-p1868-t21", "qwen2-b20-p1028-t29")]
    assert "their kernels run {:.2f}, {:.2f} and {:.2f} ms a step".format(*kernels) in page
    assert f"up to {max(d13 / llama13, d6 / llama6, d20 / qwen20):.2f}x between two runs" in page
    model = models.from_hf_config(c13["model"]["hf_config"])

    def tpot_ms(probe: float) -> float:
        return planning.inference(model, sk.load_gpu("h200"), batch=13, prompt=125, output=52, engine="hf-static",
                                  host_probe_us=probe).tpot * 1e3

    at_draw = tpot_ms(c13["case_probe_us"])
    at_run = tpot_ms(record["runs"]["llama-b13-p125-t52"]["families"]["llama"]["full_probe_us"])
    assert (f"{at_draw:.2f} ms predicted at its probe for {d13:.2f} measured ({at_draw / d13:.2f}x), is {at_run:.2f} ms "
            f"at this run's probe for {llama13:.2f} ({1 - at_run / llama13:.0%} under)") in page



def _evaluate():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "serving" / "evaluate.py"
    spec = importlib.util.spec_from_file_location("serving_evaluate", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_repeatability_by_hand():
    """evaluate.repeatability: per engine, the cases ok in both timings; a TTFT of 10 then 12.5 ms is 25% apart, 20
    then 30 ms 50% (median 37.5%, p90 25% + 0.9 x 25% = 47.5%); a case failed in either timing is left out."""
    ev = _evaluate()

    def case(engine, ttft, tpot, probe, status="ok"):
        return {"engine": engine, "status": status, "ttft_s": ttft, "tpot_s": tpot, "case_probe_us": probe}

    first = {"cases": {"a": case("hf-eager", 10e-3, 1e-3, 8.0), "b": case("hf-eager", 20e-3, 2e-3, 8.0),
                       "c": case("hf-eager", 5e-3, 1e-3, 8.0), "d": case("hf-static", 4e-3, 1e-3, 6.0)}}
    second = {"cases": {"a": case("hf-eager", 12.5e-3, 1e-3, 6.0), "b": case("hf-eager", 30e-3, 3e-3, 6.0),
                        "c": case("hf-eager", 5e-3, 1e-3, 8.0, "skipped (budget)"), "d": case("hf-static", 4e-3, 1e-3, 6.0)}}
    eager, static = ev.repeatability(first, second)
    assert (eager["engine"], eager["cases"], static["cases"]) == ("hf-eager", 2, 1)
    assert eager["ttft_s_median"] == pytest.approx(0.375) and eager["ttft_s_p90"] == pytest.approx(0.475)
    assert eager["tpot_s_median"] == pytest.approx(0.25)  # 1 -> 1 ms is 0%, 2 -> 3 ms 50%
    assert eager["case_probe_us_median"] == pytest.approx(8 / 6 - 1)  # 33.3%
    assert static["ttft_s_median"] == 0.0


def test_the_serving_repeat_docs_quote_is_the_datas():
    """data/h200_serving.md's and docs/many-gpus.md's figures of seed 3006 timed twice are the files': the
    repeatability table, the second timing over the first per engine (TTFT and TPOT), the eager cases' median probes,
    and the model's medians on each timing read with each case's probe, over the 15 cases timed in both."""
    import json
    from pathlib import Path

    ev = _evaluate()
    root = Path(__file__).resolve().parents[1]
    first = json.loads((root / "data" / "h200_serving_test_seed3006.json").read_text())
    second = json.loads((root / "data" / "h200_serving_repeat_seed3006.json").read_text())
    record = " ".join((root / "data" / "h200_serving.md").read_text().split())
    page = " ".join((root / "docs" / "many-gpus.md").read_text().split())
    assert " ".join(ev.repeat_markdown(ev.repeatability(first, second)).split()) in record
    ranges = {}
    for engine in ("hf-eager", "hf-static"):
        pairs = [(c, second["cases"][i]) for i, c in first["cases"].items() if c["engine"] == engine
                 and c["status"] == "ok" and second["cases"][i]["status"] == "ok"]
        ratios = [b[k] / a[k] for a, b in pairs for k in ("ttft_s", "tpot_s")]
        ranges[engine] = f"{min(ratios):.1f}-{max(ratios):.1f}x"
    assert f"took {ranges['hf-eager']} the time (TTFT and TPOT), the static engine's {ranges['hf-static']}" in record
    assert f"took {ranges['hf-eager']} its first timing with hf-eager and {ranges['hf-static']} with hf-static" in page
    probes = [float(np.median([c["case_probe_us"] for i, c in d["cases"].items() if c["engine"] == "hf-eager"
                               and c["status"] == "ok" and i in first["cases"] and first["cases"][i]["status"] == "ok"]))
              for d in (second, first)]
    assert f"read a median {probes[0]:.1f} us, against {probes[1]:.1f}" in record
    medians = {}
    for tag, doc in (("second", second), ("first", first)):
        other = first if doc is second else second
        rows = {(r["family"], r["engine"]): r for r in ev.table(ev.predictions(ev.common(doc, other), False, case_probe=True))}
        medians[tag] = {e: f"{rows[('all', e)]['ttft_median']:.1%} / {rows[('all', e)]['tpot_median']:.1%}"
                        for e in ("hf-eager", "hf-static")}
    s, f = medians["second"], medians["first"]
    assert (f"{s['hf-eager']} off (TTFT / TPOT medians) with hf-eager and {s['hf-static']} with hf-static on its 15 "
            f"cases, against {f['hf-eager']} and {f['hf-static']} on the first timing") in page
    assert (f"the eager engine's medians are {s['hf-eager'].replace(' / ', ' (TTFT) and ')} (TPOT) against this timing, "
            f"{f['hf-eager'].replace(' / ', ' and ')} against the first; the static engine's "
            f"{s['hf-static'].replace(' / ', ' and ')}, against {f['hf-static'].replace(' / ', ' and ')}") in record
    assert len(ev.common(second, first)["cases"]) == 15


def test_the_static_process_record_docs_quote_is_the_datas():
    """data/h200_serving.md's table and sentences, and docs/many-gpus.md's, of one static call timed in one process
    after other cases and in a fresh one are data/h200_serving_static_process_record.json's: each case's TPOT in both
    (ms), fresh / in one process, the ratios' range, the warmups' ranges, the static cases run before the Llama's."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    doc = json.loads((root / "data" / "h200_serving_static_process_record.json").read_text())
    record = " ".join((root / "data" / "h200_serving.md").read_text().split())
    page = " ".join((root / "docs" / "many-gpus.md").read_text().split())
    inproc = doc["in_process"]["cases"]
    ratios, fresh_warm = {}, []
    for v in doc["fresh"].values():
        (c,) = [x for x in v["cases"].values() if x["status"] == "ok"]
        i = inproc[c["id"]]
        ratios[c["id"]] = c["tpot_s"] / i["tpot_s"]
        fresh_warm.append(c["warmup_s"])
        assert (f"| {c['id']} | {i['tpot_s'] * 1e3:.2f} ms | {c['tpot_s'] * 1e3:.2f} ms | {ratios[c['id']]:.2f} |"
                in record)
    assert f"moves by {min(ratios.values()):.2f}-{max(ratios.values()):.2f}x between a fresh process" in record
    warm = [c["warmup_s"] for c in inproc.values() if c["status"] == "ok"]
    assert f"their warmups took {min(fresh_warm):.1f}-{max(fresh_warm):.1f} s, the first process's " \
           f"{min(warm):.1f}-{max(warm):.1f} s" in record
    llama = "d3006-llama-hf-static-b13-p125-o52"
    order = [k for k, c in inproc.items() if c["status"] == "ok"]
    assert order.index(llama) == 4  # four static cases ran before it
    assert (f"{inproc[llama]['tpot_s'] * 1e3:.2f} ms in a process that had timed four other static cases before it "
            f"and {doc['fresh']['llama-hf-static-b13-p125-o52']['cases'][llama]['tpot_s'] * 1e3:.2f} ms in a fresh "
            f"one (the Llama at 13 x 125 + 52: {ratios[llama]:.2f}x") in page
    others = sorted(v for k, v in ratios.items() if k != llama)
    assert "two more shapes {:.2f}x and {:.2f}x".format(*others) in page
    cfg = json.loads((root / "data" / "h200_serving_test_seed3006.json").read_text())["cases"][llama]["model"]["hf_config"]
    model = models.from_hf_config(cfg)
    fresh = doc["fresh"]["llama-hf-static-b13-p125-o52"]["cases"][llama]
    at = [planning.inference(model, sk.load_gpu("h200"), batch=13, prompt=125, output=52, engine="hf-static",
                             host_probe_us=c["case_probe_us"]).tpot * 1e3 for c in (inproc[llama], fresh)]
    assert f"the model predicts {at[0]:.2f} and {at[1]:.2f} ms, the fresh process's TPOT within 1%" in page
    assert abs(at[1] / (fresh["tpot_s"] * 1e3) - 1) < 0.01
