"""Domain values of evaluation records: suite versions as stored, eval runs, results, gates, reviews.

They are plain frozen dataclasses, as in ``gateway.core.runs.values``; ORM rows
never leave the store. What a suite version *says* is
``gateway.core.eval.suite.SuiteVersion``; what an evaluation *produced* is
``gateway.core.eval.results.EvalResults``; these records add who, when,
which exact dataset versions, which artifact and which run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from gateway.core import names
from gateway.core.eval.results import EvalResults
from gateway.core.eval.suite import SuiteVersion

EvalRunStatus = Literal["pending", "ingested", "refused", "failed"]
ReviewVerdict = Literal["approve", "reject", "needs-work"]
REVIEW_VERDICTS: tuple[str, ...] = ("approve", "reject", "needs-work")
EVAL_RUN_STATUSES: tuple[str, ...] = ("pending", "ingested", "refused", "failed")


@dataclass(frozen=True)
class SuiteDataset:
    """A dataset reference of a suite version, resolved when the version was registered."""

    position: int
    ref: str  # as the suite wrote it (tiny-cloze@latest)
    version_id: str
    project: str
    name: str
    number: int
    digest: str  # the dataset version's manifest digest

    @property
    def exact(self) -> str:
        """The exact version, as a run spec names it: ``project/name@N``."""
        return f"{self.project}/{self.name}@{self.number}"


@dataclass(frozen=True)
class EvalSuite:
    id: str
    project: str
    name: str
    description: str
    created_by: str
    created_at: datetime
    version_count: int = 0
    latest_number: int | None = None
    versions_by: str = "lead"  # the least role that may register a new version: lead | member
    count_self_reviews: bool = False  # reviews by the run's submitter or the release's requester count


@dataclass(frozen=True)
class SuiteVersionRecord:
    """One immutable, registered version of a suite: its definition and what its datasets resolved to."""

    id: str
    suite_id: str
    number: int
    content_hash: str
    suite: SuiteVersion
    datasets: tuple[SuiteDataset, ...]
    registered_by: str
    registered_at: datetime

    @property
    def project(self) -> str:
        return self.suite.project

    @property
    def name(self) -> str:
        return self.suite.name

    @property
    def ref(self) -> str:
        return f"{self.suite.project}/{self.suite.name}@{self.number}"


@dataclass(frozen=True)
class EvalRun:
    """An evaluation of one artifact on one suite version: an ordinary gateway run, linked both ways.

    ``status``: pending (the run has not ended, or its files are not read
    yet), ingested (``result_id`` holds what it produced), refused (its
    results files were not valid: ``note`` says why, nothing was stored),
    failed (the run ended without succeeding: no results to read).
    """

    id: str
    run_id: str | None  # None: an import of results made elsewhere (no gateway run)
    project: str
    suite_version_id: str
    suite_ref: str  # project/name@N
    artifact_sha256: str
    artifact_path: str  # absolute path the job read
    artifact_run_id: str | None  # the (training) run that wrote the artifact
    submitted_by: str
    created_at: datetime
    status: EvalRunStatus
    note: str | None = None
    result_id: str | None = None
    ended_at: datetime | None = None


@dataclass(frozen=True)
class ResultFile:
    """A results file an eval run left, as ingested: kept as one of the run's artifacts."""

    role: str  # manifest | results | samples | native | prompt
    task: str | None  # the task of a samples file
    path: str  # relative to the eval run's directory
    sha256: str
    size: int
    artifact_id: int | None = None


@dataclass(frozen=True)
class EvalResultRecord:
    """What one eval run produced, as stored: immutable once ingested.

    ``results`` carries per-sample scores only when they were asked for
    (``with_samples``); otherwise each task's ``samples`` is None and
    ``sample_counts`` says how many it has.
    """

    id: str
    eval_run_id: str
    run_id: str | None  # None for an imported result
    project: str
    suite_version_id: str
    suite_hash: str
    suite_ref: str
    artifact_sha256: str
    created_at: datetime
    results: EvalResults
    files: tuple[ResultFile, ...] = ()
    sample_counts: dict[str, int] = field(default_factory=dict)
    origin: str = "gateway"  # gateway: read from an eval run's job; imported: made elsewhere
    imported_by: str | None = None  # who imported it (at created_at)


@dataclass(frozen=True)
class GateRecord:
    """A recorded gate decision: ``decision`` is ``gateway.core.eval.gate.GateDecision.to_dict()``."""

    id: str
    project: str
    suite_version_id: str
    candidate_id: str
    baseline_id: str | None
    baseline_source: str  # explicit | none | alias (the release an alias points at) | first release
    verdict: str
    decision: dict[str, Any]
    review_ids: tuple[str, ...]  # the approving reviews that counted
    decided_by: str
    decided_at: datetime
    # the gateway's decision for a protected alias (model, alias, release, baseline release, policy
    # terms); None: a person asked for this gate
    made_for: dict[str, Any] | None = None
    reviews_not_counted: tuple[dict[str, str], ...] = ()  # approving reviews left out: id, reviewer, why


@dataclass(frozen=True)
class SampleRef:
    task: str
    id: str


@dataclass(frozen=True)
class Review:
    """A human review of an eval result or an artifact: append-only; a change is a new review.

    A reviewer's newer review of the same target supersedes their older one
    (``superseded_by``), which stays on record.
    """

    id: str
    project: str
    target_type: Literal["eval_result", "artifact"]
    target_id: str  # an eval result id, or an artifact's sha256
    verdict: ReviewVerdict
    notes: str
    samples: tuple[SampleRef, ...]
    labels: dict[str, str]  # "task/id" -> label
    reviewer: str
    created_at: datetime
    supersedes: str | None = None
    superseded_by: str | None = None

    @property
    def current(self) -> bool:
        return self.superseded_by is None


# -- naming a suite version: [project/]name@version ------------------------------------------

SUITE_REF = re.compile(
    r"(?:(?P<project>[A-Za-z0-9][A-Za-z0-9._-]{0,62})/)?(?P<name>[A-Za-z0-9][A-Za-z0-9._-]{0,62})"
    rf"@(?P<version>latest|{names.VERSION_NUMBER})"
)
# An eval run's suite, in full (the API has no default project): PROJECT/NAME@VERSION.
SUITE_REF_PATTERN = rf"^{names.NAME.pattern}/{names.NAME.pattern}@(?:latest|{names.VERSION_NUMBER})$"
SUITE_REF_HELP = "[project/]name@version, version 'latest' or a number (3 or v3), e.g. demo/tiny-lm-cloze@1"


@dataclass(frozen=True)
class SuiteRef:
    project: str | None  # None: the caller's default project
    name: str
    number: int | None  # None: the latest version


def parse_suite_ref(text: str) -> SuiteRef:
    """``[project/]name@version`` -> SuiteRef; ValueError saying what is valid."""
    match = SUITE_REF.fullmatch(text)
    if not match:
        if names.VERSION_ZERO.search(text):
            raise ValueError(f"suite {text!r}: versions are numbered from 1")
        raise ValueError(f"suite {text!r} is not valid; use {SUITE_REF_HELP}")
    version = match["version"]
    number = None if version == "latest" else int(version.removeprefix("v"))
    return SuiteRef(match["project"], match["name"], number)
