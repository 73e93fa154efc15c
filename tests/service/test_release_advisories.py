"""The alias policy's advisory rule (issue 30, item 4) on the real cluster and both databases: "no known
advisory of severity S or worse in the training environment". The environments are locked venvs built
by Slurm jobs (gwtoy 1.0, which the tests' OSV directory says has a CRITICAL advisory; gwtoy 2.0, which
has none); the releases' runs are store-written ended runs recording that they ran in them
(``registry_world.ended_run``), so the move is decided on the real environment versions and scan."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import expect

from gateway.api import create_app
from gateway.errors import Conflict, SpecError
from gateway.services.envs.registry import EnvRegistration
from gateway.web import mount_web
from tests.envs_world import lock_text, wheel
from tests.service import page_checks
from tests.service.conftest import PROJECT, refresh_until, unique_tag
from tests.service.gw_serve import serve_in_thread
from tests.service.registry_world import ended_run
from tests.service.test_cli_evals import gw, ok, url  # noqa: F401 - the module's fixtures
from tests.web.conftest import browser  # noqa: F401 - Debian's chromium

pytestmark = pytest.mark.slurm

FINDING = "GHSA-gwt0-0000-0001 (CRITICAL) in gwtoy 1.0"


@contextmanager
def _signed_in(services, token: str, browser) -> Iterator[tuple[str, object, list[str]]]:  # noqa: F811
    """The pages served in a thread, and a page signed in there with ``token`` (closed after)."""
    with serve_in_thread(mount_web(create_app(services=services))) as web:
        page, errors = page_checks.open_page(browser, f"{web}/ui/login")
        try:
            page.set_default_timeout(20_000)
            page.fill("#token", token)
            page.click("#sign-in")
            page.wait_for_selector("#signed-in-as")
            yield web, page, errors
        finally:
            page.context.close()


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


def test_gw_sets_the_rule_and_release_check_names_the_advisory(gw, world):  # noqa: F811
    model = f"{PROJECT}/{world['model']}"
    set_it = ok(gw("release", "policy", model, "--alias", "gw-adv", "--no-critical-advisories"))
    assert "no known CRITICAL-or-worse advisory in the training environment" in set_it
    bad = gw("release", "policy", model, "--alias", "gw-adv", "--advisory-severity", "severe")
    assert bad.returncode == 2 and "LOW, MODERATE, HIGH, CRITICAL" in bad.stderr
    checked = ok(gw("release", "check", f"{model}@1", "--alias", "gw-adv"))
    assert "would be refused" in checked and "no known CRITICAL-or-worse advisory" in checked
    assert f"advisories in {world['versions']['bad'].ref}: 1" in checked
    assert "GHSA-gwt0-0000-0001 CRITICAL gwtoy 1.0" in checked and FINDING in checked
    assert "you may --override" in checked  # tester is a lead
    assert "advisories in" in ok(gw("release", "check", f"{model}@2", "--alias", "gw-adv"))
    refused = gw("release", "promote", f"{model}@1", "--alias", "gw-adv")
    assert refused.returncode != 0 and FINDING in refused.stdout + refused.stderr


def test_the_promote_page_shows_the_findings_and_offers_a_lead_the_override(services, tokens, world, browser):  # noqa: F811
    model, bad = world["model"], world["versions"]["bad"]
    services.alias_policies.set_policy(
        PROJECT, model, "web-adv", principal=world["lead"], advisory_severity="HIGH"
    )
    with _signed_in(services, tokens["tester"], browser) as (web, page, errors):
        page.goto(f"{web}/ui/models/{PROJECT}/{model}/promote?alias=web-adv&version=1")
        expect(page.locator("#policy-in-force")).to_contain_text("no known advisory of severity HIGH")
        expect(page.locator("#advisories-counted")).to_contain_text(f"1 known in {bad.ref}")
        expect(page.locator("#advisory-findings")).to_contain_text("GHSA-gwt0-0000-0001")
        expect(page.locator("#promote-missing")).to_contain_text(FINDING)
        expect(page.locator("#override-form")).to_be_visible()
        page.click(f"#advisories-counted a:text-is('{bad.ref}')")
        expect(page).to_have_url(re.compile(rf"/ui/environments/{PROJECT}/{bad.name}/1$"))
        page.go_back()
        page.fill("#override-reason", "triaged: not reachable in training")
        page.click("#override-go")
        page.wait_for_load_state("load")
        states = services.promotions.aliases(PROJECT, model, principal=world["lead"])
        moved = next(s for s in states if s.alias == "web-adv")
        assert moved.release is not None and moved.release.version == 1 and moved.event.override
        page_checks.check_screen(page, errors, page_checks.SCREENSHOTS / "promote-advisory.png")


def test_the_release_snapshot_evidence_and_gw_trace_carry_the_training_environment(services, world, gw):  # noqa: F811
    lead, model, bad = world["lead"], world["model"], world["versions"]["bad"]
    release = services.releases.release(PROJECT, model, 1, principal=lead)
    record = release.snapshot["run"]["environment_record"]
    assert record["ref"] == bad.ref and record["digest"] == bad.digest and record["status"] == "ready"
    assert record["packages"] == bad.packages and record["packages_sha256"] == bad.packages_sha256
    assert record["locked"] == {"gwtoy": "1.0"} and record["lock_sha256"] == bad.content["lock_sha256"]
    advisories = record["advisories"]
    assert [(f["advisory"], f["severity"], f["package"]) for f in advisories["findings"]] == [
        ("GHSA-gwt0-0000-0001", "CRITICAL", "gwtoy")
    ]
    assert advisories["packages_checked"] == len(bad.packages) and advisories["advisories"] == 3
    assert (
        services.releases.release(PROJECT, model, 3, principal=lead).snapshot["run"]["environment_record"]
        is None
    )

    bundle = services.evidence.bundle(f"{PROJECT}/{model}@1", principal=lead)
    (run,) = json.loads(bundle.files["evidence.json"])["runs"]
    dumped = run["environment_record"]
    assert {k: dumped[k] for k in ("ref", "digest", "packages", "packages_sha256")} == {
        k: record[k] for k in ("ref", "digest", "packages", "packages_sha256")
    }
    assert [f["advisory"] for f in dumped["advisories"]["findings"]] == ["GHSA-gwt0-0000-0001"]
    page = bundle.files["index.html"].decode()
    assert f"id='env-{bad.id}'" in page and bad.ref in page and bad.digest in page
    assert "GHSA-gwt0-0000-0001" in page and f"{len(bad.packages)} packages" in page
    clean = services.evidence.bundle(f"{PROJECT}/{model}@3", principal=lead).files["index.html"].decode()
    assert "no run of this chain named a registered environment" in clean

    traced = ok(gw("trace", world["runs"]["bad"]))
    assert f"environment version {bad.ref} (ready) digest {bad.digest[:12]}" in traced
    assert "GHSA-gwt0-0000-0001 CRITICAL gwtoy 1.0" in traced
    as_json = json.loads(ok(gw("trace", world["runs"]["bad"], "--json")))
    assert as_json["environment_record"]["digest"] == bad.digest


def test_the_run_compare_page_shows_the_two_runs_dependency_change(services, tokens, world, browser):  # noqa: F811
    bad, clean = world["runs"]["bad"], world["runs"]["clean"]
    with _signed_in(services, tokens["tester"], browser) as (web, page, errors):
        page.goto(f"{web}/ui/compare?run={bad}&run={clean}")
        section = page.locator("#run-env-diff")
        expect(section).to_contain_text(f"{bad} ({world['versions']['bad'].ref})")
        expect(section).to_contain_text("^ gwtoy 1.0 -> 2.0")
        expect(section).to_contain_text("1 changed")
        bare = world["runs"][None]
        page.goto(f"{web}/ui/compare?run={bad}&run={bare}")
        expect(page.locator("#run-env-diff")).to_contain_text("named no registered environment")
        page_checks.check_screen(page, errors, page_checks.SCREENSHOTS / "compare-environment.png")
