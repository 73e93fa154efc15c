"""The native results format (JSON lines) -> ``EvalResults``.

Any program can write it (``eval/jobs/native_format.py`` does, for the
tiny_lm example). One JSON object per line; the first is the header::

    {"format": "gateway-native/1", "harness": "tiny_lm_native", "harness_version": "1",
     "seeds": {"seed": 0},
     "tasks": {"tiny_lm_spelling": {"version": "1", "n_original": 300, "n_shot": 0,
                                    "higher_is_better": {"acc": true, "logprob": true}}}}

then one line per sample::

    {"task": "tiny_lm_spelling", "id": "17", "scores": {"acc": 1, "logprob": -3.25},
     "doc_hash": "...", "prompt_hash": "...", "target_hash": "..."}

``id`` is unique within its task (an integer or 1-256 printable characters);
``scores`` holds finite numbers (true/false count as 1/0), the same metric
names on every line of a task; the three hashes are optional, but a task
gives each one on all of its lines or on none. A task's value for a metric
is the mean of its scores, with the standard error of the mean; its
effective count is the number of its lines, ``n_original`` the number it
has in full (a program that scores a subset says so by the difference).
Unknown fields are refused, on the header and on sample lines alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gateway.core.eval.results import (
    MAX_METRICS,
    MAX_SAMPLES_PER_TASK,
    MAX_TASKS,
    EvalResults,
    TaskResult,
    TaskSamples,
    finite,
    frozen_column,
    hash_text,
    json_lines,
    mean_and_stderr,
    refuse,
    sample_id,
)

FORMAT = "gateway-native/1"
HEADER_KEYS = {"format", "harness", "harness_version", "seeds", "tasks"}
TASK_KEYS = {"version", "n_original", "n_shot", "higher_is_better"}
LINE_KEYS = {"task", "id", "scores", "doc_hash", "prompt_hash", "target_hash"}
_HASHES = ("doc_hash", "prompt_hash", "target_hash")


class _Task:
    """What is gathered for one task while its lines are read."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ids: dict[str, None] = {}
        self.columns: dict[str, list[float]] | None = None
        self.hashes: dict[str, list[str]] = {h: [] for h in _HASHES}


def parse_native(lines: Iterable[str | bytes], *, source: str | None = None) -> EvalResults:
    """Read the native JSON-lines format (see the module docstring); SpecError with the line number."""
    header: dict[str, Any] | None = None
    declared: dict[str, dict[str, Any]] = {}
    gathered: dict[str, _Task] = {}
    for number, obj in json_lines(lines, source):
        where = f"line {number}"
        if header is None:
            header = _header(obj, where, source)
            declared = header["tasks"]
            gathered = {name: _Task(name) for name in declared}
            continue
        _sample(obj, where, declared, gathered, source)
    if header is None:
        raise refuse(f'empty: the first line is the header ({{"format": "{FORMAT}", ...}})', "", None, source)
    tasks = {name: _result(gathered[name], spec, source) for name, spec in declared.items()}
    seeds = {str(k): v for k, v in header.get("seeds", {}).items()}
    return EvalResults(
        harness="native",
        harness_version=header.get("harness_version"),
        seeds=seeds,
        tasks=tasks,
        config={"harness": header.get("harness")},
    )


