"""What a new run is recorded with besides itself: its id, and the audit entry of its submission."""

from __future__ import annotations

import uuid
from typing import Any

from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.runs.values import NewRun
from gateway.services.runs.admission import Admitted
from gateway.services.runs.inputs import ResolvedInput
from gateway.services.runs.rerun import RerunIdentity


def new_run_id() -> str:
    """A fresh run id: ``r-`` and 16 random hex digits."""
    return "r-" + uuid.uuid4().hex[:16]


def submit_audit(
    new: NewRun,
    principal: Principal,
    admitted: Admitted,
    inputs: list[ResolvedInput],
    derived_from: tuple[str, list[dict]] | None,
    identity: RerunIdentity | None = None,
    batch: bool = False,
) -> AuditEntry:
    """The ``run.submit`` (or ``run.rerun``) audit entry of ``new``; ``batch``: it came in a batch."""
    after: dict[str, Any] = {
        "queue": new.spec.queue,
        "partition": admitted.target.partition,
        "account": admitted.target.account,
        "os_user": new.os_user,
        "spec_sha256": new.spec.spec_hash(),
        "script_sha256": new.script_sha256,
    }
    if inputs:
        after["datasets"] = [i.version.ref for i in inputs]
    if new.environment and new.environment.get("version_id"):
        after["environment"] = new.environment["ref"]
    if derived_from:
        after |= {"parent_run_id": derived_from[0], "changes": derived_from[1]}
    if identity is not None:
        after |= identity.audit()
    if batch:
        after["batch"] = True
    return AuditEntry(
        actor=principal.user,
        action="run.rerun" if derived_from else "run.submit",
        target_type="run",
        target_id=new.id,
        project=admitted.project.name,
        source=principal.source,
        after=after,
    )
