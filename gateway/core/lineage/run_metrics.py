"""Reading the metrics a training job writes. Pure: text in, values out.

Two files, both optional, in the job's output directory (examples/tiny_lm/train.py writes
both):

- metrics JSON (``metrics.json``), the summary: a JSON object. Its metrics are the finite
  numbers (not booleans) at the top level, plus those of a nested object under ``"metrics"``
  or ``"final"`` (one level, keys kept as they are). On a clash the top level wins, then
  ``"metrics"``, then ``"final"``. Anything else (strings, lists, other objects) is ignored::

      {"final": {"step": 120, "epoch": 3, "val_loss": 1.93, ...}, "params": {...},
       "data_digest": "sha256:..."}                      -> {"step": 120.0, "epoch": 3.0, ...}

- metrics JSON Lines (``metrics.jsonl``), the series: one JSON object per line. Its
  ``"step"`` (else ``"epoch"``, else the 0-based line number) is the step of every other
  finite number on the line.

A metric name is kept only when it matches ``[A-Za-z0-9_.:/-]{1,128}``; others are dropped
without complaint.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

NAME = re.compile(r"[A-Za-z0-9_.:/-]{1,128}")
NESTED_KEYS = ("metrics", "final")  # in order of precedence, after the top level
MAX_NAMES = 200
MAX_POINTS = 100_000


@dataclass(frozen=True)
class MetricSeries:
    """Metric name -> [(step, value)] in file order; ``skipped_lines`` counts lines not taken in full.

    A line is skipped when it is not JSON, not an object (a truncated last line, garbage), or
    when a cap dropped any of its points: at most ``MAX_NAMES`` names and ``MAX_POINTS``
    points in all. Blank lines are not counted.
    """

    points: dict[str, list[tuple[int | None, float]]]
    skipped_lines: int


def parse_metrics_json(text: str) -> dict[str, float]:
    """The summary metrics of a metrics JSON text (see the module docstring).

    Raises ValueError when ``text`` is not JSON or not a JSON object.
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"metrics JSON is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"metrics JSON holds a JSON {type(data).__name__}, not an object "
            '(write e.g. {"final": {"val_loss": 1.9}})'
        )
    summary: dict[str, float] = {}
    for key in reversed(NESTED_KEYS):
        nested = data.get(key)
        if isinstance(nested, dict):
            summary.update(_numbers(nested))
    summary.update(_numbers(data))
    return summary


def parse_metrics_jsonl(text: str) -> MetricSeries:
    """The series of a metrics JSON Lines text (see the module docstring and MetricSeries). Never raises."""
    points: dict[str, list[tuple[int | None, float]]] = {}
    total = skipped = 0
    for line_no, line in enumerate(text.split("\n")):  # not splitlines: U+2028 may sit in a string
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            skipped += 1
            continue
        if not isinstance(record, dict):
            skipped += 1
            continue
        step_key, step = _step(record, line_no)
        dropped = False
        for name, value in _numbers(record).items():
            if name == step_key:
                continue
            if total >= MAX_POINTS or (name not in points and len(points) >= MAX_NAMES):
                dropped = True
                continue
            points.setdefault(name, []).append((step, value))
            total += 1
        skipped += dropped
    return MetricSeries(points=points, skipped_lines=skipped)


def last_values(series: MetricSeries) -> dict[str, float]:
    """Each metric's last value in file order."""
    return {name: pts[-1][1] for name, pts in series.points.items() if pts}


def summary_from(json_text: str | None, jsonl_text: str | None) -> dict[str, float]:
    """The run's summary metrics: from the metrics JSON, else the series' last values.

    The JSON is used when it is given, is a JSON object and holds at least one metric;
    otherwise the last values of the JSON Lines series (an empty dict when that is None
    too). Never raises: a job killed mid-write still has a summary.
    """
    if json_text is not None:
        try:
            summary = parse_metrics_json(json_text)
        except ValueError:
            summary = {}
        if summary:
            return summary
    if jsonl_text is None:
        return {}
    return last_values(parse_metrics_jsonl(jsonl_text))


def _numbers(data: dict[Any, Any]) -> dict[str, float]:
    """The finite, non-boolean numbers of ``data`` under well-formed names, as floats."""
    found = {}
    for key, value in data.items():
        number = _finite(value)
        if number is not None and isinstance(key, str) and NAME.fullmatch(key):
            found[key] = number
    return found


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too big for a float
        return None
    return number if math.isfinite(number) else None


def _step(record: dict[str, Any], line_no: int) -> tuple[str | None, int | None]:
    """(the key the step came from, the step): "step", else "epoch", else the line number."""
    for key in ("step", "epoch"):
        value = _finite(record.get(key))
        if value is not None and value.is_integer():
            return key, int(value)
    return None, line_no