def _header(obj: dict[str, Any], where: str, source: str | None) -> dict[str, Any]:
    if obj.get("format") != FORMAT:
        raise refuse(
            f'not the native results format: the first line must be a header with "format": "{FORMAT}"',
            where,
            obj.get("format"),
            source,
        )
    extra = sorted(set(obj) - HEADER_KEYS)
    if extra:
        raise refuse(
            f"unknown header field {extra[0]!r}; valid: {', '.join(sorted(HEADER_KEYS))}", where, None, source
        )
    for key in ("harness", "harness_version"):
        if obj.get(key) is not None and (not isinstance(obj[key], str) or not 0 < len(obj[key]) <= 128):
            raise refuse(f"{key} is a string of 1-128 characters", where, obj[key], source)
    seeds = obj.get("seeds", {})
    if not isinstance(seeds, dict) or any(
        v is not None and (isinstance(v, bool) or not isinstance(v, int)) for v in seeds.values()
    ):
        raise refuse("seeds is an object of integers (or null)", where, seeds, source)
    tasks = obj.get("tasks")
    if not isinstance(tasks, dict) or not tasks:
        raise refuse(
            "the header's tasks is a non-empty object: task name -> {version, n_original}",
            where,
            None,
            source,
        )
    if len(tasks) > MAX_TASKS:
        raise refuse(f"{len(tasks)} tasks; at most {MAX_TASKS}", where, None, source)
    for name, spec in tasks.items():
        at = f"{where} tasks.{name}"
        if not isinstance(spec, dict):
            raise refuse(
                "a task is an object {version, n_original, n_shot, higher_is_better}", at, None, source
            )
        extra = sorted(set(spec) - TASK_KEYS)
        if extra:
            raise refuse(
                f"unknown field {extra[0]!r}; valid: {', '.join(sorted(TASK_KEYS))}", at, None, source
            )
        n = spec.get("n_original")
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_SAMPLES_PER_TASK:
            raise refuse(f"n_original is an integer from 0 to {MAX_SAMPLES_PER_TASK}", at, n, source)
        hib = spec.get("higher_is_better", {})
        if not isinstance(hib, dict) or not all(isinstance(v, bool) for v in hib.values()):
            raise refuse("higher_is_better maps metric names to true or false", at, hib, source)
    return obj


def _sample(
    obj: dict[str, Any],
    where: str,
    declared: dict[str, dict[str, Any]],
    gathered: dict[str, _Task],
    source: str | None,
) -> None:
    extra = sorted(set(obj) - LINE_KEYS)
    if extra:
        raise refuse(
            f"unknown field {extra[0]!r}; valid: {', '.join(sorted(LINE_KEYS))}", where, None, source
        )
    name = obj.get("task")
    if name not in declared:
        known = ", ".join(sorted(declared))
        raise refuse(
            f"a sample of task {name!r}, which the header does not list ({known})", where, None, source
        )
    task = gathered[name]
    ident = sample_id(obj.get("id"), f"{where} id", source)
    if ident in task.ids:
        raise refuse(f"duplicate sample id {ident!r} in task {name!r}", where, None, source)
    if len(task.ids) >= MAX_SAMPLES_PER_TASK:
        raise refuse(f"task {name!r} has more than {MAX_SAMPLES_PER_TASK} samples", where, None, source)
    scores = obj.get("scores")
    if not isinstance(scores, dict) or not scores or len(scores) > MAX_METRICS:
        raise refuse(f"scores is an object of 1-{MAX_METRICS} metric -> number", where, None, source)
    if task.columns is None:
        task.columns = {str(m): [] for m in scores}
    elif set(scores) != set(task.columns):
        raise refuse(
            f"scores has metrics {sorted(scores)}, other samples of {name!r} have {sorted(task.columns)}",
            where,
            None,
            source,
        )
    for metric, value in scores.items():
        task.columns[metric].append(finite(value, f"{where} scores.{metric}", source))
    for h in _HASHES:
        if (h in obj) != bool(task.hashes[h]) and task.ids:
            raise refuse(f"{h} is on some samples of {name!r} but not on others", where, None, source)
        if h in obj:
            task.hashes[h].append(hash_text(obj[h], f"{where} {h}", source))
    task.ids[ident] = None


def _result(task: _Task, spec: dict[str, Any], source: str | None) -> TaskResult:
    n = len(task.ids)
    if n > spec["n_original"]:
        raise refuse(
            f"task {task.name!r} has {n} samples but n_original is {spec['n_original']}",
            f"tasks.{task.name}",
            None,
            source,
        )
    columns = {m: frozen_column(c) for m, c in (task.columns or {}).items()}
    version = spec.get("version")
    shots = spec.get("n_shot")
    return TaskResult(
        name=task.name,
        version=None if version is None else str(version),
        n_shot=shots if isinstance(shots, int) and not isinstance(shots, bool) else None,
        task_hash=None,
        n_original=spec["n_original"],
        n_effective=n,
        metrics={m: mean_and_stderr(c) for m, c in columns.items()},
        higher_is_better=dict(spec.get("higher_is_better", {})),
        samples=TaskSamples(
            ids=tuple(task.ids),
            scores=columns,
            doc_hashes=tuple(task.hashes["doc_hash"]) or None,
            prompt_hashes=tuple(task.hashes["prompt_hash"]) or None,
            target_hashes=tuple(task.hashes["target_hash"]) or None,
        ),
    )
