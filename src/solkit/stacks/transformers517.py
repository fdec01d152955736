"""Hugging Face transformers 5.17 ``generate`` on PyTorch 2.11 (an H200 host): host work per request, token and layer.

Fitted, not read off source: ``benchmarks/serving/evaluate.py --fit`` over the FIT data (the draws
``data/h200_serving_fit_seed3001.json`` and ``..._seed3003.json``, ``benchmarks/serving/generate.py``, and the timings
of ``data/h200_serving_decode_profile.json``, ``profile_decode.py``: each family at its full depth and cut to 2
layers, which pins the per-step figure apart from the per-layer one). generate's per-request and per-token figures
add to TTFT and TPOT as they are (the GPU waits on them: generate reads the GPU every token); its Python per layer
replaces the spec's ``host_layer`` inside each eager forward's timeline, where the kernels may hide it, and its
preambles replace the spec's ``host_program`` (the per-launch host time stays predict's; ``planning._engine_host``).
For each tried per-layer figure the request and token figures are the median residuals (least absolute deviations);
the per-layer figure is the one of least summed deviation; medians give the static ones. The frozen test draws
(seeds 3002 and 3004, spent; 3005 frozen) are never fitted on. Fitted without a launch probe (with each case's probe
the held-out static cases were worse: ``data/h200_serving.md``); ``FIT_PROBE_US`` is the seed-3001 host's probe, and a
caller's probe (``host_probe_us``) scales the figures by it. NB: without a caller's probe, generate's figures (a host
of probe 8.24 us) meet the spec's launch costs (a host of probe 5.67 us, ``host_probe_us``) in one timeline, each in
its own host's units, as they were fitted.

``GENERATE_LAYER_US`` is weakly identified: the summed deviation at 357.3 us is 0.08558, at 350 and 365 us 0.08578,
while the request and token figures fitted beside each move far more (the per-layer Python overlaps the kernels in
most cases); read it as 350-365 us. NB: one stack on one host; another transformers would be another module.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["FIT_PROBE_US", "GENERATE_LAYER_US", "GENERATE_REQUEST_US", "GENERATE_TOKEN_US", "STATIC_CACHE_LAYER_US",
           "VERSIONS"]

#: the stack the figures were measured on
VERSIONS: Mapping[str, str] = {"transformers": "5.17.0", "torch": "2.11.0+cu130"}

#: the launch probe (us per small launch) of the host the figures are in the units of
FIT_PROBE_US = 8.24

#: generate's host work once per request, its prefill's preamble included (the generation config, logits processors
#: and stopping criteria built, masks, positions and the cache set up, the first token picked and returned), per engine
GENERATE_REQUEST_US: Mapping[str, float] = {"hf-eager": 3230.4, "hf-static": 3230.4}

#: generate's host work per output token beside the decode step's launches: hf-eager, the step's preamble (mask,
#: positions, cache) and generate's loop (logits processors, the argmax, the stopping check that reads the GPU: the
#: profile's 2 device-to-host copies and 2 stream synchronisations per step); hf-static, the compiled step called, its
#: inputs copied into the CUDA graph's buffers and the graph replayed. The GPU waits meanwhile
GENERATE_TOKEN_US: Mapping[str, float] = {"hf-eager": 863.0, "hf-static": 903.3}

#: the Python per layer of each eager forward inside generate beyond its launches (module calls and their hooks, the
#: cache update, attention-interface lookups: the profile counted about 13 module calls and 110 Python calls per layer
#: and step), in place of the spec's ``host_layer``
GENERATE_LAYER_US = 357.3

#: the static cache's host work per layer at the request's first forward (each layer's key and value buffers
#: allocated and marked static for the compiler)
STATIC_CACHE_LAYER_US = 444.6
