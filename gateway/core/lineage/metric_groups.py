"""Which metric series belong on one chart, as experiment trackers group them. Pure.

A run's series (``name -> [[step, value], ...]``) are sorted into charts:
losses together (``loss``, ``train_loss``, ``val/loss``, ``nll``, perplexity
apart from them as its own scale), the learning rate on a chart of its own,
accuracy-like scores together, and any other metric with the series of the
same name under another split (``train_acc`` and ``val_acc``: ``acc``).
Step counters (``step``, ``epoch``, ``global_step``, ``iteration``, wall
time) are the x axis, not a curve, and are left out.

``compare_series`` gathers one metric's series of several runs (``run label
-> series``) for one chart with a legend by run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Points = Sequence[Sequence[float]]

# Names that count steps or time: the x axis of the others, never plotted as a curve.
COUNTERS = frozenset(
    {
        "step", "steps", "global_step", "epoch", "epochs", "iteration", "iter", "iterations", "batch",
        "batch_idx", "samples", "samples_seen", "tokens_seen", "examples_seen", "time", "timestamp",
        "wall_time", "walltime", "elapsed", "elapsed_s", "runtime", "_step", "_runtime", "_timestamp",
    }
)  # fmt: skip
# Words that name a split or a phase, not the metric: train_loss and val_loss are both "loss".
SPLITS = frozenset({"train", "training", "val", "valid", "validation", "eval", "test", "dev", "trn", "tst"})
LR = frozenset({"lr", "learning_rate", "learningrate", "lr_scheduler", "lr0"})
LOSS = re.compile(r"(^|_)(loss|nll|cross_entropy|xent|ce)(_|$)")
SCORE = re.compile(r"(^|_)(acc|accuracy|f1|precision|recall|auc|exact_match|em|bleu|rouge\w*)(_|$)")


@dataclass(frozen=True)
class Chart:
    """One chart: its title, the y axis's name, and its series (legend label -> points)."""

    title: str
    y_label: str
    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


def is_counter(name: str) -> bool:
    """Whether ``name`` counts steps or time (``epoch``, ``train/global_step``, ``time_s`` ...)."""
    last = re.split(r"[/.:]", name.lower())[-1]
    return last in COUNTERS or last.removesuffix("_s") in COUNTERS


def group_of(name: str) -> str:
    """The chart ``name`` belongs on: ``loss``, ``learning rate``, or the metric less its split words."""
    words = [w for w in re.split(r"[/.:_\-]+", name.lower()) if w]
    if not words:
        return name
    joined = "_".join(words)
    if joined in LR or (words[-1] in LR) or "learning_rate" in joined:
        return "learning rate"
    kept = [w for w in words if w not in SPLITS] or words
    key = "_".join(kept)
    if "perplexity" in key or key in ("ppl", "perplexity"):
        return "perplexity"
    if LOSS.search(key):
        return "loss"
    if SCORE.search(key):
        match = SCORE.search(key)
        return match.group(2) if match else key
    return key


def _points(points: Points) -> list[tuple[float, float]]:
    """Finite (step, value) pairs in step order."""
    out = []
    for pair in points:
        if len(pair) < 2 or pair[1] is None:
            continue
        x, y = float(pair[0]), float(pair[1])
        if x == x and y == y and abs(y) != float("inf"):
            out.append((x, y))
    return sorted(out, key=lambda p: p[0])


def charts(series: Mapping[str, Points]) -> list[Chart]:
    """The run's series grouped into charts (losses first, the learning rate after them, then by name);
    counters and series with no finite point left out."""
    grouped: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for name in sorted(series):
        if is_counter(name):
            continue
        points = _points(series[name])
        if points:
            grouped.setdefault(group_of(name), {})[name] = points
    order = sorted(grouped, key=lambda g: (g != "loss", g != "learning rate", g))
    return [Chart(title=g, y_label=g, series=grouped[g]) for g in order]


def metric_names(series_by_run: Mapping[str, Mapping[str, Points]]) -> list[str]:
    """Every metric any of the runs has (counters left out), sorted: what a compare page offers."""
    return sorted({n for s in series_by_run.values() for n in s if not is_counter(n)})


def compare_series(series_by_run: Mapping[str, Mapping[str, Points]], metric: str) -> Chart:
    """``metric`` of each run (label -> its series) on one chart, a run without it left out."""
    lines = {
        label: points
        for label, series in series_by_run.items()
        if metric in series and (points := _points(series[metric]))
    }
    return Chart(title=metric, y_label=metric, series=lines)
