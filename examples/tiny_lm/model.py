"""The tiny character-level language model: features, softmax training by SGD, evaluation, sampling.

Standard library only; ``train.py`` drives it.
"""

from __future__ import annotations

import math
import random

BOS = "\x02"  # pads the context at the start of a line; never predicted
EOS = "\n"  # every line ends by predicting a newline
UNK = "\x00"  # stands for validation characters never seen in training


def split_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def build_model(train_lines: list[str], order: int) -> tuple[list[str], dict[str, int]]:
    """The vocabulary (characters predicted) and feature index (contexts seen in training)."""
    chars = sorted({c for line in train_lines for c in line} - {BOS, EOS, UNK})
    vocab = [UNK, EOS, *chars]
    features = {"": 0}  # the bias
    for line in train_lines:
        padded = BOS * (order - 1) + line
        for t in range(len(line) + 1):
            pos = t + order - 1
            for k in range(1, order):
                features.setdefault(padded[pos - k : pos], len(features))
    return vocab, features


def encode(
    lines: list[str], vocab: list[str], features: dict[str, int], order: int
) -> list[list[tuple[tuple[int, ...], int]]]:
    """Each line as (active feature ids, target char id) per predicted character."""
    char_id = {c: i for i, c in enumerate(vocab)}
    out = []
    for line in lines:
        padded = BOS * (order - 1) + line
        steps = []
        for t, target in enumerate(line + EOS):
            pos = t + order - 1
            feats = [0]
            for k in range(1, order):
                fid = features.get(padded[pos - k : pos])
                if fid is not None:
                    feats.append(fid)
            steps.append((tuple(feats), char_id.get(target, 0)))
        out.append(steps)
    return out


# ---------------------------------------------------------------- model


def logits(weights: list[list[float]], feats: tuple[int, ...]) -> list[float]:
    rows = [weights[f] for f in feats]
    if len(rows) == 1:
        return list(rows[0])
    return [sum(col) for col in zip(*rows, strict=True)]


def train_epoch(
    weights: list[list[float]], lines: list, order: list[int], lr: float, l2: float
) -> tuple[float, int]:
    """One pass of SGD over the lines in the given order; the mean loss and the step count."""
    exp = math.exp
    log_ = math.log
    decay = 1.0 - lr * l2
    total, steps = 0.0, 0
    for index in order:
        for feats, y in lines[index]:
            z = logits(weights, feats)
            m = max(z)
            e = [exp(v - m) for v in z]
            s = sum(e)
            total += log_(s) - (z[y] - m)
            scale = lr / s
            g = [v * scale for v in e]
            g[y] -= lr
            for f in feats:
                row = weights[f]
                if decay == 1.0:
                    weights[f] = [w - d for w, d in zip(row, g, strict=True)]
                else:
                    weights[f] = [w * decay - d for w, d in zip(row, g, strict=True)]
            steps += 1
    return total / max(steps, 1), steps


def evaluate(weights: list[list[float]], lines: list) -> tuple[float, float]:
    """Mean cross-entropy (nats per character) and next-character accuracy."""
    total, correct, count = 0.0, 0, 0
    for steps in lines:
        for feats, y in steps:
            z = logits(weights, feats)
            m = max(z)
            total += math.log(sum(math.exp(v - m) for v in z)) - (z[y] - m)
            correct += z[y] == m
            count += 1
    return total / count, correct / count


def sample(
    weights: list[list[float]],
    vocab: list[str],
    features: dict[str, int],
    order: int,
    rng: random.Random,
    limit: int = 120,
) -> str:
    """One line drawn from the model, to see what it has learned."""
    text = ""
    while len(text) < limit:
        padded = BOS * (order - 1) + text
        feats = [0]
        for k in range(1, order):
            fid = features.get(padded[len(padded) - k :])
            if fid is not None:
                feats.append(fid)
        z = logits(weights, tuple(feats))
        m = max(z)
        e = [math.exp(v - m) for v in z]
        e[0] = 0.0  # never draw UNK
        c = vocab[rng.choices(range(len(vocab)), weights=e)[0]]
        if c == EOS:
            break
        text += c
    return text


# ---------------------------------------------------------------- outputs
