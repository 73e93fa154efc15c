"""Gates and comparisons of eval results; reading results with what is recorded about them.

``gate`` decides a candidate eval result against a baseline on the
candidate's suite version (``gateway.core.eval.gate.decide``) and records the
decision with every number, the baseline, the approving reviews that
counted (self-reviews left out unless the suite counts them: ``ReviewService.counted``)
and the verdict. The baseline is an explicit eval result, or, when none is
given, whatever the ``BaselineFinder`` names; without one the regression
rules are not evaluated and the decision says so. Such a decision is a
person's: a protected alias never counts it. ``decide_for_alias`` is the
gateway's own decision for an alias move, on the policy's terms
(``services.releases.policy_gate``), recorded with what it was made for.

A candidate and a baseline of different suites are refused outright
(nothing is recorded); of different versions of one suite, the decision is
"not comparable", with the reason, and is recorded like any other.
``compare`` lays the same statistics out per task, without recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from gateway.core.access.policy import allowed, require
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.eval.domain import EvalResultRecord, EvalRun, GateRecord, Review, SuiteVersionRecord
from gateway.core.eval.gate import GateDecision, Scored, decide
from gateway.core.eval.gate_table import compare_table
from gateway.errors import NotFound, SpecError, SpecIssue
from gateway.services.eval.reviews import ReviewService
from gateway.store.eval.evals import EvalStore
from gateway.store.eval.results import EvalResultStore
from gateway.store.eval.reviews import NewGate, ReviewStore

GATEWAY = "gateway"  # who decides a protected alias's gate: the gateway itself, never a person


class BaselineFinder(Protocol):
    def baseline_for(
        self, version: SuiteVersionRecord, candidate: EvalResultRecord
    ) -> tuple[str, str] | None:
        """(eval result id, where it came from) of the baseline a gate without one compares with."""
        ...


class NoDefaultBaseline:
    """No default baseline: until releases exist, a gate compares with an explicit result or none."""

    def baseline_for(
        self, version: SuiteVersionRecord, candidate: EvalResultRecord
    ) -> tuple[str, str] | None:
        """``BaselineFinder.baseline_for``: never one (an explicit baseline or none)."""
        return None


@dataclass(frozen=True)
class ResultView:
    """An eval result with its eval run, its reviews and the gate decisions it took part in."""

    result: EvalResultRecord
    eval_run: EvalRun
    reviews: list[Review]
    approving: list[Review]
    gates: list[GateRecord]


class GateService:
    def __init__(
        self,
        store: EvalStore,
        results: EvalResultStore,
        gates: ReviewStore,
        reviews: ReviewService,
        baselines: BaselineFinder,
    ) -> None:
        self.store = store
        self.results = results
        self.gates = gates
        self.reviews = reviews
        self.baselines = baselines

    # -- reading ----------------------------------------------------------------------------------

    def result(self, result_id: str, *, principal: Principal, with_samples: bool = False) -> EvalResultRecord:
        """One eval result, if the caller may read its project (else NotFound)."""
        try:
            found = self.results.result(result_id, with_samples=with_samples)
        except NotFound:
            raise NotFound(f"no eval result {result_id!r}") from None
        if not allowed(principal, "eval.read", found.project):
            raise NotFound(f"no eval result {result_id!r}")
        return found

    def show(self, result_id: str, *, principal: Principal) -> ResultView:
        """One result with its eval run, the reviews the caller may read, the approving ones, its gates."""
        result = self.result(result_id, principal=principal)
        reviews = self.gates.reviews("eval_result", [result.id]) + self.gates.reviews(
            "artifact", [result.artifact_sha256]
        )
        return ResultView(
            result=result,
            eval_run=self.store.eval_run(result.eval_run_id),
            # an artifact's reviews may be another project's (the run that wrote it): shown where readable
            reviews=[r for r in reviews if allowed(principal, "eval.read", r.project)],
            approving=self.reviews.approving(result),
            gates=self.gates.gates_of([result.id]),
        )

    def gate_record(self, gate_id: str, *, principal: Principal) -> GateRecord:
        """One gate decision, if the caller may read its project (else NotFound)."""
        found = self.gates.gate(gate_id)
        if not allowed(principal, "eval.read", found.project):
            raise NotFound(f"no gate decision {gate_id!r}")
        return found

    # -- deciding ---------------------------------------------------------------------------------

    def gate(self, candidate_id: str, *, principal: Principal, baseline_id: str | None = None) -> GateRecord:
        """Decide and record the gate of ``candidate_id`` (against ``baseline_id``, or the default baseline).

        SpecError when the two are results of different suites; NotFound for a
        result the caller may not read; Forbidden below member.
        """
        candidate = self.result(candidate_id, principal=principal, with_samples=True)
        require(principal, "eval.gate", candidate.project)
        version = self.store.version_by_id(candidate.suite_version_id)
        source = "explicit"
        if baseline_id is None:
            found = self.baselines.baseline_for(version, candidate)
            baseline_id, source = found if found is not None else (None, "none")
        baseline = None
        if baseline_id is not None:
            baseline = self.result(baseline_id, principal=principal, with_samples=True)
            self._same_suite(version, baseline, "baseline")
        approving, left_out = self.reviews.counted(candidate, count_self=self._count_self(version))
        decision = self._decide(version, candidate, baseline, len(approving))
        record = self.gates.record_gate(
            NewGate(
                project=candidate.project,
                suite_version_id=version.id,
                candidate_id=candidate.id,
                baseline_id=baseline.id if baseline else None,
                baseline_source=source,
                verdict=decision.verdict,
                decision=decision.to_dict(),
                review_ids=tuple(r.id for r in approving),
                decided_by=principal.user,
                reviews_not_counted=tuple(left_out),
            ),
            audit=AuditEntry(
                actor=principal.user,
                action="eval.gate",
                target_type="gate_decision",
                target_id="",
                project=candidate.project,
                source=principal.source,
                after={
                    "candidate": candidate.id,
                    "baseline": baseline.id if baseline else None,
                    "suite_version": version.ref,
                    "verdict": decision.verdict,
                    "approving_reviews": [r.id for r in approving],
                    "reviews_not_counted": left_out,
                },
            ),
        )
        return record

    def decide_for_alias(
        self,
        version: SuiteVersionRecord,
        candidate_id: str,
        baseline_id: str | None,
        *,
        baseline_source: str,
        made_for: dict[str, Any],
        also_makers: dict[str, str],
        actor: Principal,
    ) -> GateRecord:
        """The gateway's gate decision for an alias move (``made_for`` says which move and on which
        terms): ``candidate_id`` against ``baseline_id`` on ``version``, reviews counted as for any gate
        and with ``also_makers`` (the release's creator, the requester) left out too. The same decision
        recorded before (same terms, results and counted reviews) is returned, not written again.

        No access check: the caller (``PolicyGate``) has checked the move; the results are read as the
        gateway."""
        candidate = self.results.result(candidate_id, with_samples=True)
        baseline = self.results.result(baseline_id, with_samples=True) if baseline_id else None
        approving, left_out = self.reviews.counted(
            candidate, count_self=self._count_self(version), also=also_makers
        )
        review_ids = tuple(r.id for r in approving)
        for earlier in self.gates.gates_of([candidate.id]):  # newest first
            if (
                earlier.made_for == made_for
                and earlier.suite_version_id == version.id
                and earlier.baseline_id == baseline_id
                and earlier.review_ids == review_ids
                and list(earlier.reviews_not_counted) == left_out
            ):
                return earlier
        decision = self._decide(version, candidate, baseline, len(approving))
        return self.gates.record_gate(
            NewGate(
                project=candidate.project,
                suite_version_id=version.id,
                candidate_id=candidate.id,
                baseline_id=baseline_id,
                baseline_source=baseline_source,
                verdict=decision.verdict,
                decision=decision.to_dict(),
                review_ids=review_ids,
                decided_by=GATEWAY,
                made_for=made_for,
                reviews_not_counted=tuple(left_out),
            ),
            audit=AuditEntry(
                actor=GATEWAY,
                action="eval.gate",
                target_type="gate_decision",
                target_id="",
                project=candidate.project,
                source=actor.source,
                after={
                    "candidate": candidate.id,
                    "baseline": baseline_id,
                    "suite_version": version.ref,
                    "verdict": decision.verdict,
                    "approving_reviews": list(review_ids),
                    "reviews_not_counted": left_out,
                    "made_for": made_for,
                    "asked_by": actor.user,
                },
            ),
        )

    def _count_self(self, version: SuiteVersionRecord) -> bool:
        """The suite's setting: whether reviews by those who made a result count for its gates."""
        try:
            return self.store.suite(version.project, version.name).count_self_reviews
        except NotFound:
            return False

    def compare(self, a_id: str, b_id: str, *, principal: Principal) -> dict[str, Any]:
        """``a`` against ``b`` per task and metric (``gateway.core.eval.gate_table``); nothing is recorded."""
        a = self.result(a_id, principal=principal, with_samples=True)
        b = self.result(b_id, principal=principal, with_samples=True)
        version = self.store.version_by_id(a.suite_version_id)
        self._same_suite(version, b, "b")
        counted, _ = self.reviews.counted(a, count_self=self._count_self(version))
        decision = self._decide(version, a, b, len(counted))
        table = compare_table(version.suite, decision, a.results, b.results)
        return {
            "a": a.id,
            "b": b.id,
            "suite_version": version.ref,
            "a_suite_version": a.suite_ref,
            "b_suite_version": b.suite_ref,
            **table,
        }

    def _decide(
        self,
        version: SuiteVersionRecord,
        candidate: EvalResultRecord,
        baseline: EvalResultRecord | None,
        approving: int,
    ) -> GateDecision:
        return decide(
            version.suite,
            version.content_hash,
            Scored(candidate.id, candidate.suite_hash, candidate.results),
            Scored(baseline.id, baseline.suite_hash, baseline.results) if baseline is not None else None,
            approving_reviews=approving,
        )

    def _same_suite(self, version: SuiteVersionRecord, other: EvalResultRecord, field: str) -> None:
        """Refuse a result of another suite (another version of the same suite is for the gate to judge)."""
        other_version = self.store.version_by_id(other.suite_version_id)
        if other_version.suite_id != version.suite_id:
            raise SpecError(
                [
                    SpecIssue(
                        field,
                        f"{other.id} is a result of suite {other_version.ref}, the candidate of "
                        f"{version.ref}: a gate compares results of one suite",
                        other.id,
                    )
                ],
                what="gate request",
            )
