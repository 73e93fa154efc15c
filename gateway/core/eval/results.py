"""One results model for every harness: per-task aggregates and per-sample scores.

``EvalResults`` is what an evaluation produced, whichever harness wrote it
(``eval_lm_eval.parse_lm_eval`` for lm-evaluation-harness 0.4.x output,
``eval_native.parse_native`` for the native JSON-lines format): per task its
version, shots, hash, sample counts (original and effective: a ``--limit``
makes effective smaller), each metric's value and standard error, and the
per-sample scores keyed by (task, sample id), as float64 arrays aligned with
the ids, plus the per-sample document, prompt and target hashes when the
harness gives them.

Reading is bounded (``MAX_*``) and strict: input that is not the format, a
duplicate sample id, a non-finite number, a sample of a task that is not in
the results or a truncated line is refused with a ``SpecError``
(``what="eval results"``) whose issues say what and where (``line 17``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gateway.errors import SpecError, SpecIssue

MAX_TASKS = 1000
MAX_METRICS = 64
MAX_SAMPLES_PER_TASK = 2_000_000
MAX_LINE_BYTES = 16 * 1024 * 1024  # one sample line (lm-eval keeps the whole document and prompt in it)
MAX_RESULTS_BYTES = 64 * 1024 * 1024  # a results JSON (its configs can be long)
MAX_ID_CHARS = 256
WHAT = "eval results"


@dataclass(frozen=True)
class MetricValue:
    """A task's value for one metric and its standard error (None when the harness gives none)."""

    value: float
    stderr: float | None = None


@dataclass(frozen=True)
class TaskSamples:
    """Per-sample scores of one task: ``scores[metric][i]`` belongs to ``ids[i]``.

    A hash tuple is None when the harness gave none for this task; its entries
    are aligned with ``ids`` like the scores.
    """

    ids: tuple[str, ...]
    scores: Mapping[str, np.ndarray]
    doc_hashes: tuple[str, ...] | None = None
    prompt_hashes: tuple[str, ...] | None = None
    target_hashes: tuple[str, ...] | None = None
    unscored: tuple[str, ...] = ()  # metrics whose per-sample values are not numbers (lm-eval's brier_score)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class TaskResult:
    name: str
    version: str | None
    n_shot: int | None
    task_hash: str | None
    n_original: int
    n_effective: int
    metrics: Mapping[str, MetricValue]
    higher_is_better: Mapping[str, bool | None] = field(default_factory=dict)
    samples: TaskSamples | None = None


@dataclass(frozen=True)
class EvalResults:
    """What one evaluation produced (see the module docstring)."""

    harness: str  # "lm-eval" or "native"
    harness_version: str | None
    seeds: Mapping[str, int | None]
    tasks: Mapping[str, TaskResult]
    config: Mapping[str, Any] = field(default_factory=dict)  # the harness's own run settings, as given

    def summary(self) -> dict[str, Any]:
        """Plain JSON values: harness, seeds, and per task its counts, version, hash and metrics."""
        return {
            "harness": self.harness,
            "harness_version": self.harness_version,
            "seeds": dict(self.seeds),
            "tasks": {
                name: {
                    "version": t.version,
                    "n_shot": t.n_shot,
                    "task_hash": t.task_hash,
                    "n_original": t.n_original,
                    "n_effective": t.n_effective,
                    "samples": len(t.samples) if t.samples is not None else 0,
                    "metrics": {m: {"value": v.value, "stderr": v.stderr} for m, v in t.metrics.items()},
                }
                for name, t in self.tasks.items()
            },
        }


# ---------------------------------------------------------------- shared reading helpers


def refuse(message: str, path: str = "", value: object = None, source: str | None = None) -> SpecError:
    """The one error this family of parsers raises."""
    return SpecError([SpecIssue(path, message, value)], source, what=WHAT)


def loads(text: str | bytes) -> Any:
    """``json.loads``. NaN and Infinity (which Python's writer emits and lm-eval can write) are read,
    and refused by ``finite`` where a number is used, with the field that holds them."""
    return json.loads(text)


def finite(value: Any, where: str, source: str | None) -> float:
    """A JSON number (or true/false as 1/0) as a finite float; refused otherwise."""
    if isinstance(value, bool):
        return float(value)
    if not isinstance(value, int | float):
        raise refuse(f"expected a number, got {type(value).__name__}", where, value, source)
    number = float(value)
    if not math.isfinite(number):
        raise refuse("is not a finite number", where, value, source)
    return number


