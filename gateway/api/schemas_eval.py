"""API schemas of evaluation: eval runs, results, gate decisions, reviews, comparisons, traces (the
suites and their versions are in ``schemas_suites``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.api.schemas import RunSummary
from gateway.api.schemas_lineage import LineageRunPublic
from gateway.api.schemas_suites import SuiteVersionPublic
from gateway.core.eval.domain import (
    SUITE_REF_PATTERN,
    EvalRun,
    GateRecord,
    Review,
)
from gateway.core.runs.values import Run
from gateway.services.eval.gates import ResultView
from gateway.services.eval.reviews import REVIEW_TARGET_PATTERN
from gateway.services.eval.trace import gate_dict, result_dict, review_dict

SHA256_PATTERN = "^[0-9a-fA-F]{64}$"


class EvalRunCreate(BaseModel):
    """Which suite version to run on which artifact: its sha256, or a run's output (by path if several)."""

    model_config = ConfigDict(extra="forbid")

    suite: str = Field(
        max_length=200,
        description="project/name@version (version: a number or latest)",
        json_schema_extra={"pattern": SUITE_REF_PATTERN},
    )
    artifact_sha256: str | None = Field(default=None, pattern=SHA256_PATTERN)
    run_id: str | None = Field(default=None, max_length=64, description="A run whose output is the artifact")
    artifact_path: str | None = Field(
        default=None, max_length=4096, description="The output's path in that run (when it has several)"
    )
    queue: str | None = Field(default=None, max_length=64, description="Default: the suite's queue")


class ImportedFile(BaseModel):
    """One of lm-eval's output files, as it wrote it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        pattern=r"^[A-Za-z0-9._:-]{1,255}$",
        description="Its file name: results_<date>.json or samples_<task>_<date>.jsonl",
    )
    content: str = Field(description="The file's text (UTF-8)")


class EvalImportCreate(BaseModel):
    """lm-eval's output of a run made elsewhere, and the artifact it scored."""

    model_config = ConfigDict(extra="forbid")

    artifact_sha256: str = Field(pattern=SHA256_PATTERN, description="The scored artifact's sha256")
    artifact_path: str | None = Field(
        default=None, max_length=4096, description="Where the artifact was (for the record)"
    )
    files: list[ImportedFile] = Field(
        min_length=1,
        max_length=257,
        description="One results_<date>.json and a samples_<task>_<date>.jsonl per task (--log_samples)",
    )


class EvalRunPublic(BaseModel):
    id: str
    run_id: str | None = Field(description="The gateway run that is the eval job; null for an import")
    project: str
    suite_version_id: str
    suite_ref: str
    artifact_sha256: str
    artifact_path: str
    artifact_run_id: str | None = Field(description="The run that wrote the artifact")
    submitted_by: str
    created_at: datetime
    status: Literal["pending", "ingested", "refused", "failed"]
    note: str | None = Field(description="Why it was refused or failed")
    result_id: str | None
    ended_at: datetime | None

    @classmethod
    def of(cls, eval_run: EvalRun) -> EvalRunPublic:
        return cls.model_validate(eval_run.__dict__)


class EvalRunStarted(EvalRunPublic):
    run: RunSummary

    @classmethod
    def started(cls, eval_run: EvalRun, run: Run) -> EvalRunStarted:
        return cls.model_validate(eval_run.__dict__ | {"run": RunSummary.of(run)})


class MetricValuePublic(BaseModel):
    value: float
    stderr: float | None


class TaskResultPublic(BaseModel):
    name: str
    version: str | None
    n_shot: int | None
    task_hash: str | None
    n_original: int = Field(description="Documents in the task")
    n_effective: int = Field(description="Documents scored (fewer when a limit was set)")
    samples: int = Field(description="Per-sample scores stored")
    metrics: dict[str, MetricValuePublic]


class ResultFilePublic(BaseModel):
    role: str = Field(description="manifest, results, samples, native or prompt")
    task: str | None
    path: str = Field(description="Relative to the eval run's directory")
    sha256: str
    size: int
    artifact_id: int | None


class EvalResultPublic(BaseModel):
    id: str
    eval_run_id: str
    run_id: str | None = Field(description="The gateway run that is the eval job; null for an import")
    project: str
    suite_version_id: str
    suite_version: str
    suite_hash: str
    artifact_sha256: str
    created_at: datetime
    origin: Literal["gateway", "imported"] = Field(
        description="gateway: read from an eval run's job; imported: lm-eval output made elsewhere, "
        "brought in with POST .../imports (never counted for a protected alias unless its policy allows)"
    )
    imported_by: str | None = Field(description="Who imported it (at created_at); null for origin gateway")
    harness: str
    harness_version: str | None
    seeds: dict[str, int | None]
    tasks: list[TaskResultPublic]
    files: list[ResultFilePublic]


class SampleRefPublic(BaseModel):
    task: str
    id: str


