"""lm-evaluation-harness 0.4.x output -> ``EvalResults``.

Two kinds of file, as ``lm_eval --output_path DIR --log_samples`` writes them:

- the results JSON (``results_<date>.json``): ``results`` (per task,
  ``"<metric>,<filter>"`` values and ``"<metric>_stderr,<filter>"`` errors),
  ``versions``, ``n-shot``, ``configs``, ``higher_is_better``, ``n-samples``
  (``original`` and ``effective``), ``task_hashes``, ``config`` (model,
  ``limit``, the four seeds) and ``lm_eval_version``;
- one samples JSONL per task (``samples_<task>_<date>.jsonl``): per document
  and filter, ``doc_id``, ``filter``, ``metrics`` (the names scored),
  ``doc_hash``, ``prompt_hash``, ``target_hash`` and each metric's value.

Metric names drop lm-eval's default filter: ``acc,none`` is ``acc``, while
``exact_match,strict-match`` keeps its filter. Groups (entries of
``results`` without a config) are not tasks and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from gateway.core.eval.results import (
    MAX_METRICS,
    MAX_RESULTS_BYTES,
    MAX_SAMPLES_PER_TASK,
    MAX_TASKS,
    EvalResults,
    MetricValue,
    TaskResult,
    TaskSamples,
    aggregate_problems,
    finite,
    frozen_column,
    hash_text,
    json_lines,
    loads,
    refuse,
    sample_id,
)

REQUIRED = ("results", "configs", "versions", "n-samples")
SEED_KEYS = ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")
_FIXED_KEYS = {"name", "alias", "sample_len", "sample_count"}
_HASHES = ("doc_hash", "prompt_hash", "target_hash")


def metric_key(metric: str, filter_name: str) -> str:
    """lm-eval's (metric, filter) as one name: the default filter ``none`` is left out."""
    return metric if filter_name == "none" else f"{metric},{filter_name}"