def json_lines(lines: Iterable[str | bytes], source: str | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; refuses long, truncated or non-object lines.

    A caller reading a file keeps memory bounded by handing lines read with a
    limit (``iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b"")``): a longer
    line then arrives cut at the limit and is refused here as too long.
    """
    pending: tuple[int, str | bytes] | None = None
    for number, raw in enumerate(lines, start=1):
        if pending is not None:  # a line before this one had no newline: it was cut short
            raise refuse(
                "line ends without a newline in the middle of the file", f"line {pending[0]}", None, source
            )
        if len(raw) > MAX_LINE_BYTES:
            raise refuse(
                f"line is {len(raw)} bytes; at most {MAX_LINE_BYTES}", f"line {number}", None, source
            )
        ended = raw.endswith(b"\n") if isinstance(raw, bytes) else raw.endswith("\n")
        if not raw.strip():
            continue
        try:
            obj = loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            why = (
                "is truncated (no newline at the end, and not complete JSON)"
                if not ended
                else f"is not JSON: {exc}"
            )
            raise refuse(why, f"line {number}", None, source) from None
        if not isinstance(obj, dict):
            raise refuse(f"is a JSON {type(obj).__name__}, not an object", f"line {number}", None, source)
        if not ended:
            pending = (number, raw)
        yield number, obj


def sample_id(value: Any, where: str, source: str | None) -> str:
    """A sample id: a non-negative integer or a string of 1-256 printable characters."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise refuse("a sample id is an integer or a string", where, value, source)
    text = str(value)
    if isinstance(value, int) and value < 0:
        raise refuse("a sample id number is 0 or more", where, value, source)
    if not text or len(text) > MAX_ID_CHARS or not text.isprintable():
        raise refuse(f"a sample id is 1-{MAX_ID_CHARS} printable characters", where, value, source)
    return text


def hash_text(value: Any, where: str, source: str | None) -> str:
    """A per-sample hash as the harness wrote it: 1-128 letters, digits, ':', '_' or '-'."""
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= 128
        or not all(c.isalnum() or c in ":_-" for c in value)
    ):
        raise refuse("a hash is 1-128 letters, digits, ':', '_' or '-'", where, value, source)
    return value


def frozen_column(values: list[float]) -> np.ndarray:
    """Scores as a read-only float64 array: results are evidence, not to be edited in place."""
    array = np.asarray(values, dtype=np.float64)
    array.setflags(write=False)
    return array


# How far a harness's aggregate may sit from the mean of its own per-sample scores: the two sum the
# same numbers in another order (lm-eval: Python's sum; here: NumPy's pairwise sum), nothing more.
AGGREGATE_REL_TOL = 1e-9
AGGREGATE_ABS_TOL = 1e-12


def aggregate_problems(task: TaskResult, metrics: Iterable[str]) -> list[tuple[str, str]]:
    """(metric, why) for each of ``metrics`` (averaged by ``mean``) whose aggregate is not its samples'.

    A task's value of a mean-aggregated metric is the mean of its per-sample
    scores, and its standard error the sample standard deviation / sqrt(n)
    (lm-eval's ``mean_stderr``; the native format's): a results file edited
    apart from its samples file (an ``acc`` of 0.9 over samples whose mean is
    0.167) would have the thresholds read one number and the paired tests
    another. Metrics without per-sample scores, or without a value, are not
    checked; a standard error the harness did not give (None) is not either.
    """
    out: list[tuple[str, str]] = []
    if task.samples is None:
        return out
    for metric in metrics:
        given = task.metrics.get(metric)
        scores = task.samples.scores.get(metric)
        if given is None or scores is None or not len(scores):
            continue
        own = mean_and_stderr(np.asarray(scores, dtype=np.float64))
        if not math.isclose(given.value, own.value, rel_tol=AGGREGATE_REL_TOL, abs_tol=AGGREGATE_ABS_TOL):
            out.append(
                (
                    metric,
                    f"the aggregate {metric} is {given.value!r}, but the mean of its {len(scores)} "
                    f"per-sample scores is {own.value!r}: the results and the samples do not match",
                )
            )
        elif (
            given.stderr is not None
            and own.stderr is not None
            and not math.isclose(given.stderr, own.stderr, rel_tol=1e-6, abs_tol=AGGREGATE_ABS_TOL)
        ):
            out.append(
                (
                    metric,
                    f"the standard error of {metric} is {given.stderr!r}, but that of its {len(scores)} "
                    f"per-sample scores is {own.stderr!r}: the results and the samples do not match",
                )
            )
    return out


def mean_and_stderr(values: np.ndarray) -> MetricValue:
    """The mean and its standard error (sample standard deviation / sqrt(n); None below 2 samples)."""
    n = len(values)
    mean = float(values.mean()) if n else math.nan
    stderr = float(values.std(ddof=1) / math.sqrt(n)) if n > 1 else None
    return MetricValue(mean, stderr)
