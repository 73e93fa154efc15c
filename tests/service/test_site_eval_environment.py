"""The site's default eval environment, built on first need (issue 30, item 5), on the real cluster.

- On both databases, with a small lock of the tests' wheels standing in for the lm-eval one (so the
  build takes seconds): three evals started at once of a suite naming no environment, on a gateway
  with neither an eval Python nor an eval environment set, register one version ``site/...@1`` and
  one build job; each eval job waits for it in Slurm (``afterok``) and then runs in the venv (its
  pre-flight records the venv's installed set). A lock whose build fails: the eval waiting for it is
  cancelled by Slurm, its eval run and its environment say why, and the next eval is refused with it.
- Once, on SQLite: a real ``gw serve`` started with no GATEWAY_EVAL_PYTHON / GATEWAY_EVAL_ENVIRONMENT
  builds the real lm-eval lock (eval/environments/lm-eval.lock, from PyPI as this machine's pip is
  configured) and scores a trained tiny_lm model through real lm-eval to an ingested result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from gateway.adapters.files import scan
from gateway.core.runs.values import RunFilter
from gateway.core.slurm.states import RunState
from gateway.errors import Conflict, SpecError
from gateway.services.envs.registry import EnvRegistration
from gateway.services.envs.site_eval import SiteEvalEnvironment, builtin_lock
from gateway.services.eval.runs import ArtifactChoice, EvalRunService
from gateway.services.lineage.datasets import Registration
from tests.conftest import JOB_ROOT
from tests.envs_world import lock_text, wheel
from tests.service.conftest import PROJECT, refresh_until, unique_tag
from tests.service.eval_world import DATA, ROOT, suite_data
from tests.service.gw_serve import GW, gw_serve
from tests.service.registry_world import ended_run

pytestmark = pytest.mark.slurm


def _fresh_gateway_evals(services, site_env: SiteEvalEnvironment) -> EvalRunService:
    """The session's eval service as a gateway with no eval Python and no eval environment set."""
    e = services.evals
    job = replace(e.job, python=None, environment=None)
    return EvalRunService(e.store, e.suites, e.runs, e.run_store, e.lineage, job, site_env)


def _suite_and_artifact(services, lead, tag: str) -> tuple[str, str]:
    dataset = f"cloze-{tag}"
    files = [e.to_dict() for e in scan(DATA).entries]
    services.datasets.register(Registration(PROJECT, dataset, files, path=str(DATA)), principal=lead)
    version, _ = services.eval_suites.register(suite_data(dataset, f"site-{tag}"), principal=lead)
    assert version.suite.environment is None
    _, sha = ended_run(services, PROJECT, root=JOB_ROOT / "site-eval")
    return version.ref, sha


def test_first_evals_register_and_build_the_site_environment_once_and_wait_for_it(services, tmp_path):
    lead = services.access.principal("tester", source="pytest")
    tag = unique_tag()
    lock = tmp_path / "lm-eval.lock"
    lock.write_text(lock_text(wheel("gwtoy", "1.0"), comment=tag))
    site = SiteEvalEnvironment(services.environments, lock, name=f"lm-eval-{tag}")
    evals = _fresh_gateway_evals(services, site)
    suite, sha = _suite_and_artifact(services, lead, tag)

    with ThreadPoolExecutor(3) as pool:
        started = list(
            pool.map(lambda _: evals.start(suite, ArtifactChoice(sha256=sha), principal=lead), range(3))
        )
    catalog = services.environments.catalog
    (version,) = catalog.versions("site", site.name, principal=lead)  # one version for three requests
    assert version.ref == f"site/{site.name}@1" and version.content.get("pip_sources") is True
    listed = services.runs.store.list_runs(RunFilter(project=PROJECT, tag="env-build", limit=500))
    builds = [r for r in listed.items if r.name == f"env-build-{site.name}"]
    assert [r.id for r in builds] == [version.build_run_id]  # one build job
    job = catalog.builds.build_job_id(version)
    assert job is not None
    for s in started:
        assert s.run.environment["ref"] == version.ref and s.run.spec.dependency == f"afterok:{job}"
        assert s.run.spec.slurm_options == {"kill-on-invalid-dep": "yes"}
    # a viewer of another project reads the site's environment (every user does)
    alice = services.access.principal("alice", source="pytest")
    assert catalog.get("site", site.name, principal=alice).name == site.name

    built = refresh_until(services, version.build_run_id, timeout_s=150.0)
    assert built.state is RunState.SUCCEEDED, built.latest
    for s in started:
        done = refresh_until(services, s.run.id, timeout_s=150.0)
        assert done.latest.start_time >= built.latest.end_time  # it waited for the build
        (obs,) = services.environments.of_run(s.run.id, principal=lead).observations
        assert obs.drift is None and obs.observed["packages"]["gwtoy"] == "1.0"  # it ran in the venv
    # the artifact's evidence carries the environment each eval job ran in
    bundle = services.evidence.bundle(sha, principal=lead)
    doc = json.loads(bundle.files["evidence.json"])
    records = {e["run_id"]: e["environment_record"] for e in doc["evaluations"]["eval_runs"]}
    for s in started:
        assert records[s.run.id]["ref"] == version.ref and records[s.run.id]["packages"]["gwtoy"] == "1.0"
        assert records[s.run.id]["observations"][0]["drift"] is None
    assert f"id='env-{version.id}'" in bundle.files["index.html"].decode()
    again = evals.start(suite, ArtifactChoice(sha256=sha), principal=lead)  # built: no wait
    assert again.run.spec.dependency is None and again.run.environment["ref"] == version.ref
    assert len(catalog.versions("site", site.name, principal=lead)) == 1


