"""The alias policy's advisory rule (issue 30, item 4) on the real cluster and both databases: "no known
advisory of severity S or worse in the training environment". The environments are locked venvs built
by Slurm jobs (gwtoy 1.0, which the tests' OSV directory says has a CRITICAL advisory; gwtoy 2.0, which
has none); the releases' runs are store-written ended runs recording that they ran in them
(``registry_world.ended_run``), so the move is decided on the real environment versions and scan."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from gateway.api import create_app
from gateway.errors import Conflict, SpecError
from gateway.services.envs.registry import EnvRegistration
from tests.envs_world import lock_text, wheel
from tests.service.conftest import PROJECT, refresh_until, unique_tag
from tests.service.registry_world import ended_run

pytestmark = pytest.mark.slurm

FINDING = "GHSA-gwt0-0000-0001 (CRITICAL) in gwtoy 1.0"


@pytest.fixture(scope="module")
def world(services):
    lead = services.access.principal("tester", source="pytest")
    name = unique_tag()
    locks = {
        "bad": lock_text(wheel("gwtoy", "1.0"), comment=f"{name}-bad"),
        "clean": lock_text(wheel("gwtoy", "2.0"), comment=f"{name}-clean"),
    }
    versions = {}
    for label, lock in locks.items():
        req = EnvRegistration(
            project=PROJECT, name=f"{name}-{label}", kind="python", lock=lock, build_queue="cpu"
        )
        versions[label] = services.environments.register(req, principal=lead)[0]
    for label, version in versions.items():
        refresh_until(services, version.build_run_id, timeout_s=150.0)
        versions[label] = services.environments.catalog.resolve(version.ref, project=PROJECT, principal=lead)
        assert versions[label].status == "ready", versions[label].failure
    model = f"adv{uuid.uuid4().hex[:6]}"
    services.releases.register_model(PROJECT, model, principal=lead, description="advisory rule")
    runs = {}
    for number, label in enumerate(("bad", "clean", None), start=1):
        v = versions.get(label) if label else None
        record = {"ref": v.ref, "version_id": v.id, "kind": "python"} if v else None
        run_id, sha = ended_run(services, PROJECT, environment=record)
        release = services.releases.create_release(PROJECT, model, sha, principal=lead, notes=str(label))
        assert release.version == number
        runs[label] = run_id
    return {"lead": lead, "model": model, "versions": versions, "runs": runs}


def test_a_critical_advisory_refuses_the_move_naming_it_and_a_lead_may_override(services, world):
    lead, model, bad = world["lead"], world["model"], world["versions"]["bad"]
    mia = services.access.principal("mia", source="pytest")
    policy = services.alias_policies.set_policy(
        PROJECT, model, "prod", principal=lead, advisory_severity="critical"
    )
    assert policy.advisory_severity == "CRITICAL" and policy.as_dict()["advisory_severity"] == "CRITICAL"

    # what the check (gw release check, the promote page) shows before the move
    preview = services.promotions.preview(PROJECT, model, 1, "prod", principal=mia)
    assert not preview.ok and preview.gate_failed and not preview.may_override  # mia is a member
    assert preview.advisory is not None and preview.advisory.environment == bad.ref
    assert preview.advisory.findings == (("GHSA-gwt0-0000-0001", "CRITICAL", "gwtoy", "1.0"),)
    (missing,) = preview.missing
    assert FINDING in missing and bad.ref in missing and "CRITICAL or worse" in missing

    with pytest.raises(Conflict) as refused:
        services.promotions.promote(PROJECT, model, 1, "prod", principal=mia)
    assert FINDING in str(refused.value) and "--override --reason" in str(refused.value)
    with pytest.raises(SpecError, match="reason"):
        services.promotions.promote(PROJECT, model, 1, "prod", principal=lead, override=True)
    move = services.promotions.promote(
        PROJECT, model, 1, "prod", principal=lead, override=True, reason="patched in the image; CVE triaged"
    )
    assert move.override
    audit = services.audit.events(lead, project=PROJECT, action="release.override").items[-1]
    assert audit.after["release"] == f"{PROJECT}/{model}@1" and any(
        FINDING in m for m in audit.after["missing"]
    )
    assert audit.after["advisories"]["findings"] == [["GHSA-gwt0-0000-0001", "CRITICAL", "gwtoy", "1.0"]]

    # a release trained in the clean environment moves; so does one whose run named no environment
    clean = services.promotions.preview(PROJECT, model, 2, "prod", principal=mia)
    assert clean.ok and clean.advisory.findings == () and clean.advisory.environment.endswith("-clean@1")
    services.promotions.promote(PROJECT, model, 2, "prod", principal=mia)
    bare = services.promotions.preview(PROJECT, model, 3, "prod", principal=mia)
    assert bare.ok and bare.advisory.environment is None and bare.advisory.unchecked is None

    # the rule also counts at HIGH (CRITICAL is worse); a policy without it does not look
    services.alias_policies.set_policy(PROJECT, model, "canary", principal=lead, advisory_severity="HIGH")
    assert FINDING in services.promotions.preview(PROJECT, model, 1, "canary", principal=mia).missing[0]
    services.alias_policies.set_policy(PROJECT, model, "canary", principal=lead)
    plain = services.promotions.preview(PROJECT, model, 1, "canary", principal=mia)
    assert plain.ok and plain.advisory is None


def test_more_than_the_advisory_missing_cannot_be_overridden_and_bad_severities_are_named(services, world):
    lead, model = world["lead"], world["model"]
    services.alias_policies.set_policy(
        PROJECT, model, "gold", principal=lead, roles=["lead"], advisory_severity="CRITICAL"
    )
    mia = services.access.principal("mia", source="pytest")
    preview = services.promotions.preview(PROJECT, model, 1, "gold", principal=mia)
    assert len(preview.missing) == 2 and not preview.gate_failed  # mia's role too: no override for that
    with pytest.raises(SpecError) as bad:
        services.alias_policies.set_policy(PROJECT, model, "gold", principal=lead, advisory_severity="SEVERE")
    assert "advisory_severity" in str(bad.value) and "LOW, MODERATE, HIGH, CRITICAL" in str(bad.value)


def test_the_rule_through_the_api(services, tokens, world):
    model = world["model"]
    with TestClient(create_app(services=services)) as client:
        as_lead = {"Authorization": f"Bearer {tokens['tester']}"}
        put = client.put(
            f"/models/{PROJECT}/{model}/policies/api-adv",
            json={"roles": ["member"], "advisory_severity": "CRITICAL"},
            headers=as_lead,
        )
        assert put.status_code == 200, put.text
        assert put.json()["advisory_severity"] == "CRITICAL"
        wrong = client.put(
            f"/models/{PROJECT}/{model}/policies/api-adv",
            json={"roles": ["member"], "advisory_severity": "severe"},
            headers=as_lead,
        )
        assert wrong.status_code == 422 and "advisory_severity" in wrong.text
        check = client.get(
            f"/models/{PROJECT}/{model}/aliases/api-adv/check", params={"version": 1}, headers=as_lead
        ).json()
        assert check["ok"] is False and check["gate_failed"] is True and check["may_override"] is True
        assert check["advisories"]["findings"] == [
            {"advisory": "GHSA-gwt0-0000-0001", "severity": "CRITICAL", "package": "gwtoy", "version": "1.0"}
        ]
        assert any(FINDING in m for m in check["missing"])
        refused = client.post(
            f"/models/{PROJECT}/{model}/aliases/api-adv", json={"version": 1}, headers=as_lead
        )
        assert refused.status_code == 409 and FINDING in refused.text
