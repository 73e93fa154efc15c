"""Evaluation suite versions as typed values: what a suite pins, and its content hash.

A suite belongs to a project and has a name; each version pins the dataset
versions it scores on, the prompt template (text and sha256), the tasks and
their metrics, the gate rules, the harness and the resources of its jobs.
``parse_suite`` reads one from YAML or JSON text; unknown fields are refused
and every error names the field (``tasks.0.metrics.1.aggregation``), gathered
in one ``SpecError`` (``what="eval suite"``). ``content_hash`` is what decides
"the same content again": two definitions with the same hash are one version.

A suite file may name its prompt template as ``prompt_template_file`` (a path
below the site's ``eval/`` directory, like ``harness.task_dir``) instead of
inline text; ``resolve_files`` reads it through a function the caller gives,
so this module does no I/O itself.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from gateway.core.described import Name, NonBlankText, Text, anchored, documented
from gateway.core.eval.gate_reach import bootstrap_iterations, reach_problem
from gateway.core.eval.suite_parts import (
    ALL_TASKS,
    MAX_DATASETS,
    MAX_TASKS,
    Gate,
    Harness,
    Metric,
    RegressionRule,
    Task,
    ThresholdRule,
    parse_threshold,
)
from gateway.core.spec.errors import spec_issues
from gateway.core.spec.lineage import DATASET_REF_HELP, DATASET_REF_PATTERN, parse_dataset_ref
from gateway.core.spec.parts import MAX_TEXT, Resources, _check_name, _check_text, _Strict
from gateway.errors import SpecError, SpecIssue

# an eval job's environment: one exact version, so a suite version always evaluates in the same one
ENVIRONMENT_REF_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}/[A-Za-z0-9][A-Za-z0-9._-]{0,62}@[1-9][0-9]{0,8}"
ENVIRONMENT_REF_HELP = "a registered environment version as PROJECT/NAME@N (e.g. demo/lm-eval@2)"

__all__ = [
    "Gate",
    "Harness",
    "Metric",
    "RegressionRule",
    "SuiteVersion",
    "Task",
    "ThresholdRule",
    "build_suite",
    "parse_suite",
    "parse_threshold",
    "resolve_files",
]


class SuiteVersion(_Strict):
    """One immutable version of an evaluation suite (see the module docstring)."""

    project: Name
    name: Name
    description: Text = ""
    datasets: Annotated[
        list[Annotated[str, documented(pattern=anchored(DATASET_REF_PATTERN))]],
        Field(min_length=1, max_length=MAX_DATASETS),
    ]
    prompt_template: NonBlankText
    tasks: Annotated[list[Task], Field(min_length=1, max_length=MAX_TASKS)]
    gate: Gate = Field(default_factory=Gate)
    harness: Harness
    queue: Name | None = None
    resources: Resources = Field(default_factory=Resources)
    # the registered environment its eval job runs in, one exact version (PROJECT/NAME@N); None: the
    # site's default eval environment, else the site's eval Python (docs/environments.md)
    environment: Annotated[str, documented(pattern=anchored(ENVIRONMENT_REF_PATTERN))] | None = None

    @field_validator("project", "name")
    @classmethod
    def _names(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("queue")
    @classmethod
    def _queue(cls, value: str | None) -> str | None:
        return None if value is None else _check_name(value, "queue")

    @field_validator("environment")
    @classmethod
    def _environment(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(ENVIRONMENT_REF_PATTERN, value):
            raise ValueError(f"{value!r} is not {ENVIRONMENT_REF_HELP}")
        return value

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        return _check_text(value, allow_newlines=True)

    @field_validator("prompt_template")
    @classmethod
    def _prompt(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("is empty; give the template's text (or prompt_template_file)")
        return _check_text(value, allow_newlines=True)

    @field_validator("datasets")
    @classmethod
    def _datasets(cls, value: list[str]) -> list[str]:
        seen: set[str] = set()
        for ref in value:
            try:
                parsed = parse_dataset_ref(ref)
            except ValueError:
                raise ValueError(f"dataset {ref!r} is not valid; use {DATASET_REF_HELP}") from None
            key = f"{parsed.project or ''}/{parsed.name}"
            if key in seen:
                raise ValueError(f"dataset {parsed.name!r} is listed twice; name each once")
            seen.add(key)
        return value

    @model_validator(mode="after")
    def _rules_name_known_metrics(self) -> SuiteVersion:
        names = [t.name for t in self.tasks]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"task {dup[0]!r} is listed twice; name each task once")
        for i, rule in enumerate(self.gate.thresholds):
            self.rule_tasks([rule.task], rule.metric, f"gate.thresholds.{i}")
        gated: dict[tuple[str, str], int] = {}
        for i, reg in enumerate(self.gate.regression):
            for task in self.rule_tasks(reg.tasks, reg.metric, f"gate.regression.{i}"):
                if self.task(task).metric(reg.metric).aggregation != "mean":  # type: ignore[union-attr]  # rule_tasks checked the metric exists
                    raise ValueError(
                        f"gate.regression.{i}: metric {reg.metric!r} of task {task!r} aggregates by "
                        f"{self.task(task).metric(reg.metric).aggregation!r}; paired tests need "  # type: ignore[union-attr]  # as above
                        "'mean' (the task's value is the mean of its per-sample scores)"
                    )
                if (task, reg.metric) in gated:
                    raise ValueError(
                        f"gate.regression.{i}: {task}/{reg.metric} is already gated by "
                        f"gate.regression.{gated[(task, reg.metric)]}; gate each metric of a task once"
                    )
                gated[(task, reg.metric)] = i
        return self

    def task(self, name: str) -> Task | None:
        return next((t for t in self.tasks if t.name == name), None)

    def rule_tasks(self, tasks: list[str], metric: str, where: str) -> list[str]:
        """The task names a rule covers (``*``: every task with the metric); ValueError if one is unknown."""
        if ALL_TASKS in tasks:
            found = [t.name for t in self.tasks if t.metric(metric) is not None]
            if not found:
                raise ValueError(f"{where}: no task of the suite has metric {metric!r}")
            return found
        for name in tasks:
            task = self.task(name)
            if task is None:
                known = ", ".join(t.name for t in self.tasks)
                raise ValueError(f"{where}: task {name!r} is not in the suite; its tasks are {known}")
            if task.metric(metric) is None:
                listed = ", ".join(m.name for m in task.metrics)
                raise ValueError(f"{where}: task {name!r} has no metric {metric!r}; it has {listed}")
        return list(dict.fromkeys(tasks))

    def rule_task_count(self, index: int) -> int:
        """How many tasks regression rule ``index`` tests."""
        rule = self.gate.regression[index]
        return len(self.rule_tasks(rule.tasks, rule.metric, f"gate.regression.{index}"))

    def bootstrap_iterations(self, index: int) -> int:
        """The resamples regression rule ``index`` draws (its own, or chosen for its task count)."""
        return bootstrap_iterations(self.gate.regression[index], self.rule_task_count(index))

    def reach_problems(self) -> list[tuple[str, str]]:
        """(field, why) for each regression rule that could never find a task significant."""
        out = []
        for i, rule in enumerate(self.gate.regression):
            problem = reach_problem(rule, self.rule_task_count(i))
            if problem:
                out.append((f"gate.regression.{i}", problem))
        return out

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256(self.prompt_template.encode("utf-8")).hexdigest()

    def content_hash(self, dataset_digests: Mapping[str, str]) -> str:
        """sha256 over the canonical definition and the digest each dataset reference resolved to.

        ``dataset_digests`` maps every entry of ``datasets`` (as written) to the
        digest of the exact version it resolved to, so ``tiny-text@latest``
        names different content once a new version is registered. Raises
        ValueError when a dataset has no digest.
        """
        missing = [ref for ref in self.datasets if not dataset_digests.get(ref)]
        if missing:
            raise ValueError(f"no resolved digest for dataset(s) {', '.join(missing)}")
        body = self.model_dump(mode="json")
        if body.get("environment") is None:
            body.pop("environment", None)  # versions from before the field hash as they did
        body["datasets"] = [{"ref": ref, "digest": dataset_digests[ref]} for ref in self.datasets]
        body["prompt_template_sha256"] = self.prompt_sha256
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(canonical.encode()).hexdigest()


def resolve_files(data: Any, read: Callable[[str], str]) -> Any:
    """Replace ``prompt_template_file`` by the text ``read(path)`` returns (a SpecError if it fails)."""
    if not isinstance(data, dict) or "prompt_template_file" not in data:
        return data
    data = dict(data)
    path = data.pop("prompt_template_file")
    if "prompt_template" in data:
        raise SpecError(
            [SpecIssue("prompt_template_file", "give prompt_template or the file, not both")],
            what="eval suite",
        )
    if not isinstance(path, str) or not re.fullmatch(r"[A-Za-z0-9._/-]{1,256}", path) or ".." in path:
        raise SpecError(
            [
                SpecIssue(
                    "prompt_template_file",
                    "a path below eval/ of letters, digits and . _ / - (no '..')",
                    path,
                )
            ],
            what="eval suite",
        )
    try:
        data["prompt_template"] = read(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(
            [SpecIssue("prompt_template_file", f"cannot read it: {exc}", path)], what="eval suite"
        ) from exc
    return data


def build_suite(data: Any, *, source: str | None = None) -> SuiteVersion:
    """Validate already-parsed data into a SuiteVersion; raises SpecError naming each bad field.

    A new version is refused, too, when a regression rule of it could never
    find a task significant (``SuiteVersion.reach_problems``); a version
    already stored is read back with ``SuiteVersion.model_validate``, which
    does not ask, and its gates say so task by task instead.
    """
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise SpecError(
            [SpecIssue("", f"a suite must be a mapping of fields, not a {kind}")], source, what="eval suite"
        )
    text = json.dumps(data, default=str)
    if len(text) > 4 * MAX_TEXT:
        raise SpecError(
            [SpecIssue("", f"is {len(text)} characters as JSON; at most {4 * MAX_TEXT}")],
            source,
            what="eval suite",
        )
    try:
        suite = SuiteVersion.model_validate(data)
    except ValidationError as exc:
        raise SpecError(spec_issues(exc, SuiteVersion), source, what="eval suite") from exc
    unreachable = suite.reach_problems()
    if unreachable:
        raise SpecError([SpecIssue(where, why) for where, why in unreachable], source, what="eval suite")
    return suite


def parse_suite(
    text: str, *, source: str | None = None, read: Callable[[str], str] | None = None
) -> SuiteVersion:
    """Read a suite version from YAML or JSON text; ``read`` resolves ``prompt_template_file``."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError([SpecIssue("", f"not valid YAML or JSON: {exc}")], source, what="eval suite") from exc
    if read is not None:
        try:
            data = resolve_files(data, read)
        except SpecError as exc:
            raise SpecError(exc.issues, source, what="eval suite") from exc
    return build_suite(data, source=source)
