"""Log-likelihoods from a tiny_lm checkpoint (``examples/tiny_lm``'s ``model.json``), standard library only.

The checkpoint format ``tiny_lm/1`` is the one ``examples/tiny_lm/train.py``
writes (``checkpoint_bytes``): ``params.order``, ``vocab`` (index 0 is the
unknown-character entry), ``bos`` (the padding before a line) and ``weights``,
one weight vector per context string (``""`` is the bias). The model predicts
a character from the sum of the vectors of the contexts it has seen among the
last ``order - 1`` characters, through a softmax over the vocabulary; this
module computes exactly that, so the numbers equal ``model.evaluate``'s on the
same weights (``tests/eval/test_tiny_lm_scorer.py`` checks it).

It runs inside an evaluation job with nothing but Python: no numpy, no torch.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

CHECKPOINT_FORMAT = "tiny_lm/1"
MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024


class CheckpointError(ValueError):
    """The file is not a tiny_lm checkpoint this scorer can read."""


class TinyLM:
    """A loaded tiny_lm checkpoint: ``logprob(context, continuation)`` in nats."""

    def __init__(self, checkpoint: dict, *, source: str = "checkpoint") -> None:
        if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
            found = checkpoint.get("format") if isinstance(checkpoint, dict) else type(checkpoint).__name__
            raise CheckpointError(f"{source} is not a {CHECKPOINT_FORMAT} checkpoint (format: {found!r})")
        try:
            self.order = int(checkpoint["params"]["order"])
            self.vocab = list(checkpoint["vocab"])
            self.bos = str(checkpoint["bos"])
            weights = checkpoint["weights"]
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{source} lacks a field of {CHECKPOINT_FORMAT}: {exc!r}") from None
        if not 1 <= self.order <= 6 or not self.vocab or "" not in weights:
            raise CheckpointError(f"{source}: order must be 1-6, with a vocabulary and a bias row")
        width = len(self.vocab)
        if any(len(row) != width for row in weights.values()):
            raise CheckpointError(f"{source}: every weight row must have {width} entries (one per character)")
        self.weights: dict[str, list[float]] = weights
        self.char_id = {c: i for i, c in enumerate(self.vocab)}
        self.params = dict(checkpoint["params"])
        self.data_digest = checkpoint.get("data_digest")

    @classmethod
    def load(cls, path: str | Path) -> TinyLM:
        path = Path(path)
        size = path.stat().st_size
        if size > MAX_CHECKPOINT_BYTES:
            raise CheckpointError(
                f"{path} is {size} bytes; a tiny_lm checkpoint is at most {MAX_CHECKPOINT_BYTES}"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CheckpointError(f"{path} is not a JSON checkpoint: {exc}") from None
        return cls(data, source=str(path))

    def _logits(self, history: str) -> list[float]:
        """The logits of the next character after ``history`` (already padded with BOS)."""
        rows = [self.weights[""]]
        for k in range(1, self.order):
            row = self.weights.get(history[len(history) - k :])
            if row is not None:
                rows.append(row)
        if len(rows) == 1:
            return rows[0]
        return [sum(col) for col in zip(*rows, strict=True)]

    def logprob(self, context: str, continuation: str) -> tuple[float, bool]:
        """log p(continuation | context) in nats, and whether each character is the model's first choice.

        The context starts a line (padded with BOS as in training); characters
        outside the vocabulary are scored as the unknown entry, as training does.
        """
        text = self.bos * (self.order - 1) + context
        total, greedy = 0.0, True
        for char in continuation:
            z = self._logits(text[-(self.order - 1) :] if self.order > 1 else "")
            m = max(z)
            target = self.char_id.get(char, 0)
            total += (z[target] - m) - math.log(sum(math.exp(v - m) for v in z))
            greedy = greedy and z[target] == m
            text += char
        return total, greedy

    def greedy(self, context: str, until: list[str], limit: int) -> str:
        """The most likely continuation, a character at a time, up to a stop string or ``limit`` characters.

        The stop string is not part of the result; nor is the end of a line
        (the model ends every line by predicting a newline) or the unknown entry.
        """
        text = self.bos * (self.order - 1) + context
        out = ""
        while len(out) < limit:
            z = self._logits(text[-(self.order - 1) :] if self.order > 1 else "")
            best = max(range(1, len(z)), key=z.__getitem__)  # index 0 is the unknown character
            char = self.vocab[best]
            if char == "\n":
                break
            out += char
            text += char
            hit = next((s for s in until if s and out.endswith(s)), None)
            if hit is not None:
                return out[: -len(hit)]
        return out
