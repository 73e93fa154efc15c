"""Acceptance scenarios 1 and 5 on the real cluster, as users type them: train, evaluate, release,
protect, approve, promote; then from the model file alone back to everything; a redacted bundle;
and a release whose gate failed, promoted only by an override on record.

The training run is a real tiny_lm job on the cpu queue, submitted with `gw submit` from this
repository (so its commit is recorded) and reading a registered dataset version; its evaluation is
the eval world's suite run through real lm-eval (tests/service/eval_world.py). The API is the
gateway's app under uvicorn over this session's services; the background cycle runs here.
"""

from __future__ import annotations

import json
import re
import time
import zipfile
from pathlib import Path

import pytest

from gateway.adapters.files import scan
from gateway.services.eval.runs import ArtifactChoice
from gateway.services.lineage.datasets import Registration
from tests.service.conftest import PROJECT, unique_tag
from tests.service.eval_world import ROOT, cycle, settle
from tests.service.test_cli_evals import gw, ok, url  # noqa: F401 - the module's fixtures

pytestmark = pytest.mark.slurm
TRAIN_DATA = ROOT / "examples" / "tiny_lm" / "data"


def env_name(dataset: str) -> str:
    return "GW_DATASET_" + re.sub(r"[^A-Z0-9]", "_", dataset.upper())


@pytest.fixture(scope="module")
def trained(services, principal, eval_world, gw, tmp_path_factory):  # noqa: F811
    """A tiny_lm model trained by `gw submit` on a registered dataset version, evaluated, gated (pass)."""
    tag = unique_tag()
    dataset = f"text-{tag}"
    files = [e.to_dict() for e in scan(TRAIN_DATA).entries]
    version = services.datasets.register(
        Registration(PROJECT, dataset, files, path=str(TRAIN_DATA)), principal=principal
    )[0]
    spec = tmp_path_factory.mktemp("spec") / "train.json"
    spec.write_text(
        json.dumps(
            {
                "name": "tiny-lm-release",
                "project": PROJECT,
                "queue": "cpu",
                "command": "python3 examples/tiny_lm/train.py --order 4 --epochs 3 "
                f'--data "${env_name(dataset)}"',
                "datasets": [f"{dataset}@latest"],
                "outputs": ["outputs/*"],
                "tags": [tag],
                "resources": {"mem_gb": 0.5, "walltime_min": 5},
            }
        )
    )
    out = ok(gw("submit", str(spec), cwd=str(ROOT)))
    run_id = next(w for w in out.split() if w.startswith("r-"))
    settle(services, [run_id], cycles=True)
    deadline = time.monotonic() + 60
    while not (arts := {a.path: a.sha256 for a in services.lineage.store.artifacts(run_id)}):
        assert time.monotonic() < deadline, services.runs.store.get_run(run_id).latest
        cycle(services)
        time.sleep(0.5)
    sha = arts["outputs/model.json"]
    suite = eval_world.suites["v1"]
    # Its own eval run, always: training is deterministic, so the same content may already have a
    # result of this suite in the shared eval world, and the review below must not land on one that
    # other test files gate as unreviewed (test_evals.py).
    started = services.evals.start(suite.ref, ArtifactChoice(sha256=sha), principal=principal).eval_run
    deadline = time.monotonic() + 240
    while (found := services.evals.store.eval_run(started.id)).status == "pending":
        assert time.monotonic() < deadline, "the eval run did not settle"
        cycle(services)
        time.sleep(0.5)
    done = [found]
    result = done[0].result_id
    rita = services.access.principal("rita", source="pytest")
    services.reviews.record(result, verdict="approve", principal=rita, notes="read twenty endings")
    gate = services.gates.gate(result, principal=principal, baseline_id=result)
    assert gate.verdict == "pass", gate.decision["reasons"]
    run = services.runs.store.get_run(run_id)
    return {
        "run": run,
        "sha": sha,
        "file": Path(run.run_dir) / "outputs" / "model.json",
        "digest": version.digest,
        "result": result,
        "gate": gate.id,
        "suite": f"{PROJECT}/{suite.name}",
        "model": f"{PROJECT}/tiny-lm-{tag}",
    }


