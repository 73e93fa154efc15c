"""Ended runs with a real artifact file and metrics, for the hand-off tests (no Slurm needed).

Like ``registry_world.ended_run``, the run is a real row ended by the store's own updates and its
outputs are registered by the harvester's own ``record_outputs``; the artifact is a real file in the
run directory (the MLflow mirror uploads it after checking its sha256).
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from gateway.core.runs.values import AttemptUpdate, NewRun
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.services import Services
from gateway.store.lineage.lineage import HarvestJob


def ended_run_with_file(
    services: Services, project: str, root: Path, *, params: dict | None = None
) -> tuple[str, str]:
    """A succeeded run of ``project`` with outputs/model.bin (random bytes) and a loss series."""
    run_id = f"r-{uuid.uuid4().hex[:12]}"
    run_dir = root / run_id
    (run_dir / "outputs").mkdir(parents=True)
    content = uuid.uuid4().bytes * 64
    (run_dir / "outputs" / "model.bin").write_bytes(content)
    sha = hashlib.sha256(content).hexdigest()
    spec = build_spec(
        {
            "name": "train",
            "project": project,
            "queue": "cpu",
            "command": "true",
            "outputs": ["outputs/*"],
            "params": params or {"lr": 0.001, "optim": {"name": "adamw", "betas": [0.9, 0.95]}},
        }
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
            run_dir=str(run_dir),
            first_tag=f"gw-{run_id}-1",
        )
    )
    attempt = store.get_run(run_id).attempts[0]
    store.record_job_id(attempt.id, str(900000 + uuid.uuid4().int % 99999))
    store.apply_updates([AttemptUpdate(attempt_id=attempt.id, state=RunState.SUCCEEDED)])
    job = HarvestJob(run_id, attempt.id, 1, str(run_dir), ["outputs/*"], [], True)
    services.lineage.store.record_outputs(
        job,
        files=[("outputs/model.bin", len(content), sha)],
        summary={"accuracy": 0.75},
        series={"loss": [(1, 2.5), (2, 1.25), (3, 0.5)]},
        note=None,
    )
    return run_id, sha
