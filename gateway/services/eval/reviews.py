"""Human reviews of eval results and model artifacts: append-only evidence, counted by gates.

A review names its target (an eval result id ``er-...``, or an artifact's
sha256), a verdict (approve, reject, needs-work), notes, the samples looked
at (``task`` and sample id, which must be the result's) and optional labels
per sample. Only a project's leads, its ``reviewer`` role and site admins
record reviews (``eval.review``); each is audited. A reviewer's newer review
of the same target supersedes their older one, which stays on record.

For a gate, the approving reviews of the candidate are counted: each
reviewer once, by their newest current review of the candidate result or
of its artifact.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping, Sequence

from gateway.core.access.policy import allowed, require
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.eval.domain import REVIEW_VERDICTS, EvalResultRecord, Review, SampleRef
from gateway.errors import NotFound, SpecError, SpecIssue
from gateway.store.eval.results import EvalResultStore
from gateway.store.eval.reviews import NewReview, ReviewStore
from gateway.store.lineage.lineage import LineageStore
from gateway.store.runs.runs import RunStore

MAX_NOTES = 64 * 1024
MAX_SAMPLES = 10_000
MAX_LABEL = 256
SHA256 = re.compile(r"[0-9a-fA-F]{64}")
RESULT_ID = re.compile(r"er-[0-9a-f]{16}")
REVIEW_TARGET_PATTERN = f"^(?:{RESULT_ID.pattern}|{SHA256.pattern})$"  # what _target takes, for the schema


class ReviewService:
    def __init__(
        self, store: ReviewStore, results: EvalResultStore, lineage: LineageStore, runs: RunStore
    ) -> None:
        self.store = store
        self.results = results
        self.lineage = lineage
        self.runs = runs

    def record(
        self,
        target: str,
        *,
        verdict: str,
        principal: Principal,
        notes: str = "",
        samples: Sequence[tuple[str, str]] = (),
        labels: Mapping[str, str] | None = None,
    ) -> Review:
        """Append a review of ``target``; SpecError for a bad field, NotFound/Forbidden as the policy says.

        ``labels`` maps ``task/id`` of a sample to a label; every labelled sample counts as looked at.
        """
        kind, key, project, result = self._target(target, principal)
        require(principal, "eval.review", project)
        labels = dict(labels or {})
        issues = []
        if verdict not in REVIEW_VERDICTS:
            issues.append(SpecIssue("verdict", f"must be one of {', '.join(REVIEW_VERDICTS)}", verdict))
        if len(notes) > MAX_NOTES or "\x00" in notes:
            issues.append(SpecIssue("notes", f"at most {MAX_NOTES} characters, no NUL byte"))
        refs = [SampleRef(task, str(ident)) for task, ident in samples]
        for key_text, label in labels.items():
            task, sep, ident = key_text.partition("/")
            if not sep or not task or not ident:
                issues.append(SpecIssue(f"labels.{key_text}", "a label's key is TASK/SAMPLE_ID", key_text))
                continue
            if not isinstance(label, str) or not 0 < len(label) <= MAX_LABEL or not label.isprintable():
                issues.append(
                    SpecIssue(f"labels.{key_text}", f"a label is 1-{MAX_LABEL} printable characters")
                )
            refs.append(SampleRef(task, ident))
        refs = list(dict.fromkeys(refs))
        if len(refs) > MAX_SAMPLES:
            issues.append(SpecIssue("samples", f"{len(refs)} samples; at most {MAX_SAMPLES}"))
        elif refs and result is None:
            issues.append(
                SpecIssue(
                    "samples", "samples belong to an eval result: review the result (er-...) to name them"
                )
            )
        elif refs and result is not None:
            issues.extend(_unknown_samples(result, refs))
        if issues:
            raise SpecError(issues, what="review")
        return self.store.add_review(
            NewReview(
                project=project,
                target_type=kind,
                target_id=key,
                verdict=verdict,
                notes=notes,
                samples=tuple(refs),
                labels=labels,
                reviewer=principal.user,
            ),
            audit=AuditEntry(
                actor=principal.user,
                action="eval.review",
                target_type="review",
                target_id="",
                project=project,
                source=principal.source,
                after={
                    "target": f"{kind}:{key}",
                    "verdict": verdict,
                    "samples": len(refs),
                    "labels": len(labels),
                },
            ),
        )

    def list(self, target: str, *, principal: Principal) -> list[Review]:
        """Every review of ``target`` (superseded ones too, marked), oldest first."""
        kind, key, project, _ = self._target(target, principal, with_samples=False)
        require(principal, "eval.read", project)
        return [r for r in self.store.reviews(kind, [key]) if allowed(principal, "eval.read", r.project)]

    def approving(self, result: EvalResultRecord) -> builtins.list[Review]:
        """The approving reviews that count for ``result``: per reviewer their newest current review of
        the result or of its artifact, when that one approves."""
        reviews = self.store.reviews("eval_result", [result.id]) + self.store.reviews(
            "artifact", [result.artifact_sha256]
        )
        newest: dict[str, Review] = {}
        for review in reviews:
            if review.current and (
                review.reviewer not in newest or review.created_at >= newest[review.reviewer].created_at
            ):
                newest[review.reviewer] = review
        return sorted((r for r in newest.values() if r.verdict == "approve"), key=lambda r: r.created_at)

    def counted(
        self, result: EvalResultRecord, *, count_self: bool, also: Mapping[str, str] | None = None
    ) -> tuple[builtins.list[Review], builtins.list[dict[str, str]]]:  # the class has a list method
        """The approving reviews a gate of ``result`` counts, and those it leaves out (id, reviewer, why).

        A review by someone who made the result cannot vouch for it: the eval run's submitter, the
        submitter of any run that wrote the artifact, and whoever ``also`` names (user -> why: the
        release's creator, the promotion's requester) are left out unless ``count_self`` (the suite's
        setting). Everyone else counts as :meth:`approving` says.
        """
        makers = self.makers(result) | dict(also or {})
        counted, left_out = [], []
        for review in self.approving(result):
            why = makers.get(review.reviewer)
            if why is None or count_self:
                counted.append(review)
            else:
                left_out.append({"id": review.id, "reviewer": review.reviewer, "why": why})
        return counted, left_out

    def makers(self, result: EvalResultRecord) -> dict[str, str]:
        """Who made ``result`` (user -> in which way): its eval run's submitter, and the submitters of
        the runs that wrote its artifact."""
        found: dict[str, str] = {}
        for artifact in self.lineage.artifacts_by_sha256(result.artifact_sha256):
            run = self.runs.get_run(artifact.run_id)
            found.setdefault(run.submitter, f"submitted run {run.id}, which wrote the artifact")
        if result.run_id is None:  # imported: the importer brought the results in
            if result.imported_by:
                found[result.imported_by] = "imported the result"
            return found
        eval_job = self.runs.get_run(result.run_id)
        found[eval_job.submitter] = f"submitted the eval run's job {eval_job.id}"
        return found

    def _target(
        self, target: str, principal: Principal, *, with_samples: bool = True
    ) -> tuple[str, str, str, EvalResultRecord | None]:
        """(kind, key, project, the result when it is one) of a review target the caller may read."""
        if RESULT_ID.fullmatch(target):
            try:
                result = self.results.result(target, with_samples=with_samples)
            except NotFound:
                raise NotFound(f"no eval result {target!r}") from None
            if not allowed(principal, "eval.read", result.project):
                raise NotFound(f"no eval result {target!r}")
            return "eval_result", result.id, result.project, result
        if SHA256.fullmatch(target):
            sha = target.lower()
            for artifact in self.lineage.artifacts_by_sha256(sha):
                run = self.runs.get_run(artifact.run_id)
                if allowed(principal, "run.read", run.project):
                    return "artifact", sha, run.project, None
            raise NotFound(f"no artifact with sha256 {sha} that you may read")
        raise SpecError(
            [
                SpecIssue(
                    "target", "an eval result id (er-...) or an artifact's sha256 (64 hex digits)", target
                )
            ],
            what="review",
        )


def _unknown_samples(result: EvalResultRecord, refs: Sequence[SampleRef]) -> list[SpecIssue]:
    issues = []
    ids: dict[str, set[str]] = {}
    for name, task in result.results.tasks.items():
        ids[name] = set(task.samples.ids) if task.samples is not None else set()
    for ref in refs:
        if ref.task not in ids:
            known = ", ".join(sorted(ids))
            issues.append(
                SpecIssue("samples", f"the result has no task {ref.task!r} (its tasks: {known})", ref.task)
            )
        elif ref.id not in ids[ref.task]:
            issues.append(SpecIssue("samples", f"task {ref.task} has no sample {ref.id!r}", ref.id))
        if len(issues) >= 20:
            break
    return issues