def test_a_failed_build_of_the_site_environment_says_why_on_the_evals(services, tmp_path):
    lead = services.access.principal("tester", source="pytest")
    tag = unique_tag()
    lock = tmp_path / "lm-eval.lock"
    lock.write_text(f"# {tag}\ngwtoy-missing==9.9 \\\n    --hash=sha256:{'0' * 64}\n")  # in no wheelhouse
    site = SiteEvalEnvironment(services.environments, lock, name=f"lm-eval-bad-{tag}", max_builds=2)
    evals = _fresh_gateway_evals(services, site)
    suite, sha = _suite_and_artifact(services, lead, tag)
    started = evals.start(suite, ArtifactChoice(sha256=sha), principal=lead)
    build_run_id = services.environments.catalog.resolve(
        f"site/{site.name}@1", project=PROJECT, principal=lead
    ).build_run_id
    assert refresh_until(services, build_run_id, timeout_s=150.0).state is RunState.FAILED
    waiting = refresh_until(services, started.run.id, timeout_s=150.0)  # Slurm cancels it
    assert waiting.state is RunState.CANCELLED and waiting.latest.start_time is None, waiting.latest
    seen = services.environments.of_run(started.run.id, principal=lead)
    assert any("failed to build" in w and site.name in w for w in seen.warnings), seen.warnings
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        services.harvester.harvest_due()
        services.eval_ingest.ingest_due()
        found = services.evals.store.eval_run(started.eval_run.id)
        if found.status != "pending":
            break
        time.sleep(0.5)
    assert found.status == "failed" and f"site/{site.name}@1 failed to build" in found.note, found.note
    # the next need builds it again (a new directory, the failure kept and audited) ...
    second = evals.start(suite, ArtifactChoice(sha256=sha), principal=lead)
    version = services.environments.catalog.resolve(f"site/{site.name}@1", project=PROJECT, principal=lead)
    assert version.build_attempts == 2 and version.build_run_id not in (None, build_run_id)
    assert [f["build_run_id"] for f in version.build_failures] == [build_run_id]
    assert "ended failed" in version.build_failures[0]["failure"]
    builds = services.environments.catalog.builds
    assert second.run.spec.dependency == f"afterok:{builds.build_job_id(version)}"
    admin = services.access.principal("admin", source="pytest")
    (rebuilt,) = services.audit.events(admin, action="env.rebuild", target=version.id).items
    assert rebuilt.after["build"] == 2 and "ended failed" in rebuilt.after["previous_failure"]
    assert refresh_until(services, version.build_run_id, timeout_s=150.0).state is RunState.FAILED
    assert refresh_until(services, second.run.id, timeout_s=150.0).state is RunState.CANCELLED
    # ... until it has had its builds: then the evals are refused with every build's failure
    with pytest.raises(Conflict, match=r"failed to build 2 times.*\(earlier: build 1: build run"):
        evals.start(suite, ArtifactChoice(sha256=sha), principal=lead)
    # the site's project is the gateway's: users register in their own
    with pytest.raises(SpecError, match="site's own environments"):
        services.environments.register(
            EnvRegistration(project="site", name=site.name, kind="modules", modules=["gcc/12"]),
            principal=lead,
        )


