"""The dataset registry and the lineage spine, through the services, on real Slurm and both databases."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from gateway.adapters.files import scan
from gateway.core.lineage.manifest import manifest_digest
from gateway.core.runs.values import RunFilter
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.errors import Forbidden, NotFound, SpecError
from gateway.services.lineage.datasets import Registration
from tests.conftest import JOB_ROOT
from tests.service.conftest import OPERATOR, PROJECT, refresh_until, unique_tag

pytestmark = pytest.mark.slurm
TINY_LM = Path(__file__).resolve().parents[2] / "examples" / "tiny_lm"


@pytest.fixture
def data_dir() -> Path:
    """A copy of the tiny_lm data where jobs can read it."""
    path = JOB_ROOT / f"data-{unique_tag()}"
    shutil.copytree(TINY_LM / "data", path)
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def register(services, who, path: Path, name: str, project: str = PROJECT, **fields):
    result = scan(path)
    req = Registration(
        project=project,
        name=name,
        files=[e.to_dict() for e in result.entries],
        kind=result.kind,
        path=result.root,
        **fields,
    )
    return services.datasets.register(req, principal=services.access.principal(who))


def test_register_is_content_addressed_and_versions_diff(services, data_dir):
    name = unique_tag()
    v1, created = register(services, "tester", data_dir, name, description="tiny text", license="CC0")
    assert created and v1.number == 1 and v1.ref == f"{PROJECT}/{name}@1"
    assert v1.digest == manifest_digest(scan(data_dir).entries)
    assert (v1.file_count, v1.kind, v1.path, v1.source_uri) == (
        2,
        "directory",
        str(data_dir),
        f"file://{data_dir}",
    )
    again, created = register(services, "mia", data_dir, name)
    assert not created and again.id == v1.id, "unchanged content is the same version"
    moved_to = JOB_ROOT / f"data-{unique_tag()}"
    shutil.copytree(data_dir, moved_to)
    try:
        moved, created = register(services, "mia", moved_to, name)
        assert not created and moved.id == v1.id and moved.path == str(moved_to), (
            "the same content, read there now"
        )
        (event,) = services.audit.events(OPERATOR, target=v1.id, action="dataset.relocate").items
        assert event.before["path"] == str(data_dir) and event.after["path"] == str(moved_to)
        register(services, "mia", data_dir, name)  # and back
    finally:
        shutil.rmtree(moved_to)

    with (data_dir / "valid.txt").open("a") as fh:
        fh.write("one more line\n")
    v2, created = register(services, "tester", data_dir, name, parent=f"{name}@1", made_by_command="echo >>")
    assert created and v2.number == 2 and v2.parent_id == v1.id and v2.digest != v1.digest
    principal = services.access.principal("tester")
    a, b, diff = services.datasets.diff(PROJECT, name, "1", "latest", principal=principal)
    assert (a.id, b.id) == (v1.id, v2.id)
    assert [(old.path, new.path) for old, new in diff.changed] == [("valid.txt", "valid.txt")]
    assert (diff.added, diff.removed, diff.unchanged) == ([], [], 1)
    assert (
        services.datasets.version(PROJECT, name, "sha256:" + v2.digest[:10], principal=principal).id == v2.id
    )
    assert [p.id for p in services.datasets.parents(v2)] == [v1.id]
    files = services.datasets.files(v2)
    assert {f.path: f.sha256 for f in files}["valid.txt"] == hashlib.sha256(
        (data_dir / "valid.txt").read_bytes()
    ).hexdigest()
    events = services.audit.events(OPERATOR, target=v2.id).items
    assert events[0].action == "dataset.register" and events[0].after["version"] == 2


def test_registration_errors_say_what_is_valid(services, data_dir):
    tester = services.access.principal("tester")
    good = [e.to_dict() for e in scan(data_dir).entries]
    cases = [
        (Registration(PROJECT, "bad name!", good, path=str(data_dir)), "name"),
        (
            Registration(PROJECT, "ok", [{"path": "/etc/passwd", "size": 1, "sha256": "a" * 64}], path="/x"),
            "files",
        ),
        (Registration(PROJECT, "ok", good, kind="file", path=str(data_dir)), "exactly one entry"),
        (Registration(PROJECT, "ok", good, path="relative/dir"), "absolute"),
        (Registration(PROJECT, "ok", good, path=str(data_dir), parent="no such ref"), "not valid"),
    ]
    for req, expected in cases:
        with pytest.raises(SpecError, match=expected):
            services.datasets.register(req, principal=tester)
    with pytest.raises(NotFound):
        services.datasets.register(
            Registration(PROJECT, "x", good, path="/x"), principal=services.access.principal("outsider")
        )
    with pytest.raises(Forbidden, match="dataset.register"):
        services.datasets.register(
            Registration(PROJECT, "x", good, path="/x"), principal=services.access.principal("watcher")
        )


def test_access_follows_the_project_and_explicit_shares(services, data_dir):
    name = unique_tag()
    register(services, "tester", data_dir, name)
    outsider, mia = services.access.principal("outsider"), services.access.principal("mia")
    with pytest.raises(NotFound):
        services.datasets.get(PROJECT, name, principal=outsider)
    assert name not in [d.name for d in services.datasets.list(principal=outsider)]
    with pytest.raises(Forbidden, match="dataset.share"):
        services.datasets.share(PROJECT, name, "other", principal=mia, on=True)

    spec = build_spec(
        {
            "name": "reader",
            "project": "other",
            "queue": "cpu",
            "command": "true",
            "datasets": [f"{PROJECT}/{name}@latest"],
            "resources": {"mem_gb": 0.1},
        }
    )
    with pytest.raises(NotFound):
        services.runs.submit(spec, principal=outsider)

    shared = services.datasets.share(
        PROJECT, name, "other", principal=services.access.principal("tester"), on=True
    )
    assert shared.shared_with == ["other"]
    assert services.datasets.get(PROJECT, name, principal=outsider).id == shared.id
    assert name in [d.name for d in services.datasets.list(principal=outsider)]
    with pytest.raises(Forbidden):
        register(services, "outsider", data_dir, name)  # read-only for the other project
    run = services.runs.submit(spec, principal=outsider)
    assert [i.version.number for i in services.lineage.store.inputs(run.id)] == [1]
    services.runs.cancel(run.id, principal=outsider)

    services.datasets.share(PROJECT, name, "other", principal=services.access.principal("tester"), on=False)
    with pytest.raises(NotFound):
        services.datasets.get(PROJECT, name, principal=outsider)


def tiny_spec(name: str, tag: str, verify: str = "digest", version: str = "latest", **extra) -> dict:
    var = "GW_DATASET_" + name.upper().replace("-", "_")
    return {
        "name": "tiny-lm",
        "project": PROJECT,
        "queue": "cpu",
        "command": f'python3 {TINY_LM}/train.py --epochs 1 --data "${var}"',
        "datasets": [{"ref": f"{name}@{version}", "verify": verify}],
        "outputs": ["outputs/*"],
        "metrics": ["outputs/metrics.json", "outputs/metrics.jsonl"],
        "code": {
            "repo": "https://example.org/tiny.git",
            "commit": "0123456789abcdef0123456789abcdef01234567",
        },
        "params": {"epochs": 1, "seed": 3},
        "tags": [tag],
        "resources": {"mem_gb": 0.5, "walltime_min": 5},
        **extra,
    }


def test_a_run_reads_a_version_and_its_outputs_trace_back_to_it(services, principal, data_dir):
    name = unique_tag()
    v1, _ = register(services, "tester", data_dir, name)
    run = services.runs.submit(build_spec(tiny_spec(name, unique_tag())), principal=principal)
    assert run.code["commit"].startswith("0123456789") and run.environment["kind"] == "host"
    inputs = services.lineage.store.inputs(run.id)
    assert [(i.version.id, i.path, i.verify, i.env_var) for i in inputs] == [
        (v1.id, str(data_dir), "digest", f"GW_DATASET_{name.upper().replace('-', '_')}")
    ]
    assert "latest" not in json.dumps([i.version.ref for i in inputs]), "latest is recorded as a number"
    done = refresh_until(services, run.id)
    assert done.state is RunState.SUCCEEDED, services.runs.store.get_run(run.id).latest

    report = services.harvester.harvest_due()
    assert report.problems == []
    outputs = services.lineage.outputs(run.id, principal=principal)
    by_path = {a["path"]: a for a in outputs["artifacts"]}
    assert set(by_path) == {"outputs/model.json", "outputs/metrics.json", "outputs/metrics.jsonl"}
    model = Path(run.run_dir) / "outputs" / "model.json"
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    assert by_path["outputs/model.json"]["sha256"] == sha and by_path["outputs/model.json"]["attempt"] == 1
    assert outputs["metrics"]["val_loss"] > 0 and len(outputs["series"]["val_loss"]) == 1
    assert services.harvester.harvest_due().attempts == 0, "an attempt is harvested once"

    trace = services.lineage.trace_artifact(sha, principal=principal)
    (hit,) = [a for a in trace["artifacts"] if a["run"]["id"] == run.id]
    assert hit["artifact"]["job_id"] == done.latest.job_id
    assert hit["run"]["code"]["commit"] == run.code["commit"]
    assert hit["run"]["datasets"][0]["version"]["digest"] == v1.digest
    assert hit["run"]["script_sha256"] == hashlib.sha256(hit["run"]["script"].encode()).hexdigest()
    forward = services.lineage.trace_dataset(PROJECT, name, "1", principal=principal)
    assert [r["id"] for r in forward["runs"]] == [run.id]
    assert sha in [a["sha256"] for a in forward["runs"][0]["artifacts"]]
    with pytest.raises(NotFound):
        services.lineage.trace_artifact(sha, principal=services.access.principal("outsider"))

    # A second run on a changed version: compare shows the versions and the metrics differ.
    (data_dir / "train.txt").write_text((data_dir / "train.txt").read_text() + "the end of the story\n")
    v2, _ = register(services, "tester", data_dir, name)
    second = services.runs.submit(build_spec(tiny_spec(name, unique_tag())), principal=principal)
    assert refresh_until(services, second.id).state is RunState.SUCCEEDED
    services.harvester.harvest_due()
    compared = services.lineage.compare(run.id, second.id, principal=principal)
    (ds,) = compared["datasets"]
    assert not ds["same"] and ds["a"].startswith("v1") and ds["b"].startswith("v2")
    val_loss = next(m for m in compared["metrics"] if m["name"] == "val_loss")
    assert val_loss["a"] != val_loss["b"] and val_loss["delta"] is not None
    assert v2.number == 2


def test_files_changed_after_registration_fail_the_digest_preflight_as_data_access(
    services, principal, data_dir
):
    name = unique_tag()
    register(services, "tester", data_dir, name)
    (data_dir / "valid.txt").write_text("changed behind the registry's back\n")
    run = services.runs.submit(build_spec(tiny_spec(name, unique_tag(), version="1")), principal=principal)
    done = refresh_until(services, run.id)
    attempt = done.latest
    assert done.state is RunState.FAILED and attempt.exit_code == 80
    assert attempt.failure["class"] == "data_access"
    assert "digest mismatch" in attempt.failure["summary"] + json.dumps(attempt.failure["evidence"])
    steps = (Path(run.run_dir) / f"steps-{attempt.job_id}.jsonl").read_text()
    assert '"step":"inputs","status":"failed"' in steps and "user_command" not in steps

    # Only checking existence (verify: exists), the same version runs.
    loose = services.runs.submit(
        build_spec(tiny_spec(name, unique_tag(), verify="exists", version="1")), principal=principal
    )
    assert refresh_until(services, loose.id).state is RunState.SUCCEEDED

    # A file added to the directory is caught too (the manifest counts the files).
    register(services, "tester", data_dir, name)  # v2: the changed content
    (data_dir / "extra.txt").write_text("new file\n")
    added = services.runs.submit(build_spec(tiny_spec(name, unique_tag(), version="2")), principal=principal)
    failed = refresh_until(services, added.id)
    assert failed.state is RunState.FAILED and failed.latest.failure["class"] == "data_access"


def test_unknown_versions_and_references_are_refused_before_anything_is_written(
    services, principal, data_dir
):
    name = unique_tag()
    register(services, "tester", data_dir, name)
    before = services.runs.list(principal=principal, where=RunFilter(limit=1000)).items
    with pytest.raises(NotFound, match="has no version 9"):
        services.runs.submit(build_spec(tiny_spec(name, unique_tag(), version="9")), principal=principal)
    with pytest.raises(NotFound):
        services.runs.submit(build_spec(tiny_spec("no-such-dataset", unique_tag())), principal=principal)
    with pytest.raises(SpecError, match="not valid"):
        build_spec(tiny_spec(name, unique_tag(), version="nope"))
    assert len(services.runs.list(principal=principal, where=RunFilter(limit=1000)).items) == len(before)