def test_release_protected_prod_approved_by_a_second_user_then_traced_from_the_file(gw, trained, tmp_path):  # noqa: F811
    model, suite = trained["model"], trained["suite"]
    ok(gw("model", "create", model, "--description", "scenario 1+5"))
    ok(
        gw(
            "release",
            "policy",
            model,
            "--alias",
            "prod",
            "--role",
            "lead",
            "--approvals",
            "1",
            "--gate-suite",
            suite,
            "--gate-version",
            "1",
        )
    )
    created = ok(
        gw(
            "release",
            "create",
            model,
            "--artifact",
            str(trained["file"]),
            "--run",
            trained["run"].id,
            "--notes",
            "first cut",
        )
    )
    assert f"created release {model}@1" in created
    request = json.loads(ok(gw("release", "request-promotion", f"{model}@1", "--alias", "prod", "--json")))
    refused = gw("release", "promote", f"{model}@1", "--alias", "prod")
    assert refused.returncode == 5, refused
    assert "1 approval(s) by someone other than the requester; 0 given" in refused.stderr
    # the same checks before the move, in words and as JSON (gw release check): nothing moves
    checked = ok(gw("release", "check", f"{model}@1", "--alias", "prod"))
    assert "would be refused" in checked and "missing: 1 approval(s)" in checked and "gate:" in checked
    as_json = json.loads(ok(gw("release", "check", f"{model}@1", "--alias", "prod", "--json")))
    assert not as_json["ok"] and as_json["gate_verdict"] == "pass" and as_json["policy"]["approvals"] == 1
    own = gw("release", "approve", request["id"])
    assert own.returncode == 77 and "someone else" in own.stderr
    assert gw("release", "approve", request["id"], user="mia").returncode == 77  # a member may not approve
    approved = json.loads(
        ok(gw("release", "approve", request["id"], "--note", "gate and reviews ok", "--json", user="rita"))
    )
    assert approved["status"] == "approved" and approved["approvers"] == ["rita"]
    assert json.loads(ok(gw("release", "check", f"{model}@1", "--alias", "prod", "--json")))["ok"]
    moved = json.loads(
        ok(gw("release", "promote", f"{model}@1", "--alias", "prod", "--reason", "go", "--json"))
    )
    assert moved["approvals"] == ["rita"] and not moved["override"]
    # the gate that counted is the gateway's own, made for this move (not the one gated above)
    counted = json.loads(ok(gw("eval", "show", moved["gate_id"], "--json")))
    assert moved["gate_id"] != trained["gate"] and counted["verdict"] == "pass"
    assert counted["decided_by"] == "gateway" and counted["candidate_id"] == trained["result"]
    assert counted["made_for"]["alias"] == "prod" and counted["made_for"]["baseline_release"] is None

    # scenario 5: the model file alone, traced back
    traced = json.loads(ok(gw("trace", str(trained["file"]), "--json")))
    (ours,) = [a["run"] for a in traced["artifacts"] if a["run"]["id"] == trained["run"].id]
    assert [d["version"]["digest"] for d in ours["datasets"] if d["version"]] == [trained["digest"]]
    assert ours["code"]["commit"] and re.fullmatch(r"[0-9a-f]{40}", ours["code"]["commit"])
    evaluations = traced["evaluations"]
    assert trained["result"] in {e["result"]["id"] for e in evaluations["eval_runs"] if e["result"]}
    assert {g["id"]: g["verdict"] for g in evaluations["gates"]}[trained["gate"]] == "pass"
    (release,) = [r for r in traced["releases"]["releases"] if r["ref"] == f"{model}@1"]
    assert release["aliases"][0]["alias"] == "prod" and release["aliases"][0]["move"]["approvals"] == ["rita"]
    text = ok(gw("trace", str(trained["file"])))
    assert f"release {model}@1" in text and "prod since" in text and "approved by rita" in text
    assert trained["run"].id in text and trained["digest"][:12] in text
    unknown = gw("trace", "f" * 64)
    assert unknown.returncode == 4 and "no artifact or dataset file with sha256" in unknown.stderr

    # a redacted bundle: no user name, home path or token; verify fails after one byte changes
    out = tmp_path / "bundle.zip"
    ok(gw("evidence", f"{model}@1", "--redact", "-o", str(out)))
    with zipfile.ZipFile(out) as archive:
        blob = b"".join(archive.read(n) for n in archive.namelist()).decode()
    for user in ("tester", "rita", "mia"):  # as words: "rita" is in "writable"
        assert not re.search(rf"(?<![A-Za-z0-9_.-]){user}(?![A-Za-z0-9_-])", blob), user
    for secret in ("/root", "/home/", "gwt_", str(ROOT)):
        assert secret not in blob, secret
    assert "<user-" in blob and "<path-" in blob and trained["sha"] in blob and trained["gate"] in blob
    assert ok(gw("evidence", "verify", str(out))).startswith("OK")
    data = bytearray(out.read_bytes())
    data[len(data) // 2] ^= 0x20
    out.write_bytes(bytes(data))
    failed = gw("evidence", "verify", str(out))
    assert failed.returncode == 1 and "FAILED" in failed.stderr
    folder = tmp_path / "bundle"
    ok(gw("evidence", f"{model}@1", "-o", str(folder)))
    assert ok(gw("evidence", "verify", str(folder))).startswith("OK")
    page = (folder / "index.html").read_text()
    assert "http://" not in page and "https://" not in page and "<script" not in page
    evidence = json.loads((folder / "evidence.json").read_text())
    assert evidence["schema"] == "gateway.evidence" and evidence["schema_version"] == 1
    assert {"alias.move", "release.approve", "release.create"} <= {
        e["action"] for e in evidence["audit"]["events"]
    }
    raw = bytearray((folder / "evidence.json").read_bytes())
    raw[10] ^= 0x01
    (folder / "evidence.json").write_bytes(bytes(raw))
    failed = gw("evidence", "verify", str(folder))
    assert failed.returncode == 1 and "evidence.json" in failed.stderr


def test_a_failed_gate_blocks_promotion_and_the_override_is_on_record(
    services,
    principal,
    eval_world,
    gw,  # noqa: F811
    trained,
):
    world = eval_world
    gate = services.gates.gate(
        world.results["weak"], principal=principal, baseline_id=world.results["strong"]
    )
    assert gate.verdict == "fail"
    model = f"{PROJECT}/weak-{unique_tag()}"
    ok(gw("model", "create", model))
    ok(
        gw(
            "release",
            "policy",
            model,
            "--alias",
            "staging",
            "--role",
            "lead",
            "--gate-suite",
            trained["suite"],
            "--gate-version",
            "1",
            "--gate-baseline",
            "prod",
        )
    )
    # release 1, the strong model, is prod (unprotected here); release 2, the weak one, is compared with it
    ok(
        gw(
            "release",
            "create",
            model,
            "--artifact",
            world.artifacts["strong"],
            "--run",
            world.training["strong"],
        )
    )
    ok(gw("release", "promote", f"{model}@1", "--alias", "prod"))
    ok(gw("release", "create", model, "--artifact", world.artifacts["weak"], "--run", world.training["weak"]))
    refused = gw("release", "promote", f"{model}@2", "--alias", "staging")
    assert refused.returncode == 5 and f"against {model}@1 (prod now) is fail" in refused.stderr
    assert "--override --reason" in refused.stderr
    assert gw("release", "promote", f"{model}@2", "--alias", "staging", "--override").returncode == 2
    by_member = gw(
        "release", "promote", f"{model}@2", "--alias", "staging", "--override", "--reason", "x", user="mia"
    )
    # a member may not move staging at all: an override stands in for the gate only, never for a role
    assert by_member.returncode == 5
    assert "more is missing" in by_member.stderr and "needs lead" in by_member.stderr
    moved = json.loads(
        ok(
            gw(
                "release",
                "promote",
                f"{model}@2",
                "--alias",
                "staging",
                "--override",
                "--reason",
                "known regression, accepted for the demo",
                "--json",
            )
        )
    )
    counted = services.gates.gate_record(moved["gate_id"], principal=principal)
    # the baseline is the newest v1 result on prod's artifact: the world's strong result, or the one this
    # file's trained model made (training is deterministic: its content may be the strong model's)
    baseline = services.gates.result(counted.baseline_id, principal=principal)
    assert (
        moved["override"]
        and counted.verdict == "fail"
        and baseline.artifact_sha256 == world.artifacts["strong"]
    )
    assert (
        counted.made_for["baseline_release"] == f"{model}@1" and counted.candidate_id == world.results["weak"]
    )
    history = ok(gw("release", "history", model, "--alias", "staging"))
    assert "OVERRIDE" in history and "known regression" in history
    shown = ok(gw("release", "show", f"{model}@2"))
    assert "override" in shown
    audit = services.audit.events(principal, project=PROJECT, action="release.override").items
    assert audit[-1].after["move"] == moved["id"] and audit[-1].after["gate_verdict"] == "fail"
    bundle = services.evidence.bundle(f"{model}@2", principal=principal)
    doc = json.loads(bundle.files["evidence.json"])
    assert doc["alias_events"][0]["override"] and "release.override" in {
        e["action"] for e in doc["audit"]["events"]
    }
    assert "OVERRIDE" in bundle.files["index.html"].decode().upper()