def _crash_ensure(settings, when: str, lock: Path, name: str) -> None:
    """Ask for the site environment ``name`` of ``lock`` in a process that kills itself at ``when`` of
    its build's sbatch (tests/service/env_crash_driver.py)."""
    fields = {
        "database_url": settings.database_url,
        "runs_dir": str(settings.runs_dir),
        "envs_dir": str(settings.envs_dir),
        "env_pip_find_links": str(settings.env_pip_find_links),
        "audit_anchor_path": str(settings.audit_anchor_path),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "tests.service.env_crash_driver", json.dumps(fields), when, str(lock), name],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def _build_runs(services, version) -> list:
    """Every run tagged as one of ``version``'s builds."""
    return [
        r
        for n in range(1, version.build_attempts + 1)
        for r in services.runs.store.list_runs(RunFilter(tag=f"env-build:{version.id}:{n}")).items
    ]


def test_a_crash_before_the_build_job_is_recorded_is_found_and_the_build_submitted_again(
    services, settings, tmp_path
):
    lead = services.access.principal("tester", source="pytest")
    tag = unique_tag()
    lock = tmp_path / "lm-eval.lock"
    lock.write_text(lock_text(wheel("gwtoy", "1.0"), comment=tag))
    site = SiteEvalEnvironment(services.environments, lock, name=f"lm-eval-crash-{tag}")
    _crash_ensure(settings, "started", lock, site.name)  # the version written, its build run not
    catalog = services.environments.catalog
    (left,) = catalog.versions("site", site.name, principal=lead)
    assert left.status == "building" and left.build_run_id is None and not _build_runs(services, left)
    # within the grace its registering request may still be submitting it: left alone
    with pytest.raises(Conflict, match="has not appeared after 1 s"):
        impatient = SiteEvalEnvironment(services.environments, lock, name=site.name, wait_s=1)
        impatient.ensure(project=PROJECT, queue="cpu", principal=lead)
    grace, catalog.builds.orphan_grace_s = catalog.builds.orphan_grace_s, 0.0
    try:
        # the periodic reconcile's step: past the grace, with no run, it was never submitted
        settled = {v.id: v for v in catalog.builds.settle_building()}
        assert settled[left.id].status == "failed" and "never submitted" in settled[left.id].failure
        version = site.ensure(project=PROJECT, queue="cpu", principal=lead)  # the next need builds again
    finally:
        catalog.builds.orphan_grace_s = grace
    assert version.status == "building" and version.build_attempts == 2
    (failure,) = version.build_failures
    assert "never submitted" in failure["failure"] and failure["build_run_id"] is None
    (build,) = _build_runs(services, version)
    assert build.id == version.build_run_id and catalog.builds.build_job_id(version) is not None
    assert refresh_until(services, build.id, timeout_s=150.0).state is RunState.SUCCEEDED
    ready = catalog.resolve(f"site/{site.name}@1", project=PROJECT, principal=lead)
    assert ready.status == "ready" and ready.packages["gwtoy"] == "1.0"


def test_a_crash_after_sbatch_answered_links_the_one_build_job(services, settings, slurm, tmp_path):
    lead = services.access.principal("tester", source="pytest")
    tag = unique_tag()
    lock = tmp_path / "lm-eval.lock"
    lock.write_text(lock_text(wheel("gwtoy", "1.0"), comment=tag))
    site = SiteEvalEnvironment(services.environments, lock, name=f"lm-eval-crash2-{tag}")
    _crash_ensure(settings, "after", lock, site.name)  # the build job queued, nothing after it stored
    catalog = services.environments.catalog
    version = catalog.resolve(f"site/{site.name}@1", project=PROJECT, principal=lead)  # read: linked
    (build,) = _build_runs(services, version)
    assert version.build_run_id == build.id and version.build_attempts == 1
    attempt = build.attempts[0]
    assert attempt.job_id is None and len(slurm.find_by_tag(attempt.tag)) == 1  # sbatch queued it
    # the runs' exactly-once reconciliation adopts the job sbatch queued: one job, one build
    time.sleep(max(settings.submit_grace_s - (time.time() - attempt.created_at.timestamp()), 0) + 0.2)
    services.refresher.reconcile()
    assert services.runs.store.get_run(build.id).latest.job_id == slurm.find_by_tag(attempt.tag)[0]
    assert refresh_until(services, build.id, timeout_s=150.0).state is RunState.SUCCEEDED
    ready = site.ensure(project=PROJECT, queue="cpu", principal=lead)
    assert ready.status == "ready" and ready.build_attempts == 1 and ready.build_failures == []
    assert len(services.runs.store.get_run(build.id).attempts) == 1


