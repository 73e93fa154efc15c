"""The model registry without Slurm: alias history at past times, policies, approvals, overrides, bad input.

Runs are written straight to the store and ended there (``registry_world``); the scenario with real
jobs, evaluations and gates is tests/service/test_release_scenario.py. Both database backends.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from gateway.adapters.files import scan
from gateway.core.evidence.bundle import unzip_bytes, verify_files, zip_bytes
from gateway.core.slurm.states import RunState
from gateway.errors import Conflict, Forbidden, NotFound, SpecError
from gateway.services.lineage.datasets import Registration
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.eval_world import DATA, suite_data
from tests.service.registry_world import add_project, ended_run, principals


@pytest.fixture(scope="module")
def world(database_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("registry")
    services = build_services(
        Settings(database_url=database_url, runs_dir=tmp / "runs", audit_anchor_path=tmp / "anchors.jsonl")
    )
    project = f"reg{uuid.uuid4().hex[:8]}"
    add_project(services, project)
    yield services, project, principals(project)
    services.close()


def model_with_releases(services, project, who, n: int):
    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"], description="tiny")
    shas = []
    for _ in range(n):
        _, sha = ended_run(services, project)
        services.releases.create_release(project, name, sha, principal=who["member"], notes="n")
        shas.append(sha)
    return name, shas


def test_alias_history_answers_what_was_true_at_each_past_time(world):
    services, project, who = world
    name, _ = model_with_releases(services, project, who, 3)
    lead = who["lead"]
    times = [datetime.now(UTC)]
    for version in (1, 2, 3, 1):  # prod: 1, then 2, then 3, then back to 1
        time.sleep(0.02)
        services.promotions.promote(project, name, version, "prod", principal=lead, reason=f"to {version}")
        time.sleep(0.02)
        times.append(datetime.now(UTC))
    services.promotions.promote(project, name, 3, "candidate", principal=who["member"])
    expected = [None, 1, 2, 3, 1]
    for at, version in zip(times, expected, strict=True):
        found = services.promotions.history(project, name, principal=who["viewer"], alias="prod", at=at)
        (state,) = found["at_time"]
        assert (state.release.version if state.release else None) == version, (at, version)
    found = services.promotions.history(project, name, principal=who["viewer"], alias="prod")
    moves = [(e.from_version, e.to_version, e.actor) for e in found["events"]]
    assert moves == [(None, 1, lead.user), (1, 2, lead.user), (2, 3, lead.user), (3, 1, lead.user)]
    assert [e.seq for e in found["events"]] == [1, 2, 3, 4]
    now = {s.alias: s.release.version for s in services.promotions.aliases(project, name, principal=lead)}
    assert now == {"prod": 1, "candidate": 3}
    between = services.promotions.aliases(project, name, principal=lead, at=times[2])
    assert {s.alias: s.release.version for s in between} == {"prod": 2}  # candidate did not exist yet
    with pytest.raises(Conflict, match="points at .* already"):
        services.promotions.promote(project, name, 1, "prod", principal=lead)
    events = services.audit.events(lead, project=project, action="alias.move").items
    assert [e.after["to_version"] for e in events if e.after["release"].startswith(f"{project}/{name}@")] == [
        1,
        2,
        3,
        1,
        3,
    ]


def test_a_protected_alias_needs_approval_by_someone_other_than_the_requester(world):
    services, project, who = world
    name, _ = model_with_releases(services, project, who, 1)
    services.alias_policies.set_policy(
        project, name, "prod", principal=who["lead"], roles=["lead"], approvals=1
    )
    with pytest.raises(Forbidden):
        services.alias_policies.set_policy(project, name, "prod", principal=who["member"], approvals=0)
    with pytest.raises(Conflict) as refused:
        services.promotions.promote(project, name, 1, "prod", principal=who["member"])
    assert "may not move prod: it needs lead" in str(refused.value) and "1 approval(s)" in str(refused.value)
    with pytest.raises(Conflict, match=r"1 approval\(s\) by someone other than the requester; 0 given"):
        services.promotions.promote(project, name, 1, "prod", principal=who["lead"])
    request = services.promotions.request(project, name, 1, "prod", principal=who["lead"], reason="ship it")
    with pytest.raises(Forbidden, match="must come from someone else"):
        services.promotions.decide(request.id, "approve", principal=who["lead"])
    for nobody in ("member", "viewer"):
        with pytest.raises(Forbidden):
            services.promotions.decide(request.id, "approve", principal=who[nobody])
    with pytest.raises(NotFound):
        services.promotions.decide(request.id, "approve", principal=who["outsider"])
    decided = services.promotions.decide(request.id, "approve", principal=who["reviewer"], note="looked")
    assert decided.status == "approved" and decided.approvers() == [who["reviewer"].user]
    move = services.promotions.promote(project, name, 1, "prod", principal=who["lead"], reason="approved")
    assert move.approvals == (who["reviewer"].user,) and move.request_id == request.id
    assert move.policy == {
        "scope": "model",
        "alias": "prod",
        "roles": ["lead"],
        "approvals": 1,
        "gate_suite": None,
    }
    assert services.promotions.get_request(request.id, principal=who["viewer"]).status == "promoted"
    actions = [e.action for e in services.audit.events(who["lead"], project=project).items]
    assert {"release.policy", "release.request", "release.approve", "alias.move"} <= set(actions)


def test_a_rejected_request_cannot_promote_and_project_defaults_apply(world):
    services, project, who = world
    name, _ = model_with_releases(services, project, who, 1)
    services.alias_policies.set_policy(project, None, "staging", principal=who["lead"], approvals=1)
    request = services.promotions.request(project, name, 1, "staging", principal=who["member"])
    rejected = services.promotions.decide(request.id, "reject", principal=who["lead2"], note="not yet")
    assert rejected.status == "rejected" and rejected.rejected_by() == [who["lead2"].user]
    with pytest.raises(Conflict, match="0 given"):
        services.promotions.promote(project, name, 1, "staging", principal=who["member"])
    with pytest.raises(Conflict, match="is rejected"):
        services.promotions.promote(
            project, name, 1, "staging", principal=who["member"], request_id=request.id
        )


def test_a_missing_gate_is_refused_and_overridden_only_with_a_reason_on_record(world):
    services, project, who = world
    lead = who["lead"]
    dataset = f"cloze-{uuid.uuid4().hex[:6]}"
    files = [e.to_dict() for e in scan(DATA).entries]
    services.datasets.register(Registration(project, dataset, files, path=str(DATA)), principal=lead)
    data = suite_data(dataset, f"suite-{dataset}") | {"project": project}
    suite = services.eval_suites.register(data, principal=lead)[0]
    name, shas = model_with_releases(services, project, who, 1)
    services.alias_policies.set_policy(
        project, name, "prod", principal=lead, roles=["member"], gate_suite=f"{project}/{suite.name}"
    )
    with pytest.raises(Conflict, match=r"no eval result of \S+@1 on the release's artifact") as refused:
        services.promotions.promote(project, name, 1, "prod", principal=who["member"])
    assert "--override --reason" in str(refused.value)
    with pytest.raises(SpecError, match="reason"):
        services.promotions.promote(project, name, 1, "prod", principal=lead, override=True)
    with pytest.raises(Forbidden):
        services.promotions.promote(
            project, name, 1, "prod", principal=who["member"], override=True, reason="x"
        )
    move = services.promotions.promote(
        project, name, 1, "prod", principal=lead, override=True, reason="gate infra down; signed off by QA"
    )
    assert move.override and move.gate_id is None
    events = services.audit.events(lead, project=project, action="release.override").items
    assert events[-1].after["move"] == move.id and events[-1].after["reason"].startswith("gate infra down")
    history = services.promotions.history(project, name, principal=who["viewer"], alias="prod")
    assert [e.override for e in history["events"]] == [True]
    trace = services.promotions.artifact_releases(shas[0], principal=who["viewer"])
    (release,) = trace["releases"]
    assert release["aliases"][0]["alias"] == "prod" and release["alias_events"][0]["override"]
    bundle = services.evidence.bundle(f"{project}/{name}@1", principal=lead)
    assert verify_files(bundle.files).ok
    text = bundle.files["evidence.json"].decode()
    assert '"override": true' in text and "release.override" in text and "gate infra down" in text
    assert "override" in bundle.files["index.html"].decode()
    with pytest.raises(SpecError, match="nothing to override"):
        services.alias_policies.set_policy(project, name, "canary", principal=lead)
        services.promotions.promote(project, name, 1, "canary", principal=lead, override=True, reason="x")


def test_bundles_redact_and_verify_fails_after_one_byte_changes(world):
    services, project, who = world
    name, shas = model_with_releases(services, project, who, 1)
    services.promotions.promote(project, name, 1, "prod", principal=who["lead"], reason="first")
    bundle = services.evidence.bundle(f"{project}/{name}@1", principal=who["lead"], redacted=True)
    blob = b"".join(bundle.files.values()).decode()
    for secret in (who["lead"].user, who["member"].user, "trainer", "/tmp/r-", "pytest"):
        assert secret not in blob, secret
    assert '"applied": true' in blob and "<user-" in blob
    packed = zip_bytes(bundle.files)
    assert verify_files(unzip_bytes(packed)).ok
    for name_ in bundle.files:
        changed = dict(bundle.files)
        data = bytearray(changed[name_])
        data[len(data) // 2] ^= 0x01
        changed[name_] = bytes(data)
        assert not verify_files(changed).ok, name_
    broken = bytearray(packed)
    broken[len(broken) // 3] ^= 0x01
    with pytest.raises(ValueError):
        assert not verify_files(unzip_bytes(bytes(broken))).ok
        raise ValueError("the changed archive still read, and verify failed")
    assert services.evidence.bundle(shas[0], principal=who["viewer"]).subject == shas[0]
    with pytest.raises(NotFound):
        services.evidence.bundle(shas[0], principal=who["outsider"])


def test_bad_input_gets_clear_errors(world):
    services, project, who = world
    member = who["member"]
    with pytest.raises(SpecError, match="name"):
        services.releases.register_model(project, "bad name!", principal=member)
    name, _ = model_with_releases(services, project, who, 1)
    with pytest.raises(Conflict, match="exists already"):
        services.releases.register_model(project, name, principal=member)
    with pytest.raises(SpecError, match="64 hex digits"):
        services.releases.create_release(project, name, "abc", principal=member)
    with pytest.raises(NotFound, match="no artifact with sha256"):
        services.releases.create_release(project, name, "0" * 64, principal=member)
    _, failed_sha = ended_run(services, project, state=RunState.FAILED)
    with pytest.raises(Conflict, match="did not succeed"):
        services.releases.create_release(project, name, failed_sha, principal=member)
    with pytest.raises(Forbidden):
        services.releases.create_release(project, name, failed_sha, principal=who["viewer"])
    with pytest.raises(NotFound):
        services.releases.release(project, name, 9, principal=member)
    for alias in ("Prod", "p rod", "x" * 40, "1st"):
        with pytest.raises(SpecError, match="alias"):
            services.promotions.promote(project, name, 1, alias, principal=member)
    with pytest.raises(SpecError, match="roles"):
        services.alias_policies.set_policy(project, name, "prod", principal=who["lead"], roles=["boss"])
    with pytest.raises(SpecError, match="approvals"):
        services.alias_policies.set_policy(project, name, "prod", principal=who["lead"], approvals=99)
    with pytest.raises(SpecError, match="no such eval suite"):
        services.alias_policies.set_policy(project, name, "prod", principal=who["lead"], gate_suite="a/b")
    with pytest.raises(SpecError, match="reason"):
        services.releases.set_status(project, name, 1, "withdrawn", reason=" ", principal=who["lead"])
    with pytest.raises(SpecError, match="status"):
        services.releases.set_status(project, name, 1, "gone", reason="x", principal=who["lead"])
    withdrawn = services.releases.set_status(
        project, name, 1, "withdrawn", reason="leaks", principal=who["lead"]
    )
    assert withdrawn.status == "withdrawn" and withdrawn.status_events[-1].reason == "leaks"
    with pytest.raises(Conflict, match="withdrawn"):
        services.promotions.promote(project, name, 1, "prod", principal=member)
    with pytest.raises(SpecError, match="evidence target"):
        services.evidence.bundle("nonsense", principal=member)
    assert (
        services.promotions.history(project, name, principal=member, at=datetime.now(UTC) - timedelta(1))[
            "at_time"
        ]
        == []
    )


def test_a_move_is_checked_before_it_is_made_with_what_it_counts_and_misses(world):
    """``PromotionService.preview`` and ``GET /models/{p}/{n}/aliases/{alias}/check``: the same checks as
    the move, nothing moved; viewers may not check (they may not move)."""
    from fastapi.testclient import TestClient

    from gateway.api import create_app
    from gateway.core.access.values import Principal

    services, project, who = world
    name, _ = model_with_releases(services, project, who, 1)
    services.alias_policies.set_policy(project, name, "prod", principal=who["lead"], approvals=1)
    before = services.promotions.preview(project, name, 1, "prod", principal=who["member"])
    assert not before.ok and before.missing and "approval" in before.missing[0] and not before.gate_failed
    assert services.promotions.history(project, name, principal=who["viewer"], alias="prod")["events"] == []
    request = services.promotions.request(project, name, 1, "prod", principal=who["member"])
    services.promotions.decide(request.id, "approve", principal=who["lead2"], note="ok")
    after = services.promotions.preview(project, name, 1, "prod", principal=who["member"])
    assert after.ok and after.approvers == (who["lead2"].user,) and after.request is not None
    with pytest.raises(Forbidden):
        services.promotions.preview(project, name, 1, "prod", principal=who["viewer"])
    token = services.auth.issue_token(Principal.operator(), who["member"].user, name="pytest")[0]
    with TestClient(create_app(services=services)) as client:
        path = f"/models/{project}/{name}/aliases/prod/check"
        answer = client.get(path, params={"version": 1}, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["ok"] and body["approvals"] == [who["lead2"].user] and body["policy"]["approvals"] == 1
        assert body["request_id"] == request.id and body["missing"] == [] and not body["already"]
        bad = client.get(path, params={"version": 0}, headers={"Authorization": f"Bearer {token}"})
        assert bad.status_code == 422
    services.promotions.promote(project, name, 1, "prod", principal=who["member"])
    assert services.promotions.preview(project, name, 1, "prod", principal=who["member"]).already
