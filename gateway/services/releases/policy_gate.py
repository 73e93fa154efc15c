"""The gate decision a protected alias counts: made by the gateway, at the move, on the policy's terms.

A person's gate (``gw eval gate``) is theirs: its baseline, its suite
version and its moment are the gater's choice, so a protected alias never
counts it. For a move of an alias whose policy names a ``gate_suite``, the
gateway decides the gate itself (``GateService.decide_for_alias``):

- on the policy's **suite version**: ``gate_version`` pinned when the policy
  was set (a number), or the suite's newest version (``latest``; who may
  register a new version is the suite's ``versions_by`` setting, leads by
  default);
- on the **release's own artifact**: the newest eval result of that version
  on the release's sha256;
- against the **policy's baseline**: the newest result of that version on
  the artifact of the release that alias ``gate_baseline`` (by default the
  alias being moved) points at now; no baseline only for the first release
  (neither that alias nor the one moved points at anything): a
  ``gate_baseline`` that points at nothing while the moved alias points at a
  release gives no decision, and the move lacks its gate, saying so;
- counting a result imported from outside the gateway (``gw eval import``,
  origin ``imported``) only when the policy says ``allow_imported_results``;
  otherwise such a result is passed over, and when it is the only one the
  move is refused saying so;
- with the approving reviews of the candidate, leaving out reviews by those
  who made it (the runs' submitters, the release's creator, the promotion's
  requester) unless the suite counts them.

The decision is recorded with what it was made for (model, alias, release,
baseline release, policy terms) and the move names it. A later decision of
anyone under other thresholds or another baseline is another record and is
never read here. The same terms, results and reviews give the decision
recorded before (not a second record).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.core.access.values import Principal
from gateway.core.eval.domain import EvalRun, GateRecord, SuiteVersionRecord
from gateway.core.releases.domain import AliasPolicy, PromotionRequest, Release
from gateway.errors import NotFound
from gateway.services.eval.gates import GateService
from gateway.store.eval.evals import EvalStore
from gateway.store.releases.promotions import PromotionStore
from gateway.store.releases.releases import ReleaseStore


@dataclass(frozen=True)
class AliasGate:
    """The gateway's gate for one move: the decision (None when it could not make one) and, in words,
    what it decided or what is missing to decide."""

    gate: GateRecord | None
    detail: str


class PolicyGate:
    def __init__(
        self, evals: EvalStore, gates: GateService, promotions: PromotionStore, releases: ReleaseStore
    ) -> None:
        self.evals = evals
        self.gates = gates
        self.promotions = promotions
        self.releases = releases

    def version_of(self, policy: AliasPolicy) -> SuiteVersionRecord | str:
        """The suite version the policy's gate is decided on, or why there is none (text)."""
        assert policy.gate_suite is not None
        project, _, name = policy.gate_suite.partition("/")
        try:
            suite = self.evals.suite(project, name)
            return self.evals.version(suite.id, policy.gate_version)
        except NotFound:
            which = f"version {policy.gate_version}" if policy.gate_version is not None else "a version"
            return f"the policy's suite {policy.gate_suite} has no {which}"

    def decide(
        self,
        release: Release,
        alias: str,
        policy: AliasPolicy,
        request: PromotionRequest | None,
        *,
        actor: Principal,
    ) -> AliasGate:
        """The gateway's gate decision for moving ``alias`` to ``release`` under ``policy``."""
        version = self.version_of(policy)
        if isinstance(version, str):
            return AliasGate(None, version)
        allow = policy.allow_imported_results
        candidate, passed_over = self._result_on(version, release.artifact_sha256, allow)
        if candidate is None:
            return AliasGate(
                None,
                f"no eval result of {version.ref} on the release's artifact"
                + _imported_note(passed_over)
                + f": `gw eval run {version.ref} --artifact {release.artifact_sha256}`",
            )
        baseline_alias = policy.baseline_alias
        baseline_release = self._baseline_release(release, alias, baseline_alias)
        if isinstance(baseline_release, str):
            return AliasGate(None, baseline_release)
        baseline = None
        if baseline_release is not None:
            baseline, passed_over = self._result_on(version, baseline_release.artifact_sha256, allow)
            if baseline is None:
                return AliasGate(
                    None,
                    f"no eval result of {version.ref} on the baseline, {baseline_release.ref} "
                    f"({baseline_alias} now)" + _imported_note(passed_over) + f": `gw eval run {version.ref} "
                    f"--artifact {baseline_release.artifact_sha256}`",
                )
        makers = {release.created_by: f"created release {release.ref}"}
        if request is not None:
            makers.setdefault(request.requested_by, f"requested the promotion ({request.id})")
        made_for = {
            "model": f"{release.project}/{release.model}",
            "alias": alias,
            "release": release.ref,
            "release_id": release.id,
            "suite_version": version.ref,
            "baseline_alias": baseline_alias,
            "baseline_release": baseline_release.ref if baseline_release else None,
            "baseline_release_id": baseline_release.id if baseline_release else None,
            "policy": policy.as_dict(),
        }
        gate = self.gates.decide_for_alias(
            version,
            candidate.result_id or "",
            baseline.result_id if baseline else None,
            baseline_source=f"alias {baseline_alias}" if baseline_release else "first release",
            made_for=made_for,
            also_makers=makers,
            actor=actor,
        )
        against = (
            f"against {baseline_release.ref} ({baseline_alias} now)"
            if baseline_release
            else f"with no baseline ({baseline_alias} points at nothing yet)"
        )
        reasons = "; ".join(str(r) for r in gate.decision.get("reasons", [])[:3])
        detail = f"the gateway's gate {gate.id} on {version.ref} {against} is {gate.verdict}"
        return AliasGate(gate, detail + (f": {reasons}" if reasons and gate.verdict != "pass" else ""))

    def _baseline_release(self, release: Release, alias: str, baseline_alias: str) -> Release | str | None:
        """The release ``baseline_alias`` points at now; None for the first release (no baseline), and
        why not (text) when that alias points at nothing although ``alias`` points at a release."""
        moves = self.promotions.alias_events(release.model_id, baseline_alias)
        if moves and moves[-1].to_release is not None:
            return self.releases.release_by_id(moves[-1].to_release)
        own = self.promotions.alias_events(release.model_id, alias) if baseline_alias != alias else []
        if not own or own[-1].to_release is None:
            return None
        current = self.releases.release_by_id(own[-1].to_release)
        return (
            f"the policy's baseline alias {baseline_alias} points at nothing, while {alias} points at "
            f"{current.ref}: no baseline is only for the first release; move {baseline_alias} to the "
            "release to compare with, or set the policy's gate_baseline to an alias that points at one "
            f"(`gw release policy ... --gate-baseline {alias}`)"
        )

    def _result_on(
        self, version: SuiteVersionRecord, sha256: str, allow_imported: bool
    ) -> tuple[EvalRun | None, list[EvalRun]]:
        """The newest ingested eval run of ``version`` on the artifact ``sha256`` (None: none) that the
        policy counts, and the imported ones passed over for it (an import has no gateway run)."""
        runs = self.evals.eval_runs(None, artifact_sha256=sha256, suite_version_id=version.id)
        passed_over = []
        for e in runs:  # newest first
            if not e.result_id:
                continue
            if e.run_id is None and not allow_imported:
                passed_over.append(e)
                continue
            return e, passed_over
        return None, passed_over


def _imported_note(passed_over: list[EvalRun]) -> str:
    """Why imported results were not counted, naming them (empty when none were passed over)."""
    if not passed_over:
        return ""
    shown = ", ".join(f"{e.result_id} (imported by {e.submitted_by})" for e in passed_over[:3])
    return (
        f" that the policy counts: {shown} was imported from outside the gateway, and the policy does "
        "not allow imported results (set allow_imported_results, `gw release policy ... "
        "--allow-imported-results`, to count them)"
    )
