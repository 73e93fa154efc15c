"""ORM rows of evaluation: suites and their versions, eval runs, results, gate decisions, reviews.

Evidence is written once: a suite version (its definition, prompt text and
the dataset versions it resolved to), an eval result (its task aggregates,
per-sample scores and the source files it was read from), a gate decision,
a review. Nothing here is updated afterwards, except an eval run's status
(pending until its run ends) and the link from a superseded review to the
review that replaced it.

Per-sample scores are stored by column, not by row: per (result, task) the
sample ids and hashes as one compressed blob each, per (result, task,
metric) the scores as one array of little-endian float64 (``store/eval/codec.py``),
so 100,000 samples x 10 tasks are a few dozen rows, written and read in
well under a second.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.models import Base, ProjectNamedRow, UTCDateTime, utcnow


class EvalSuiteRow(ProjectNamedRow, Base):
    """A suite and its owner's settings: the least role that may register a new version (lead or
    member), and whether reviews by the run's submitter or the release's requester count for its gates."""

    __tablename__ = "eval_suites"

    versions_by: Mapped[str] = mapped_column(String(16), default="lead", server_default="lead")
    count_self_reviews: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    __table_args__ = (UniqueConstraint("project", "name", name="uq_eval_suite_name"),)


class EvalSuiteVersionRow(Base):
    __tablename__ = "eval_suite_versions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    suite_id: Mapped[str] = mapped_column(ForeignKey("eval_suites.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(64), index=True)
    definition: Mapped[dict] = mapped_column(JSON)  # SuiteVersion.model_dump(mode="json")
    prompt_sha256: Mapped[str] = mapped_column(String(64))
    registered_by: Mapped[str] = mapped_column(String(128))
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    __table_args__ = (
        UniqueConstraint("suite_id", "number", name="uq_eval_suite_version_number"),
        UniqueConstraint("suite_id", "content_hash", name="uq_eval_suite_version_hash"),
    )


class EvalSuiteDatasetRow(Base):
    """A dataset reference of a suite version, and the exact dataset version it resolved to."""

    __tablename__ = "eval_suite_datasets"

    suite_version_id: Mapped[str] = mapped_column(
        ForeignKey("eval_suite_versions.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    ref: Mapped[str] = mapped_column(String(256))
    dataset_version_id: Mapped[str] = mapped_column(ForeignKey("dataset_versions.id"), index=True)
    digest: Mapped[str] = mapped_column(String(64))


class EvalRunRow(Base):
    """An eval of one artifact on one suite version; its job is the gateway run ``run_id`` (NULL: an
    import of results made elsewhere, whose result's ``origin`` is 'imported')."""

    __tablename__ = "eval_runs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), unique=True)
    project: Mapped[str] = mapped_column(String(64), index=True)
    suite_version_id: Mapped[str] = mapped_column(ForeignKey("eval_suite_versions.id"), index=True)
    artifact_sha256: Mapped[str] = mapped_column(String(64), index=True)
    artifact_path: Mapped[str] = mapped_column(Text)
    artifact_run_id: Mapped[str | None] = mapped_column(String(64), index=True)
    submitted_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    status: Mapped[str] = mapped_column(String(16), index=True)  # pending | ingested | refused | failed
    note: Mapped[str | None] = mapped_column(Text)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class EvalResultRow(Base):
    __tablename__ = "eval_results"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    eval_run_id: Mapped[str] = mapped_column(ForeignKey("eval_runs.id", ondelete="CASCADE"), unique=True)
    suite_version_id: Mapped[str] = mapped_column(ForeignKey("eval_suite_versions.id"), index=True)
    harness: Mapped[str] = mapped_column(String(16))
    harness_version: Mapped[str | None] = mapped_column(String(64))
    seeds: Mapped[dict] = mapped_column(JSON)
    config: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # gateway: read from an eval run's job; imported: lm-eval output made elsewhere, brought in by
    # ``imported_by`` at ``created_at``
    origin: Mapped[str] = mapped_column(String(16), default="gateway", server_default="gateway")
    imported_by: Mapped[str | None] = mapped_column(String(128))


class EvalResultFileRow(Base):
    """A results file a result was read from, with its sha256; the same file is one of the run's artifacts."""

    __tablename__ = "eval_result_files"

    result_id: Mapped[str] = mapped_column(
        ForeignKey("eval_results.id", ondelete="CASCADE"), primary_key=True
    )
    path: Mapped[str] = mapped_column(String(1024), primary_key=True)  # relative to the run directory
    role: Mapped[str] = mapped_column(String(16))  # manifest | results | samples | native | prompt
    task: Mapped[str | None] = mapped_column(String(128))
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    size: Mapped[int] = mapped_column(BigInteger)
    artifact_id: Mapped[int | None] = mapped_column(ForeignKey("artifacts.id", ondelete="SET NULL"))


class EvalResultTaskRow(Base):
    """One task of a result: its aggregates, counts, and its sample ids and hashes (compressed)."""

    __tablename__ = "eval_result_tasks"

    result_id: Mapped[str] = mapped_column(
        ForeignKey("eval_results.id", ondelete="CASCADE"), primary_key=True
    )
    task: Mapped[str] = mapped_column(String(128), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    version: Mapped[str | None] = mapped_column(String(64))
    n_shot: Mapped[int | None] = mapped_column(Integer)
    task_hash: Mapped[str | None] = mapped_column(String(128))
    n_original: Mapped[int] = mapped_column(Integer)
    n_effective: Mapped[int] = mapped_column(Integer)
    metrics: Mapped[dict] = mapped_column(JSON)  # metric -> {value, stderr}
    higher_is_better: Mapped[dict] = mapped_column(JSON)
    unscored: Mapped[list] = mapped_column(JSON)
    sample_count: Mapped[int] = mapped_column(Integer)  # 0: no per-sample scores
    sample_ids: Mapped[bytes | None] = mapped_column(LargeBinary)
    doc_hashes: Mapped[bytes | None] = mapped_column(LargeBinary)
    prompt_hashes: Mapped[bytes | None] = mapped_column(LargeBinary)
    target_hashes: Mapped[bytes | None] = mapped_column(LargeBinary)


class EvalSampleScoresRow(Base):
    """One metric's per-sample scores of one task: float64, little-endian, in the task's sample order."""

    __tablename__ = "eval_sample_scores"

    result_id: Mapped[str] = mapped_column(
        ForeignKey("eval_results.id", ondelete="CASCADE"), primary_key=True
    )
    task: Mapped[str] = mapped_column(String(128), primary_key=True)
    metric: Mapped[str] = mapped_column(String(160), primary_key=True)
    scores: Mapped[bytes] = mapped_column(LargeBinary)


class GateDecisionRow(Base):
    __tablename__ = "gate_decisions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project: Mapped[str] = mapped_column(String(64), index=True)
    suite_version_id: Mapped[str] = mapped_column(ForeignKey("eval_suite_versions.id"), index=True)
    candidate_id: Mapped[str] = mapped_column(ForeignKey("eval_results.id"), index=True)
    baseline_id: Mapped[str | None] = mapped_column(ForeignKey("eval_results.id"), index=True)
    baseline_source: Mapped[str] = mapped_column(String(32))
    verdict: Mapped[str] = mapped_column(String(16))
    decision: Mapped[dict] = mapped_column(JSON)
    review_ids: Mapped[list] = mapped_column(JSON)
    decided_by: Mapped[str] = mapped_column(String(128))
    decided_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # the gateway's decision for a protected alias: {model, alias, release, baseline_release, ...}; NULL:
    # a person's gate
    made_for: Mapped[dict | None] = mapped_column(JSON)
    # approving reviews left out (self-reviews): [{id, reviewer, why}]
    reviews_not_counted: Mapped[list | None] = mapped_column(JSON)


class EvalReviewRow(Base):
    """A human review: append-only; ``superseded_by`` is set once, when the reviewer reviews again."""

    __tablename__ = "eval_reviews"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    project: Mapped[str] = mapped_column(String(64), index=True)
    target_type: Mapped[str] = mapped_column(String(16))  # eval_result | artifact
    target_id: Mapped[str] = mapped_column(String(64), index=True)
    verdict: Mapped[str] = mapped_column(String(16))
    notes: Mapped[str] = mapped_column(Text, default="")
    samples: Mapped[list] = mapped_column(JSON)  # [[task, id], ...]
    labels: Mapped[dict] = mapped_column(JSON)  # "task/id" -> label
    reviewer: Mapped[str] = mapped_column(String(128), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    supersedes: Mapped[str | None] = mapped_column(String(64))
    superseded_by: Mapped[str | None] = mapped_column(String(64))
