"""Pieces of an evaluation suite version: tasks and their metrics, gate rules, the harness.

``eval_suite.SuiteVersion`` puts them together and checks that the rules name
tasks and metrics the suite has.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from gateway.core.described import Name, anchored, documented
from gateway.core.spec.parts import _check_name, _Strict

MAX_TASKS = 100
MAX_METRICS = 32
MAX_RULES = 256
MAX_DATASETS = 16
MAX_REVIEWS = 20
MAX_ITERATIONS = 100_000  # bootstrap resamples, given or chosen
# lm-eval task and metric names: letters, digits, '_', '.', '-' ('acc', 'exact_match,strict-match').
TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
METRIC_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(,[A-Za-z0-9][A-Za-z0-9_.-]{0,63})?")
METRIC_NAME_HELP = (
    "letters, digits, '_', '.' or '-', with an optional ',filter' (acc, exact_match,strict-match)"
)
VERSION_TEXT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}")
THRESHOLD = re.compile(r"\s*(?P<metric>\S+)\s*(?P<op>>=|<=|>|<)\s*(?P<value>[-+0-9.eE]+)\s*")
ALL_TASKS = "*"
# THRESHOLD with a metric name and a number float() reads as finite, as one JSON-schema pattern.
_NUMBER = r"[-+]?(?:[0-9]{1,15}(?:\.[0-9]{0,15})?|\.[0-9]{1,15})(?:[eE][-+]?[0-9]{1,2})?"
THRESHOLD_PATTERN = rf"^\s*(?:{METRIC_NAME.pattern})\s*(?:>=|<=|>|<)\s*{_NUMBER}\s*$"
# A path below eval/: parts of letters, digits and . _ -, none empty, '.' or '..'.
_EVAL_PART = r"\.*[A-Za-z0-9_-][A-Za-z0-9._-]*|\.{3,}"
EvalPath = Annotated[str, documented(pattern=rf"^(?:{_EVAL_PART})(?:/(?:{_EVAL_PART}))*$", maxLength=256)]


class Metric(_Strict):
    """A metric a task reports: how it reads (higher is better or not) and how it aggregates.

    Paired regression rules need per-sample scores averaged into the task's
    value, so they are only allowed on metrics whose ``aggregation`` is ``mean``.
    """

    name: Annotated[str, documented(pattern=anchored(METRIC_NAME))]
    higher_is_better: bool
    aggregation: Name = "mean"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not METRIC_NAME.fullmatch(value):
            raise ValueError(f"metric {value!r} is not valid; use {METRIC_NAME_HELP}")
        return value

    @field_validator("aggregation")
    @classmethod
    def _aggregation(cls, value: str) -> str:
        return _check_name(value, "aggregation (mean, or the harness's name for another one)")


class Task(_Strict):
    """One task of the suite (for lm-eval, the ``task:`` name of a YAML in the suite's task dir)."""

    name: Annotated[str, documented(pattern=anchored(TASK_NAME))]
    metrics: Annotated[list[Metric], Field(min_length=1, max_length=MAX_METRICS)]

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not TASK_NAME.fullmatch(value):
            raise ValueError("not a valid task name; use 1-128 letters, digits, '_', '.' or '-'")
        return value

    @field_validator("metrics")
    @classmethod
    def _unique(cls, value: list[Metric]) -> list[Metric]:
        names = [m.name for m in value]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"metric {dup[0]!r} is listed twice; name each metric once")
        return value

    def metric(self, name: str) -> Metric | None:
        return next((m for m in self.metrics if m.name == name), None)


class ThresholdRule(_Strict):
    """``rule: "acc >= 0.6"`` on the candidate's task value (``task: "*"`` for every task with the metric)."""

    task: str = ALL_TASKS
    rule: Annotated[str, documented(pattern=THRESHOLD_PATTERN)]

    @field_validator("rule")
    @classmethod
    def _rule(cls, value: str) -> str:
        parse_threshold(value)
        return value

    @property
    def metric(self) -> str:
        return parse_threshold(self.rule)[0]

    @property
    def op(self) -> str:
        return parse_threshold(self.rule)[1]

    @property
    def value(self) -> float:
        return parse_threshold(self.rule)[2]


