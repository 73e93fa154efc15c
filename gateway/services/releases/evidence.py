"""Evidence bundles of a run, a release or an artifact: ``evidence.json``, ``index.html``, ``manifest.json``
(and ``manifest.sig``, its Ed25519 signature, where the site has an evidence key).

``bundle(target)`` gathers, for what the caller may read: the runs (spec,
rendered script and its sha256, queue, requested resources, every attempt
with its Slurm job, node, wait, pending reasons, state events, failure
class and accounting), their dataset versions and digests, the artifacts,
every evaluation of those artifacts (results, gate decisions, reviews), the
releases of them with their status events, alias moves and promotion
requests, and the audit events of all of these (where the caller may read
the project's audit log: leads and admins). With ``redact`` the document is
pseudonymised (``gateway.core.evidence.bundle.redact``) before the page is drawn,
so both files say the same. The schema is docs/evidence-schema.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from gateway import __version__
from gateway.core.access.policy import allowed, require
from gateway.core.access.values import Principal
from gateway.core.clock import utcnow
from gateway.core.evidence.bundle import MANIFEST, SCHEMA, SCHEMA_VERSION, SIGNATURE, manifest_bytes, redact
from gateway.core.evidence.html import render_index
from gateway.core.releases.domain import Release, parse_release_ref
from gateway.core.releases.views import move_dict, release_dict, request_dict
from gateway.core.runs.values import Attempt, Run
from gateway.errors import NotFound, SpecError, SpecIssue
from gateway.services.accounting.ledger import AccountingService
from gateway.services.eval.trace import EvalTraceService
from gateway.services.lineage.walk import LineageService
from gateway.services.releases.promotions import PromotionService
from gateway.services.releases.registry import ReleaseService
from gateway.store.access.access import AccessStore
from gateway.store.audit.audit import AuditStore

TARGET_HELP = "a run id (r-...), a release (PROJECT/NAME@VERSION) or an artifact's sha256 (64 hex digits)"


@dataclass(frozen=True)
class Bundle:
    subject: str
    files: dict[str, bytes]  # evidence.json, index.html, manifest.json (and manifest.sig, signed)


class EvidenceService:
    def __init__(
        self,
        lineage: LineageService,
        eval_trace: EvalTraceService,
        releases: ReleaseService,
        promotions: PromotionService,
        audit: AuditStore,
        access: AccessStore,
        accounting: AccountingService | None = None,
        signer: Callable[[bytes], bytes] | None = None,
    ) -> None:
        self.accounting = accounting  # the runs' cost, once priced accounting records exist
        # manifest.json's bytes -> manifest.sig's, with the site evidence key; None: bundles unsigned
        self.signer = signer
        self.lineage = lineage
        self.eval_trace = eval_trace
        self.releases = releases
        self.promotions = promotions
        self.audit = audit
        self.access = access

    def bundle(self, target: str, *, principal: Principal, redacted: bool = False) -> Bundle:
        """The bundle of ``target`` (see ``TARGET_HELP``); SpecError for anything else, NotFound for what
        the caller may not read."""
        doc = self.document(target, principal=principal)
        if redacted:
            people = [n for u in self.access.users() for n in (u.name, u.os_user)]
            doc = redact(doc, people=[p for p in people if p] + [principal.user])
        evidence = (json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n").encode()
        page = render_index(doc).encode()
        files = {"evidence.json": evidence, "index.html": page}
        files[MANIFEST] = manifest_bytes(
            files, subject=doc["subject"]["label"], generated_at=doc["generated_at"]
        )
        if self.signer is not None:
            files[SIGNATURE] = self.signer(files[MANIFEST])
        return Bundle(doc["subject"]["label"], files)

    def document(self, target: str, *, principal: Principal) -> dict[str, Any]:
        """The evidence document (``evidence.json``'s content, unredacted) of ``target``."""
        kind, runs, shas, releases = self._subject(target, principal)
        for project in sorted({r.project for r in runs} | {r.project for r in releases}):
            require(principal, "evidence.export", project, hide=True)
        run_records = [self._run(r, principal) for r in runs]
        artifacts = [
            a for rec in run_records for a in rec["artifacts"] if a["sha256"] in shas or kind == "run"
        ]
        evaluations = self._evaluations({a["sha256"] for a in artifacts} | shas, principal)
        if kind != "release":
            releases = [
                r
                for sha in sorted({a["sha256"] for a in artifacts} | shas)
                for r in self.releases.releases_of_artifact(sha, principal=principal)
            ]
        release_ids = [r.id for r in releases]
        moves = self.promotions.moves_of(release_ids)
        requests = self.promotions.requests_of(release_ids)
        ids = (
            {r.id for r in runs}
            | {e["id"] for e in evaluations["eval_runs"]}
            | {e["result"]["id"] for e in evaluations["eval_runs"] if e.get("result")}
            | {g["id"] for g in evaluations["gates"]}
            | {r["id"] for r in evaluations["reviews"]}
            | set(release_ids)
            | {m.id for m in moves}
            | {q.id for q in requests}
            | {r.model_id for r in releases}
        )
        projects = {r.project for r in runs} | {r.project for r in releases}
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "generated_at": utcnow().isoformat(),
            "generated_by": principal.user,
            "gateway_version": __version__,
            "subject": {"type": kind, "label": target if kind != "artifact" else target.lower()},
            "runs": run_records,
            "artifacts": artifacts,
            "evaluations": evaluations,
            "releases": [release_dict(r) for r in releases],
            "alias_events": [move_dict(m) for m in moves],
            "promotion_requests": [request_dict(q) for q in requests],
            "audit": self._audit(ids, projects, principal),
            "redaction": None,
        }

    def _subject(self, target: str, principal: Principal) -> tuple[str, list[Run], set[str], list[Release]]:
        """(kind, runs, artifact sha256s, releases) that ``target`` names."""
        if len(target) == 64 and all(c in "0123456789abcdefABCDEF" for c in target):
            sha = target.lower()
            traced = self.lineage.trace_artifact(sha, principal=principal)
            run_ids = list(dict.fromkeys(a["run"]["id"] for a in traced["artifacts"]))
            return "artifact", [self.lineage.runs.get_run(r) for r in run_ids], {sha}, []
        if target.startswith("r-"):
            self.lineage.trace_run(target, principal=principal)  # NotFound unless readable
            return "run", [self.lineage.runs.get_run(target)], set(), []
        if "@" in target:
            try:
                ref = parse_release_ref(target, version=True)
            except ValueError as exc:
                raise SpecError([SpecIssue("target", str(exc), target)], what="evidence target") from None
            release = self.releases.release(ref.project, ref.name, ref.version, principal=principal)
            run = self.lineage.runs.get_run(release.run_id)
            if not allowed(principal, "run.read", run.project):
                raise NotFound(f"the run of {release.ref} is in a project you may not read")
            return "release", [run], {release.artifact_sha256}, [release]
        raise SpecError([SpecIssue("target", TARGET_HELP, target)], what="evidence target")

    def _run(self, run: Run, principal: Principal) -> dict[str, Any]:
        record = self.lineage.trace_run(run.id, principal=principal)
        record["spec"] = run.spec.model_dump(mode="json")
        record["os_user"] = run.os_user
        record["run_dir"] = run.run_dir
        record["attempt_history"] = [attempt_dict(a) for a in run.attempts]
        record["cost"] = self._cost(run.id)
        return record

    def _cost(self, run_id: str) -> dict[str, Any] | None:
        """The run's cost (``GET /runs/{id}/cost``'s body) when priced records exist; else None."""
        if self.accounting is None:
            return None
        cost = self.accounting.cost_of(run_id)
        if not any(a.cost is not None for a in cost.attempts):
            return None
        return asdict(cost)

    def _evaluations(self, shas: set[str], principal: Principal) -> dict[str, Any]:
        merged: dict[str, Any] = {"eval_runs": [], "gates": [], "reviews": []}
        for sha in sorted(shas):
            try:
                found = self.eval_trace.artifact_evals(sha, principal=principal)
            except NotFound:
                continue
            for key in ("eval_runs", "gates", "reviews"):
                merged[key] += found[key]
        return merged

    def _audit(self, ids: set[str], projects: set[str], principal: Principal) -> dict[str, Any]:
        readable = sorted(p for p in projects if allowed(principal, "audit.read", p))
        events = self.audit.events_for(ids, projects=None if principal.is_admin else readable)
        left_out = sorted(projects - set(readable)) if not principal.is_admin else []
        note = (
            f"audit events of {', '.join(left_out)} left out: reading a project's audit log needs its lead"
            if left_out
            else "every audit event about these records; check the chain with `gw admin audit verify`"
        )
        return {
            "note": note,
            "events": [asdict(e) | {"at": e.at.isoformat()} for e in events],
            "left_out_projects": left_out,
        }


