"""Eval jobs in a declared environment (issue 30, item 5) on the real cluster and both databases.

A suite version names the environment its eval job runs in (``environment: PROJECT/NAME@N``): checked
when the suite is registered, pinned into the eval run's spec, and activated by the job's template as a
run's is. Here the environment is a locked venv built by a Slurm job from the tests' toy wheels (no
PyYAML, no lm_eval in it): the eval job runs that venv's python3, which the job's pre-flight records
(its installed set, as for any run) and which then stops at ``import yaml``, so the job shows it did
not run the tests' own eval Python (which has both)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from gateway.adapters.files import scan
from gateway.core.slurm.states import RunState
from gateway.errors import SpecError
from gateway.services.envs.registry import EnvRegistration
from gateway.services.eval.runs import ArtifactChoice
from gateway.services.lineage.datasets import Registration
from tests.conftest import JOB_ROOT
from tests.envs_world import lock_text, wheel
from tests.service.conftest import PROJECT, refresh_until, unique_tag
from tests.service.eval_world import DATA, suite_data
from tests.service.registry_world import ended_run

pytestmark = pytest.mark.slurm


def test_a_suite_names_its_environment_and_the_eval_job_runs_in_it(services):
    lead = services.access.principal("tester", source="pytest")
    tag = unique_tag()
    req = EnvRegistration(
        project=PROJECT,
        name=f"ev-{tag}",
        kind="python",
        lock=lock_text(wheel("gwtoy", "1.0"), comment=tag),
        build_queue="cpu",
    )
    env = services.environments.register(req, principal=lead)[0]
    dataset = f"cloze-{uuid.uuid4().hex[:6]}"
    files = [e.to_dict() for e in scan(DATA).entries]
    services.datasets.register(Registration(PROJECT, dataset, files, path=str(DATA)), principal=lead)
    data = suite_data(dataset, f"suite-{tag}")

    with pytest.raises(SpecError) as missing:
        services.eval_suites.register(data | {"environment": f"{PROJECT}/no-such-{tag}@1"}, principal=lead)
    assert "environment" in str(missing.value) and f"no-such-{tag}" in str(missing.value)
    with pytest.raises(SpecError, match="PROJECT/NAME@N"):
        services.eval_suites.register(data | {"environment": f"{PROJECT}/{env.name}@latest"}, principal=lead)

    refresh_until(services, env.build_run_id, timeout_s=150.0)
    env = services.environments.catalog.resolve(env.ref, project=PROJECT, principal=lead)
    assert env.status == "ready", env.failure
    version, created = services.eval_suites.register(data | {"environment": env.ref}, principal=lead)
    assert created and version.suite.environment == env.ref
    plain, _ = services.eval_suites.register(data, principal=lead)
    assert plain.id != version.id and plain.suite.environment is None  # another version: another job

    _, sha = ended_run(services, PROJECT, root=JOB_ROOT / "eval-env")
    started = services.evals.start(version.ref, ArtifactChoice(sha256=sha), principal=lead)
    run = started.run
    assert run.environment["ref"] == env.ref and run.environment["version_id"] == env.id
    assert f"{env.location}" in run.script and "python3 " in run.script and "/jobs/run_eval.py" in run.script
    done = refresh_until(services, run.id, timeout_s=150.0)
    assert done.state is RunState.FAILED, done.latest  # the venv has no PyYAML: run_eval.py stops there
    seen = services.environments.of_run(run.id, principal=lead)
    (obs,) = seen.observations
    assert obs.drift is None and obs.observed["packages"]["gwtoy"] == "1.0"  # the job ran in the venv
    logs = "".join(
        p.read_text(errors="replace")
        for p in Path(done.run_dir).rglob("*")
        if p.is_file() and p.suffix in (".out", ".err", ".log") and p.stat().st_size < 1 << 20
    )
    assert "No module named 'yaml'" in logs
