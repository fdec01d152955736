"""Speed of capture, as figures (not a timed test): CPU seconds, best of a few rounds (issue 28's goals).

    python benchmarks/capture_speed.py               # needs torch (pip install torch==2.13.0) and transformers
    python benchmarks/capture_speed.py --rounds 5

- (a) a Qwen3-8B training step of 1 x 8192 tokens (AMP, fused AdamW), captured from transformers' modeling code on
  fake tensors and predicted on an H200: goal at most 20 s of CPU;
- (b) a Llama-3.1-405B forward of 1 x 2048 tokens, captured: goal at most 10 s of CPU.

Each round builds the model from its config.json (tests/data/hf_configs) on the meta device, captures and (a)
predicts; ``time.process_time`` (this process's CPU time), the best round kept, because the machine is shared. The
one-off imports of torch, transformers and solkit are printed apart (they are paid once per process).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable

CONFIGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "hf_configs"
#: (figure, goal in CPU seconds)
GOALS = {"qwen3_8b_step": 20.0, "llama_405b_forward": 10.0}


def _best(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """The least CPU time of ``rounds`` calls, and the last result."""
    best, out = float("inf"), None
    for _ in range(rounds):
        start = time.process_time()
        out = fn()
        best = min(best, time.process_time() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per figure (the best is kept)")
    args = parser.parse_args()

    start = time.process_time()
    import torch  # noqa: F401
    import transformers  # noqa: F401

    import solkit as sk
    from solkit.capture import hf_model

    print(f"imports (torch, transformers, solkit): {time.process_time() - start:.2f} s CPU, once per process")

    def qwen_step() -> Any:
        w = hf_model(CONFIGS / "qwen3-8b.json").training_step(batch=1, seq=8192)
        return w, sk.predict(w, "h200")

    def llama_forward() -> Any:
        return hf_model(CONFIGS / "llama3.1-405b.json").forward(batch=1, seq=2048)

    seconds, (step, predicted) = _best(qwen_step, args.rounds)
    print(f"(a) Qwen3-8B training step, 1 x 8192 tokens, captured and predicted: {seconds:.2f} s CPU "
          f"(goal {GOALS['qwen3_8b_step']:.0f} s: {'met' if seconds <= GOALS['qwen3_8b_step'] else 'MISSED'}); "
          f"{len(step):,} kernels, {step.recipe.coverage}, predicted {predicted.seconds * 1e3:.1f} ms on an H200")
    seconds, forward = _best(llama_forward, args.rounds)
    print(f"(b) Llama-3.1-405B forward, 1 x 2048 tokens, captured: {seconds:.2f} s CPU "
          f"(goal {GOALS['llama_405b_forward']:.0f} s: {'met' if seconds <= GOALS['llama_405b_forward'] else 'MISSED'}); "
          f"{len(forward):,} kernels, {forward.recipe.layers} layers held once, {forward.flops:.4g} model FLOPs")


if __name__ == "__main__":
    main()