class RegressionRule(_Strict):
    """A paired comparison with the baseline on the samples both scored, one test per task.

    ``margin`` is the drop (in the metric's units, oriented so that worse is
    negative) tolerated. ``decision`` says how a task passes:

    - ``non_inferiority`` (the default): the interval of the change (at
      confidence 1 - alpha) must lie within the margin: its worse end may be
      worse than the baseline by less than ``margin``, no more. A drop whose
      interval reaches past the margin fails, even when the drop itself is
      smaller; every task must pass, so no correction is needed for the
      intervals (an intersection-union test).
    - ``significance``: a task fails when the drop is larger than the margin
      and significant at ``alpha`` after the ``correction`` across the rule's
      tasks (a drop within the margin passes, whatever its interval).

    Under either, when a task shows no significant change but its minimum
    detectable effect (at ``alpha`` and ``power``) is larger than the margin,
    or the test cannot reach significance at all, the samples could have
    missed a regression: ``when_underpowered`` says whether that fails the
    gate (the default) or passes it with a note.

    ``iterations`` (bootstrap): None lets the gateway choose enough resamples
    for the rule's task count (``gate_stats.bootstrap_iterations``); a number
    is used as given, and refused when the smallest p-value it can give
    cannot be significant after the correction.
    """

    metric: Annotated[str, documented(pattern=anchored(METRIC_NAME))]
    tasks: Annotated[list[str], documented(minItems=1)] = Field(default_factory=lambda: [ALL_TASKS])
    method: Literal["mcnemar", "bootstrap"]
    margin: Annotated[float, Field(ge=0, le=1e6)] = 0.0
    alpha: Annotated[float, Field(gt=0, le=0.5)] = 0.05
    power: Annotated[float, Field(ge=0.5, lt=1)] = 0.8
    decision: Literal["non_inferiority", "significance"] = "non_inferiority"
    iterations: Annotated[int, Field(ge=100, le=MAX_ITERATIONS)] | None = None  # bootstrap; None: chosen
    # bootstrap generator seed; at most 2**53 - 1, the largest integer every JSON reader keeps exactly
    seed: Annotated[int, Field(ge=0, le=2**53 - 1)] = 0
    correction: Literal["bh", "none"] = "bh"  # Benjamini-Hochberg across this rule's tasks
    when_underpowered: Literal["fail", "pass"] = "fail"

    @model_validator(mode="after")
    def _bootstrap_fields(self) -> RegressionRule:
        if not METRIC_NAME.fullmatch(self.metric):
            raise ValueError(f"metric {self.metric!r} is not valid; use {METRIC_NAME_HELP}")
        if not self.tasks:
            raise ValueError(f"tasks is empty; list task names or {ALL_TASKS!r} for all")
        return self


class Gate(_Strict):
    """The gate rules of a suite version, and how many approving reviews a pass needs."""

    thresholds: Annotated[list[ThresholdRule], Field(max_length=MAX_RULES)] = Field(default_factory=list)
    regression: Annotated[list[RegressionRule], Field(max_length=MAX_RULES)] = Field(default_factory=list)
    reviews_required: Annotated[int, Field(ge=0, le=MAX_REVIEWS)] = 0


class Harness(_Strict):
    """What scores the artifact: lm-evaluation-harness at a pinned version, or a native program.

    ``task_dir`` is below the site's ``eval/`` directory (``tasks/tiny_lm``);
    for lm-eval it holds the task YAMLs, ``model`` is the lm-eval model name
    (``tiny_lm``) and ``num_fewshot`` the shots. A native harness runs
    ``program`` (also below ``eval/``), which writes the native JSON-lines format.
    """

    name: Literal["lm-eval", "native"]
    version: Annotated[str, documented(pattern=anchored(VERSION_TEXT))] | None = None
    task_dir: EvalPath
    model: Name | None = None
    program: EvalPath | None = None
    num_fewshot: Annotated[int, Field(ge=0, le=64)] = 0
    seed: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0

    @field_validator("version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None and not VERSION_TEXT.fullmatch(value):
            raise ValueError("not a valid version; use letters, digits and . + _ - (e.g. 0.4.13)")
        return value

    @field_validator("task_dir", "program")
    @classmethod
    def _relative(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not re.fullmatch(r"[A-Za-z0-9._/-]{1,256}", value) or value.startswith("/"):
            raise ValueError("must be a path below eval/ of letters, digits and . _ / - (e.g. tasks/tiny_lm)")
        if any(part in ("", ".", "..") for part in value.split("/")):
            raise ValueError("must stay below eval/: no empty, '.' or '..' parts")
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None) -> str | None:
        return None if value is None else _check_name(value, "model name")

    @model_validator(mode="after")
    def _per_kind(self) -> Harness:
        if self.name == "lm-eval" and (self.version is None or self.model is None):
            raise ValueError("an lm-eval harness pins its version (e.g. 0.4.13) and names its model")
        if self.name == "native" and self.program is None:
            raise ValueError("a native harness names its program (a path below eval/)")
        if self.name == "lm-eval" and self.program is not None:
            raise ValueError("'program' is for native harnesses; lm-eval runs its own")
        return self


def parse_threshold(text: str) -> tuple[str, str, float]:
    """``"acc >= 0.6"`` -> ("acc", ">=", 0.6); ValueError saying what is valid."""
    match = THRESHOLD.fullmatch(text)
    if not match or not METRIC_NAME.fullmatch(match["metric"]):
        raise ValueError(f"threshold {text!r} is not valid; write METRIC OP NUMBER with OP one of >= > <= <")
    try:
        value = float(match["value"])
    except ValueError:
        raise ValueError(f"threshold {text!r}: {match['value']!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"threshold {text!r}: the number must be finite")
    return match["metric"], match["op"], value