def test_the_shipped_lock_pins_lm_eval_as_the_venv_has_it():
    from importlib.metadata import version

    from gateway.core.envs.lockfile import parse_lock

    pinned = {p.name: p for p in parse_lock(builtin_lock(None).read_text())}
    assert pinned["lm-eval"].version == version("lm_eval") and pinned["pyyaml"].version == version("pyyaml")
    assert all(p.hashes for p in pinned.values())


def _gw(serve, *args: str, timeout: int = 120) -> str:
    env = {**os.environ, "GW_URL": serve.url, "GW_CONFIG": serve.config, "GW_TOKEN": serve.tokens["tester"]}
    done = subprocess.run([*GW, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"gw {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_a_fresh_gw_serve_evaluates_in_the_lm_eval_environment_it_builds_on_first_need(
    tmp_path_factory, slurm, backend
):
    if backend != "sqlite":
        pytest.skip("one real lm-eval build is enough: this gw serve runs on SQLite")
    state = tmp_path_factory.mktemp("serve-site-eval")
    with gw_serve(state, prefix="sev") as serve:
        for name in ("GATEWAY_EVAL_PYTHON", "GATEWAY_EVAL_ENVIRONMENT", "GATEWAY_ENV_PIP_FIND_LINKS"):
            assert name not in serve.env  # a fresh deployment: nothing set for evals
        tag = uuid.uuid4().hex[:8]
        dataset = f"cloze-{tag}"
        _gw(serve, "dataset", "register", str(DATA), "--project", PROJECT, "--name", dataset)
        suite_file = state / "suite.yaml"
        suite_file.write_text(yaml.safe_dump(suite_data(dataset, f"site-{tag}")))
        suite = json.loads(_gw(serve, "eval", "suite", "register", str(suite_file), "--json"))
        spec = state / "train.yaml"
        spec.write_text(
            yaml.safe_dump(
                {
                    "name": "tiny-lm",
                    "project": PROJECT,
                    "queue": "cpu",
                    "command": "python3 examples/tiny_lm/train.py --order 2 --epochs 1",
                    "workdir": str(ROOT),
                    "outputs": ["outputs/*"],
                    "tags": [tag],
                    "resources": {"mem_gb": 0.5},
                }
            )
        )
        trained = json.loads(_gw(serve, "submit", str(spec), "--wait", "--json", timeout=300))
        run_id = (trained[0] if isinstance(trained, list) else trained)["id"]
        ref = f"{suite['project']}/{suite['name']}@{suite['version']}"
        first = json.loads(
            _gw(serve, "eval", "run", ref, "--artifact", f"{run_id}:outputs/model.json", "--json")
        )
        versions = json.loads(_gw(serve, "env", "versions", "site/lm-eval", "--json"))
        (version,) = versions if isinstance(versions, list) else versions["versions"]
        assert version["status"] in ("building", "ready") and version["version"] == 1
        _gw(serve, "wait", first["run_id"], "--timeout", "900", timeout=960)
        deadline = time.monotonic() + 120
        while True:
            shown = json.loads(_gw(serve, "eval", "show", first["id"], "--json"))
            if shown["status"] != "pending" or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert shown["status"] == "ingested", shown
        found = json.loads(_gw(serve, "env", "run", first["run_id"], "--json"))
        assert found["record"]["ref"] == "site/lm-eval@1" and not found["warnings"], found
        (obs,) = found["observations"]
        assert obs["observed"]["packages"]["lm-eval"] == "0.4.13" and obs["drift"] is None
        log = Path(serve.log).read_text()
        assert "Traceback" not in log, log[-3000:]
