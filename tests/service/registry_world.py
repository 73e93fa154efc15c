"""A model registry world without Slurm: runs written straight to the store, ended, with artifacts.

For the registry's service tests that need no cluster (alias history, policies, approvals, overrides):
the runs are real rows (the store's own ``create_run``), ended by the store's own updates, and their
outputs registered by the harvester's own ``record_outputs``; nothing is mocked above the store.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from gateway.core.access.values import Principal
from gateway.core.runs.values import AttemptUpdate, NewRun
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.services import Services
from gateway.store.lineage.lineage import HarvestJob


def principals(project: str) -> dict[str, Principal]:
    """One principal per role of ``project`` (and an outsider and a site admin)."""
    roles = {"lead": "lead", "lead2": "lead", "member": "member", "viewer": "viewer", "reviewer": "reviewer"}
    made = {
        name: Principal(user=f"{name}-{project}", is_admin=False, roles={project: role}, source="pytest")
        for name, role in roles.items()
    }
    made["outsider"] = Principal(user="outsider-x", is_admin=False, roles={"elsewhere": "lead"})
    made["admin"] = Principal(user="admin-x", is_admin=True, roles={})
    return made


def ended_run(
    services: Services,
    project: str,
    *,
    state: RunState = RunState.SUCCEEDED,
    series: dict | None = None,
    environment: dict | None = None,
    root: Path | None = None,
) -> tuple[str, str]:
    """A run of ``project`` that ended in ``state`` with one artifact, outputs/model.bin, and the metric
    ``series`` (name -> [(step, value)]) its harvest found, if given, recorded as having run in
    ``environment`` (a run's environment record, e.g. a registered version's ref and id); with ``root``,
    its run directory is below it and outputs/model.bin is really written there (jobs can read it);
    (run id, sha256)."""
    run_id = f"r-{uuid.uuid4().hex[:12]}"
    run_dir = f"{root}/{run_id}" if root is not None else f"/tmp/{run_id}"
    spec = build_spec(
        {"name": "train", "project": project, "queue": "cpu", "command": "true", "outputs": ["outputs/*"]}
    )
    store = services.runs.store
    store.create_run(
        NewRun(
            id=run_id,
            spec=spec,
            submitter="trainer",
            os_user="root",
            script="#!/bin/bash\ntrue\n",
            script_sha256="1" * 64,
            template_name="single.sbatch.j2",
            template_version="abc",
            run_dir=run_dir,
            first_tag=f"gw-{run_id}-1",
            environment=environment,
        )
    )
    attempt = store.get_run(run_id).attempts[0]
    store.apply_updates([AttemptUpdate(attempt_id=attempt.id, state=state)])
    sha = hashlib.sha256(run_id.encode()).hexdigest()
    size = 12
    if root is not None:
        model = Path(run_dir) / "outputs" / "model.bin"
        model.parent.mkdir(parents=True)
        model.write_bytes(run_id.encode())
        model.parent.parent.chmod(0o755)
        size = len(run_id)
    job = HarvestJob(run_id, attempt.id, 1, run_dir, ["outputs/*"], [], True)
    services.lineage.store.record_outputs(
        job, files=[("outputs/model.bin", size, sha)], summary=None, series=series, note=None
    )
    return run_id, sha


def add_project(services: Services, project: str) -> None:
    """Project ``project`` in the access store with the users of ``principals(project)`` as its members
    (approvals are re-checked against the roles on record); no Slurm account is made: nothing here
    submits."""
    from gateway.core.access.values import User
    from gateway.core.projects import Member, Project, Quota

    who = principals(project)
    for p in who.values():
        services.access.put_user(User(p.user, None, p.is_admin, False))
    members = [Member(p.user, p.roles[project], Quota()) for p in who.values() if project in p.roles]
    services.access.put_project(Project(project, "", f"acct-{project}", Quota(), members, []))
