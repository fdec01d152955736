"""Hugging Face transformers 5.17 ``generate`` on PyTorch 2.11 (an H200 host): the host work per request and per token.

Fitted, not read off source: each figure is the median over the FIT draw's cases (``data/h200_serving_fit_seed3001.json``,
``benchmarks/serving/generate.py --draw 3001``) of the measured time minus solkit's predicted kernels (and eager
launches), as ``benchmarks/serving/evaluate.py --fit`` prints them; the frozen test draw (seed 3002) is never fitted on.
The host that measured them had a launch probe of ``FIT_PROBE_US`` (2,000 small ``torch.add``); a caller's probe
(``host_probe_us``) scales them. NB: one stack on one host; another transformers would be another module.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["FIT_PROBE_US", "GENERATE_REQUEST_US", "GENERATE_TOKEN_US", "STATIC_CACHE_LAYER_US", "VERSIONS"]

#: the stack the figures were measured on
VERSIONS: Mapping[str, str] = {"transformers": "5.17.0", "torch": "2.11.0+cu130"}

#: the launch probe (us per small launch) of the host the figures were fitted on
FIT_PROBE_US = 8.24

#: generate's host work once per request beyond the prefill's own launches (its generation config, logits processors
#: and stopping criteria built, the first token picked and returned), per engine
GENERATE_REQUEST_US: Mapping[str, float] = {"hf-eager": 5626.5, "hf-static": 5626.5}

#: generate's host work per output token beyond the decode step's launches (the logits processors, the argmax, the
#: stopping check that reads the GPU, the next inputs prepared; the static engine's compiled step called, its inputs
#: copied into the CUDA graph's buffers and the graph replayed), during which the GPU waits
GENERATE_TOKEN_US: Mapping[str, float] = {"hf-eager": 2242.7, "hf-static": 857.6}

#: the static cache's host work per layer at the request's first forward (each layer's key and value buffers
#: allocated and marked static for the compiler)
STATIC_CACHE_LAYER_US = 351.8
