"""The tiny_lm example as an lm-evaluation-harness model: ``--model tiny_lm --model_args path=model.json``.

Importing this module registers the class with lm-eval's model registry
(``lm_eval.api.registry.register_model``), so lm-eval's Python API
(``simple_evaluate(model="tiny_lm", ...)``, what ``run_eval.py`` calls) finds
it. lm-eval's own command line does not import outside modules, so running
this file stands in for it with the model registered::

    python3 eval/jobs/lm_eval_tiny_lm.py --model tiny_lm --model_args path=out/model.json \
        --tasks tiny_lm_spelling --include_path eval/tasks/tiny_lm --log_samples --output_path res

Characters are the tokens. ``loglikelihood`` is the sum of the model's
log-probabilities of the continuation's characters after the context (what
multiple-choice tasks rank choices by); ``loglikelihood_rolling`` scores a
whole text from the start of a line; ``generate_until`` decodes greedily.
Needs lm-eval's core only (no torch): the model is pure Python.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_lm_scorer import TinyLM  # noqa: E402

MAX_GEN_CHARS = 256


@register_model("tiny_lm")
class TinyLMHarness(LM):
    """lm-eval's LM interface over a tiny_lm checkpoint (``path``: its model.json)."""

    def __init__(self, path: str, batch_size=None, max_batch_size=None, device=None, **_: object) -> None:
        # lm-eval passes batch_size, max_batch_size and device to every model; a pure-Python
        # character model on one CPU has no use for them.
        super().__init__()
        self.model = TinyLM.load(path)
        self.path = path

    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        return [
            self.model.logprob(context, continuation) for context, continuation in (r.args for r in requests)
        ]

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        return [self.model.logprob("", text)[0] for (text,) in (r.args for r in requests)]

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        out = []
        for context, gen_kwargs in (r.args for r in requests):
            gen_kwargs = dict(gen_kwargs or {})
            until = gen_kwargs.get("until") or ["\n"]
            until = [until] if isinstance(until, str) else list(until)
            limit = int(gen_kwargs.get("max_gen_toks", MAX_GEN_CHARS))
            out.append(self.model.greedy(context, until, limit))
        return out


if __name__ == "__main__":
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()