def attempt_dict(a: Attempt) -> dict[str, Any]:
    """An attempt for evidence: Slurm job, node, times, wait, pending reasons, accounting, failure."""
    pending = sorted({e.reason for e in a.events if e.reason and e.to_state.value == "pending"})
    wait = (a.start_time - a.submit_time).total_seconds() if a.start_time and a.submit_time else None
    return {
        "number": a.number,
        "job_id": a.job_id,
        "origin": a.origin,
        "state": a.state.value,
        "slurm_state": a.slurm_state,
        "node_list": a.node_list,
        "submit_time": a.submit_time.isoformat() if a.submit_time else None,
        "start_time": a.start_time.isoformat() if a.start_time else None,
        "end_time": a.end_time.isoformat() if a.end_time else None,
        "pending_s": wait,
        "pending_reasons": pending,
        "elapsed_s": a.elapsed_s,
        "alloc_tres": dict(a.alloc_tres),
        "max_rss_kb": a.max_rss_kb,
        "timelimit_min": a.timelimit_min,
        "exit_code": a.exit_code,
        "failure_class": (a.failure or {}).get("class"),
        "failure": a.failure,
        "events": [
            {
                "at": e.at.isoformat(),
                "from": e.from_state.value if e.from_state else None,
                "to": e.to_state.value,
                "slurm_state": e.slurm_state,
                "reason": e.reason,
                "source": e.source,
            }
            for e in a.events
        ],
    }
