"""Training environments through the services, on real Slurm, real podman and both databases:
a locked venv built by a Slurm job and used by a later run (and its drift when changed by hand),
a container image built here from a Debian package and run by podman inside a job, module lists,
and the dependency change records between versions and runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.errors import Conflict, Forbidden, NotFound, SpecError
from gateway.services.envs.registry import EnvRegistration
from tests.conftest import JOB_ROOT
from tests.envs_world import busybox_image, lock_text, podman_rmi, wheel
from tests.service.conftest import PROJECT, refresh_until, unique_tag

pytestmark = pytest.mark.slurm


def register(services, who="tester", **fields):
    req = EnvRegistration(project=fields.pop("project", PROJECT), **fields)
    return services.environments.register(req, principal=services.access.principal(who))


def settle(services, version, timeout_s=150.0):
    """Refresh until the build run of ``version`` ends; the version as the catalog then reads it."""
    refresh_until(services, version.build_run_id, timeout_s=timeout_s)
    return services.environments.catalog.resolve(
        version.ref, project=PROJECT, principal=services.access.principal("tester")
    )


def submit(services, name, command, environment, who="tester"):
    spec = build_spec(
        {"name": name, "project": PROJECT, "queue": "cpu", "command": command, "environment": environment}
    )
    return services.runs.submit(spec, principal=services.access.principal(who))


@pytest.fixture(scope="module")
def wheels():
    return {(n, v): wheel(n, v) for n, v in [("gwtoy", "1.0"), ("gwtoy", "2.0"), ("gwdep", "0.3")]}


def test_locked_venv_is_built_by_a_job_used_by_a_run_and_drift_is_seen(services, wheels):
    name = unique_tag()
    lock1 = lock_text(wheels["gwtoy", "1.0"], wheels["gwdep", "0.3"], comment=name)
    v1, created = register(services, name=name, kind="python", lock=lock1, build_queue="cpu")
    assert created and v1.status == "building" and v1.build_run_id and v1.kind == "python"
    assert v1.content["locked"] == {"gwdep": "0.3", "gwtoy": "1.0"}
    again, created = register(services, "mia", name=name, kind="python", lock=lock1, build_queue="cpu")
    assert not created and again.id == v1.id
    with pytest.raises(Conflict, match="still being built"):
        submit(services, "early", ["true"], f"{name}@latest")
    v1 = settle(services, v1)
    assert v1.status == "ready", v1.failure
    assert v1.packages["gwtoy"] == "1.0" and v1.packages["gwdep"] == "0.3" and "pip" in v1.packages
    assert v1.packages_sha256 and len(v1.packages_sha256) == 64

    run = submit(
        services, "uses-venv", ["python", "-c", "import gwtoy; print('toy', gwtoy.VERSION)"], f"{name}@latest"
    )
    assert run.environment["ref"] == f"{PROJECT}/{name}@1" and run.environment["version_id"] == v1.id
    assert "import importlib.metadata" in run.script and v1.location in run.script
    done = refresh_until(services, run.id)
    assert done.state is RunState.SUCCEEDED, done.latest
    seen = services.environments.of_run(run.id, principal=services.access.principal("tester"))
    assert [o.drift for o in seen.observations] == [None] and seen.warnings == []
    assert seen.observations[0].observed["packages"]["gwtoy"] == "1.0"

    # the scan finds the planted advisory (tests/data/osv) and nothing else
    report = services.environments.scan(
        v1.ref, project=PROJECT, principal=services.access.principal("tester")
    )
    assert [(f.package, f.version, f.advisory, f.severity, f.fixed) for f in report.findings] == [
        ("gwtoy", "1.0", "GHSA-gwt0-0000-0001", "CRITICAL", ("1.1",))
    ]
    assert report.advisories == 3 and report.problems == [] and report.worst == "CRITICAL"
    seen = services.environments.of_run(run.id, principal=services.access.principal("tester"))
    assert [f.advisory for f in seen.findings] == ["GHSA-gwt0-0000-0001"]

    # a package changed by hand in the built venv: the next run's job finds it, a warning says so
    site = next(Path(v1.location).glob("lib/python*/site-packages"))
    meta = site / "gwtoy-1.0.dist-info" / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 1.0", "Version: 1.1"))
    drifted = submit(services, "drifted", ["true"], f"{name}@1")
    assert refresh_until(services, drifted.id).state is RunState.SUCCEEDED
    seen = services.environments.of_run(drifted.id, principal=services.access.principal("tester"))
    (obs,) = seen.observations
    assert obs.drift == {
        "packages": {
            "added": [],
            "removed": [],
            "upgraded": [{"name": "gwtoy", "from": "1.0", "to": "1.1"}],
            "downgraded": [],
            "changed": [],
            "unchanged": len(v1.packages) - 1,
        }
    }
    assert seen.warnings and "upgraded gwtoy 1.0 -> 1.1" in seen.warnings[0]

    # a derived version records its diff from its parent, and who made it, in the audit log
    lock2 = lock_text(wheels["gwtoy", "2.0"], comment=name)
    v2, created = register(services, "mia", name=name, kind="python", lock=lock2, build_queue="cpu")
    assert created and v2.number == 2 and v2.parent_id == v1.id
    assert v2.parent_diff["upgraded"] == [{"name": "gwtoy", "from": "1.0", "to": "2.0"}]
    assert v2.parent_diff["removed"] == [{"name": "gwdep", "version": "0.3"}]
    v2 = settle(services, v2)
    assert v2.status == "ready" and v2.packages["gwtoy"] == "2.0" and "gwdep" not in v2.packages
    assert (
        services.environments.scan(
            v2.ref, project=PROJECT, principal=services.access.principal("tester")
        ).findings
        == []
    )
    diff = services.environments.diff(
        f"{name}@1", f"{name}@2", project=PROJECT, principal=services.access.principal("tester")
    )
    assert diff.packages["upgraded"] == [{"name": "gwtoy", "from": "1.0", "to": "2.0"}]
    assert diff.packages["removed"] == [{"name": "gwdep", "version": "0.3"}]
    assert diff.packages["added"] == [] and diff.packages["downgraded"] == []
    by_runs = services.environments.diff(
        run.id, run.id, project=PROJECT, principal=services.access.principal("tester")
    )
    assert by_runs.packages["unchanged"] == len(v1.packages)
    events = services.audit.store.events(target_id=v2.id)
    registered = next(e for e in events if e.action == "env.register")
    assert registered.actor == "mia"  # the lock's change, recorded when it was registered
    assert registered.after["parent_diff"]["upgraded"] == [{"name": "gwtoy", "from": "1.0", "to": "2.0"}]
    assert registered.after["parent_diff"]["unchanged"] == 0
    built = next(e for e in events if e.action == "env.build")
    assert built.after["status"] == "ready" and built.after["packages_sha256"] == v2.packages_sha256
    assert built.after["parent_diff"] == v2.parent_diff  # the installed sets' change, once built


def test_a_failed_build_is_recorded_and_refused_by_runs(services):
    name = unique_tag()
    missing = "nothere==9.9 --hash=sha256:" + "0" * 64 + f"\n# {name}\n"
    v1, _ = register(services, name=name, kind="python", lock=missing, build_queue="cpu")
    v1 = settle(services, v1)
    assert v1.status == "failed" and "ended failed" in v1.failure
    with pytest.raises(Conflict, match="failed to build"):
        submit(services, "after-fail", ["true"], f"{name}@1")
    with pytest.raises(Conflict, match="failed"):
        register(services, name=name, kind="python", lock=missing, build_queue="cpu")


def test_an_image_built_here_runs_in_a_job_under_podman_and_its_id_is_recorded(services):
    if shutil.which("podman") is None:
        pytest.fail("podman is not installed: ansible/roles/gateway/tasks/podman.yml installs it")
    name = unique_tag()
    archive, image_id = busybox_image(f"localhost/gw-test-{name}:1", JOB_ROOT / f"image-{name}.tar")
    podman_rmi(image_id)  # the job loads it from the archive into its user's store
    v1, created = register(services, name=name, kind="image", archive=str(archive))
    assert created and v1.status == "ready" and v1.image_id == image_id and v1.location == str(archive)
    run = submit(
        services,
        "in-image",
        ["sh", "-c", 'test ! -e /etc/debian_version && echo "inside $GW_RUN_ID" > "$GW_RUN_DIR/inside.txt"'],
        f"{name}@latest",
    )
    assert "podman run --rm" in run.script and image_id.removeprefix("sha256:") in run.script
    done = refresh_until(services, run.id, timeout_s=120)
    assert done.state is RunState.SUCCEEDED, done.latest
    assert (Path(run.run_dir) / "inside.txt").read_text() == f"inside {run.id}\n"
    seen = services.environments.of_run(run.id, principal=services.access.principal("tester"))
    (obs,) = seen.observations
    assert obs.observed["image_id"] == image_id and obs.drift is None
    podman_rmi(image_id)
    archive.unlink()


def test_image_and_module_registrations_check_their_input(services, tmp_path):
    bad = JOB_ROOT / f"not-an-image-{unique_tag()}.tar"
    bad.write_text("hello")
    with pytest.raises(SpecError, match="image archive"):
        register(services, name=unique_tag(), kind="image", archive=str(bad))
    bad.unlink()
    with pytest.raises(SpecError, match="archive"):
        register(services, name=unique_tag(), kind="image", archive="relative/x.tar")
    with pytest.raises(SpecError, match="kind"):
        register(services, name=unique_tag(), kind="conda")
    with pytest.raises(SpecError, match="lock"):
        register(services, name=unique_tag(), kind="python", lock="torch>=2\n", build_queue="cpu")
    unbuilt = unique_tag()  # a build queue the project lacks: refused before anything is written
    with pytest.raises(SpecError, match="queue"):
        lock = f"gwtoy==1.0 --hash=sha256:{'0' * 64}\n"
        register(services, name=unbuilt, kind="python", lock=lock, build_queue="no-such-queue")
    with pytest.raises(NotFound):
        services.environments.catalog.get(PROJECT, unbuilt, principal=services.access.principal("tester"))
    with pytest.raises(SpecError, match="module"):
        register(services, name=unique_tag(), kind="modules", modules=["cuda; rm -rf /"])
    with pytest.raises(Forbidden):
        register(services, "watcher", name=unique_tag(), kind="modules", modules=["gcc/12"])
    with pytest.raises(NotFound):
        register(services, "outsider", name=unique_tag(), kind="modules", modules=["gcc/12"])

    name = unique_tag()
    m1, _ = register(services, name=name, kind="modules", modules=["gcc/12.2", "cuda/12.1"])
    m2, _ = register(services, name=name, kind="modules", modules=["gcc/12.2", "cuda/11.8", "nccl/2.18"])
    assert (m1.status, m2.number, m2.parent_id) == ("ready", 2, m1.id)
    assert m2.parent_diff["downgraded"] == [{"name": "cuda", "from": "12.1", "to": "11.8"}]
    assert m2.parent_diff["added"] == [{"name": "nccl", "version": "2.18"}]
    spec = build_spec(
        {"name": "mods", "project": PROJECT, "queue": "cpu", "command": ["true"], "environment": f"{name}@2"}
    )
    script = services.runs.preview(spec, principal=services.access.principal("tester"), run_id="r-preview")
    assert "module load gcc/12.2" in script.text and "module load nccl/2.18" in script.text
    with pytest.raises(NotFound):
        services.environments.catalog.get(PROJECT, name, principal=services.access.principal("outsider"))
    with pytest.raises(NotFound):
        submit(services, "other-project", ["true"], f"other/{name}@1")