def parse_lm_eval(
    results_text: str | bytes,
    samples: Mapping[str, Iterable[str | bytes]] | None = None,
    *,
    source: str | None = None,
) -> EvalResults:
    """Read lm-eval's results JSON and, per task name, the lines of its samples JSONL.

    Raises SpecError (``what="eval results"``) for anything that is not this
    format or does not add up: a sample file for a task the results lack, a
    sample count different from ``n-samples.effective``, a duplicate
    (doc_id, filter), a non-finite number, a truncated line.
    """
    if len(results_text) > MAX_RESULTS_BYTES:
        raise refuse(
            f"the results file is {len(results_text)} bytes; at most {MAX_RESULTS_BYTES}", "", None, source
        )
    try:
        data = loads(results_text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise refuse(f"not lm-eval's results format: not JSON ({exc})", "", None, source) from None
    missing = [key for key in REQUIRED if not isinstance(data, dict) or not isinstance(data.get(key), dict)]
    if missing:
        raise refuse(
            f"not lm-eval's results format: no {', '.join(repr(k) for k in missing)} object "
            f"(lm-eval 0.4 writes {', '.join(REQUIRED)}, n-shot and config)",
            "",
            None,
            source,
        )
    configs = data["configs"]
    if len(configs) > MAX_TASKS:
        raise refuse(f"{len(configs)} tasks; at most {MAX_TASKS}", "configs", None, source)
    samples = dict(samples or {})
    unknown = sorted(set(samples) - set(configs))
    if unknown:
        raise refuse(
            f"samples given for task {unknown[0]!r}, which the results do not have "
            f"(their tasks: {', '.join(sorted(configs)) or 'none'})",
            f"samples.{unknown[0]}",
            None,
            source,
        )
    task_hashes = data.get("task_hashes") or {}
    tasks = {}
    for name in configs:
        task = _task(data, name, task_hashes, source)
        if name in samples:
            parsed = _samples(name, samples[name], task.n_effective, source)
            task = replace(task, samples=parsed)
            mismatch = aggregate_problems(task, _mean_metrics(configs[name], task))
            if mismatch:
                metric, why = mismatch[0]
                raise refuse(why, f"results.{name}.{metric}", None, source)
        tasks[name] = task
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    seeds = {key: _int_or_none(config.get(key), f"config.{key}", source) for key in SEED_KEYS}
    version = data.get("lm_eval_version")
    return EvalResults(
        harness="lm-eval",
        harness_version=str(version) if version is not None else None,
        seeds=seeds,
        tasks=tasks,
        config=config,
    )


def _mean_metrics(config: Any, task: TaskResult) -> list[str]:
    """The task's metrics (with every filter) that its config's ``metric_list`` aggregates by ``mean``.

    A task without a ``metric_list`` (lm-eval's defaults) is checked against
    the suite instead (``eval.job.check_results``), which says how each
    metric it gates aggregates.
    """
    listed = config.get("metric_list") if isinstance(config, dict) else None
    if not isinstance(listed, list):
        return []
    mean = {
        str(m.get("metric"))
        for m in listed
        if isinstance(m, dict) and m.get("aggregation") == "mean" and isinstance(m.get("metric"), str)
    }
    return [key for key in task.metrics if key.partition(",")[0] in mean]


def _int_or_none(value: Any, where: str, source: str | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse("expected an integer", where, value, source)
    return value


def _task(data: dict[str, Any], name: str, task_hashes: Any, source: str | None) -> TaskResult:
    block = data["results"].get(name)
    if not isinstance(block, dict):
        raise refuse("the task has a config but no results", f"results.{name}", None, source)
    counts = data["n-samples"].get(name)
    if not isinstance(counts, dict):
        raise refuse("no sample counts for the task", f"n-samples.{name}", None, source)
    original = _int_or_none(counts.get("original"), f"n-samples.{name}.original", source)
    effective = _int_or_none(counts.get("effective"), f"n-samples.{name}.effective", source)
    if original is None or effective is None or not 0 <= effective <= original:
        raise refuse("needs integers 0 <= effective <= original", f"n-samples.{name}", counts, source)
    values: dict[str, float] = {}
    errors: dict[str, float | None] = {}
    for key, value in block.items():
        if key in _FIXED_KEYS or "," not in key:
            continue
        metric, _, filter_name = key.partition(",")
        where = f"results.{name}.{key}"
        if metric.endswith("_stderr"):
            errors[metric_key(metric.removesuffix("_stderr"), filter_name)] = (
                None if value in ("N/A", None) else finite(value, where, source)
            )
        else:
            values[metric_key(metric, filter_name)] = finite(value, where, source)
    if len(values) > MAX_METRICS:
        raise refuse(f"{len(values)} metrics; at most {MAX_METRICS}", f"results.{name}", None, source)
    hib = data.get("higher_is_better", {}).get(name) or {}
    shots = data.get("n-shot", {}).get(name)
    version = data["versions"].get(name)
    task_hash = task_hashes.get(name) if isinstance(task_hashes, dict) else None
    return TaskResult(
        name=name,
        version=None if version is None else str(version),
        n_shot=shots if isinstance(shots, int) and not isinstance(shots, bool) else None,
        task_hash=str(task_hash) if task_hash else None,
        n_original=original,
        n_effective=effective,
        metrics={m: MetricValue(v, errors.get(m)) for m, v in values.items()},
        higher_is_better={str(k): (v if isinstance(v, bool) else None) for k, v in hib.items()},
    )


def _samples(task: str, lines: Iterable[str | bytes], effective: int, source: str | None) -> TaskSamples:
    """One task's samples JSONL as columns; every document once per filter, the same metrics in each."""
    where_file = f"samples.{task}"
    order: dict[str, int] = {}  # doc id -> row
    seen: set[tuple[str, str]] = set()
    columns: dict[str, list[float]] = {}
    hashes: dict[str, list[str]] = {h: [] for h in _HASHES}
    unscored: set[str] = set()
    for number, obj in json_lines(lines, f"{source or 'samples'}: {where_file}"):
        where = f"{where_file} line {number}"
        if "doc_id" not in obj or not isinstance(obj.get("metrics"), list):
            raise refuse("not an lm-eval sample line: it needs doc_id and metrics", where, None, source)
        doc = sample_id(obj["doc_id"], f"{where} doc_id", source)
        filter_name = str(obj.get("filter", "none"))
        if (doc, filter_name) in seen:
            raise refuse(f"duplicate sample id {doc} (filter {filter_name!r})", where, None, source)
        seen.add((doc, filter_name))
        if doc not in order:
            if len(order) >= MAX_SAMPLES_PER_TASK:
                raise refuse(f"more than {MAX_SAMPLES_PER_TASK} samples", where, None, source)
            order[doc] = len(order)
            for h in _HASHES:
                if h in obj:
                    hashes[h].append(hash_text(obj[h], f"{where} {h}", source))
        row = order[doc]
        for metric in obj["metrics"]:
            if not isinstance(metric, str) or metric not in obj:
                raise refuse(f"metric {metric!r} is listed but has no value", where, None, source)
            value = obj[metric]
            name = metric_key(metric, filter_name)
            if isinstance(value, list | dict):  # a pass-through value aggregated later (brier_score)
                unscored.add(name)
                continue
            column = columns.setdefault(name, [])
            if len(column) != row:
                raise refuse(
                    f"metric {name!r} is missing from an earlier sample of the task", where, None, source
                )
            column.append(finite(value, f"{where} {metric}", source))
    if len(order) != effective:
        raise refuse(
            f"{len(order)} samples, but the results say {effective} were scored (n-samples.effective): "
            "a cut-short or mismatched samples file",
            where_file,
            None,
            source,
        )
    short = [m for m, col in columns.items() if len(col) != len(order)]
    if short:
        raise refuse(f"metric {short[0]!r} is missing from some samples", where_file, None, source)
    for h, got in hashes.items():
        if got and len(got) != len(order):
            raise refuse(f"{h} is missing from some samples", where_file, None, source)
    return TaskSamples(
        ids=tuple(order),
        scores={m: frozen_column(col) for m, col in columns.items()},
        doc_hashes=tuple(hashes["doc_hash"]) or None,
        prompt_hashes=tuple(hashes["prompt_hash"]) or None,
        target_hashes=tuple(hashes["target_hash"]) or None,
        unscored=tuple(sorted(unscored - set(columns))),
    )