class ReviewPublic(BaseModel):
    id: str
    project: str
    target_type: Literal["eval_result", "artifact"]
    target_id: str
    verdict: Literal["approve", "reject", "needs-work"]
    notes: str
    samples: list[SampleRefPublic]
    labels: dict[str, str] = Field(description="task/id -> label")
    reviewer: str
    created_at: datetime
    supersedes: str | None
    superseded_by: str | None
    current: bool

    @classmethod
    def of(cls, review: Review) -> ReviewPublic:
        return cls.model_validate(review_dict(review))


class ReviewCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str = Field(
        max_length=64,
        description="An eval result id (er-...) or an artifact's sha256",
        json_schema_extra={"pattern": REVIEW_TARGET_PATTERN},
    )
    verdict: Literal["approve", "reject", "needs-work"]
    notes: str = Field(default="", max_length=65536)
    samples: list[SampleRefPublic] = Field(default_factory=list, max_length=10_000, description="Looked at")
    labels: dict[str, str] = Field(default_factory=dict, description="task/id -> label (1-256 characters)")


class GatePublic(BaseModel):
    id: str
    project: str
    suite_version_id: str
    candidate_id: str
    baseline_id: str | None
    baseline_source: str = Field(
        description="explicit, none, default (a person's gate); alias NAME or first release (the gateway's)"
    )
    verdict: Literal["pass", "fail", "not_comparable"]
    decision: dict[str, Any] = Field(description="The rule, every number and the reasons (GateDecision)")
    review_ids: list[str] = Field(description="The approving reviews that counted")
    decided_by: str = Field(description="Who asked for it, or gateway (a protected alias's gate)")
    decided_at: datetime
    made_for: dict[str, Any] | None = Field(
        None,
        description="The gateway's decision for an alias move: model, alias, release, suite version, "
        "baseline alias and release, policy; null: a person's gate, which no protected alias counts",
    )
    reviews_not_counted: list[dict[str, str]] = Field(
        default_factory=list,
        description="Approving reviews left out (id, reviewer, why): by the run's submitter or the "
        "release's requester, unless the suite counts them",
    )

    @classmethod
    def of(cls, gate: GateRecord) -> GatePublic:
        return cls.model_validate(gate_dict(gate))


class GateCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    baseline: str | None = Field(
        default=None, max_length=64, description="An eval result id; none: the default baseline (none yet)"
    )


class EvalResultDetail(EvalResultPublic):
    eval_run: EvalRunPublic
    reviews: list[ReviewPublic]
    approving_reviews: list[str]
    gates: list[GatePublic]

    @classmethod
    def of(cls, view: ResultView) -> EvalResultDetail:
        return cls.model_validate(
            result_dict(view.result)
            | {
                "eval_run": EvalRunPublic.of(view.eval_run),
                "reviews": [ReviewPublic.of(r) for r in view.reviews],
                "approving_reviews": [r.id for r in view.approving],
                "gates": [GatePublic.of(g) for g in view.gates],
            }
        )


class EvalCompareRowPublic(BaseModel):
    task: str
    metric: str
    higher_is_better: bool
    a: float | None
    a_stderr: float | None
    b: float | None
    b_stderr: float | None
    delta: float | None = Field(description="a - b")
    ci_low: float | None
    ci_high: float | None
    confidence: float | None
    p_value: float | None
    p_adjusted: float | None
    mde: float | None = Field(description="Minimum detectable effect (null: none, or not tested)")
    margin: float | None
    method: str | None
    n: int | None
    verdict: str
    reason: str | None


class EvalComparePublic(BaseModel):
    a: str
    b: str
    suite_version: str
    a_suite_version: str
    b_suite_version: str
    verdict: Literal["pass", "fail", "not_comparable"] = Field(
        description="The gate of a against b, not recorded"
    )
    comparable: bool
    reasons: list[str]
    notes: list[str]
    rows: list[EvalCompareRowPublic]


class EvalRunTracePublic(EvalRunPublic):
    result: EvalResultPublic | None
    environment_record: dict[str, Any] | None = Field(
        None, description="The environment its eval job ran in, as a run's lineage record carries it"
    )


class ArtifactEvalsPublic(BaseModel):
    sha256: str
    eval_runs: list[EvalRunTracePublic]
    gates: list[GatePublic]
    reviews: list[ReviewPublic]


class TracedArtifactPublic(BaseModel):
    sha256: str
    path: str
    run_id: str | None
    run: LineageRunPublic | None = Field(description="The run that wrote it (null: not readable by you)")


class EvalResultTracePublic(BaseModel):
    result: EvalResultPublic
    suite_version: SuiteVersionPublic
    eval_run: EvalRunPublic
    run: LineageRunPublic = Field(description="The eval job: its Slurm jobs, script, inputs and outputs")
    artifact: TracedArtifactPublic
    reviews: list[ReviewPublic]
    approving_reviews: list[str]
    gates: list[GatePublic]
