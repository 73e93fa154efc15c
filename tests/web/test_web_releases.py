"""The release actions and the metric charts in a real browser: a registry world without Slurm (runs
written to the store and ended there, tests/service/registry_world.py) served by the API app with the
pages mounted, once per database backend (SQLite and PostgreSQL).

A member requests a promotion, a second lead approves it with a note, the promote page shows what the
policy misses before the button and the move goes through; a failed-gate-only move offers a lead the
override with its required reason (a member is not offered it and the service refuses the post); a lead
deprecates and withdraws a release; every form carries the CSRF token and a post without it is refused.
A run with loss, learning-rate and step series shows grouped charts; the compare page plots one metric
of two runs on one chart. Each page: nothing wider than 1366 px, no console error; screenshots kept.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from gateway.adapters.files import scan
from gateway.api import create_app
from gateway.core.access.values import Principal
from gateway.services.lineage.datasets import Registration
from gateway.settings import Settings
from gateway.web import mount_web
from gateway.wiring import build_services
from tests.service import conftest as service_fixtures
from tests.service import page_checks
from tests.service.eval_world import DATA, suite_data
from tests.service.gw_serve import serve_in_thread
from tests.service.registry_world import add_project, ended_run, principals

backend, database_url = service_fixtures.backend, service_fixtures.database_url
kept = service_fixtures.kept
OPERATOR = Principal.operator()


@pytest.fixture(scope="module")
def world(database_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("webrel")
    services = build_services(
        Settings(database_url=database_url, runs_dir=tmp / "runs", audit_anchor_path=tmp / "anchors.jsonl")
    )
    project = f"web{uuid.uuid4().hex[:8]}"
    add_project(services, project)
    who = principals(project)
    tokens = {k: services.auth.issue_token(OPERATOR, p.user, name="pytest")[0] for k, p in who.items()}
    with serve_in_thread(mount_web(create_app(services=services))) as url:
        yield services, project, who, tokens, url
    services.close()


@pytest.fixture
def page_as(browser, world) -> Iterator:
    _, _, _, tokens, url = world
    opened = []

    def sign_in(role: str):
        page, errors = page_checks.open_page(browser, f"{url}/ui/login")
        opened.append(page)
        page.set_default_timeout(20_000)
        page.fill("#token", tokens[role])
        page.click("#sign-in")
        page.wait_for_selector("#signed-in-as")
        page.errors = errors  # type: ignore[attr-defined]
        return page

    yield sign_in
    for page in opened:
        page.context.close()


def model(services, project, who, n: int) -> tuple[str, list[str]]:
    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"], description="web")
    shas = []
    for _ in range(n):
        _, sha = ended_run(services, project)
        services.releases.create_release(project, name, sha, principal=who["member"], notes="n")
        shas.append(sha)
    return name, shas


def looks_right(page, name: str) -> None:
    page_checks.check_screen(page, page.errors, page_checks.SCREENSHOTS / f"{name}.png")


def test_request_approve_with_a_note_then_promote_after_the_missing_pieces_are_shown(world, page_as, backend):
    services, project, who, _, url = world
    name, _ = model(services, project, who, 2)
    services.alias_policies.set_policy(project, name, "prod", principal=who["lead"], approvals=1)
    base = f"{url}/ui/models/{project}/{name}"

    member = page_as("member")
    member.goto(f"{base}/promote?alias=prod&version=2")
    missing = member.inner_text("#promote-missing")
    assert "approval" in missing and member.locator("#move-go").count() == 0  # no button while missing
    assert "1 approval(s) needed" in member.inner_text("#policy-in-force")
    looks_right(member, f"promote-missing-{backend}")

    member.goto(base)
    member.fill("#request-alias", "prod")
    member.select_option("#request-version", "2")
    member.fill("#request-reason", "better on every task")
    member.click("#request-go")
    member.wait_for_selector("#promotion-requests tr[data-request]")
    row = member.locator("#promotion-requests tr[data-request]").first
    assert "prod" in row.inner_text() and "open" in row.inner_text()
    assert row.locator(".decide-form").count() == 0  # a member decides no request, their own least

    lead2 = page_as("lead2")
    lead2.goto(base)
    lead2.fill("#promotion-requests .decide-form input[name=note]", "read the per-task table")
    lead2.click("#promotion-requests .decide-form button.approve")
    lead2.wait_for_selector("#promotion-requests tr[data-request]")
    row_text = lead2.locator("#promotion-requests tr[data-request]").first.inner_text()
    assert "approve by " + who["lead2"].user in row_text and "read the per-task table" in row_text
    assert "approved" in row_text
    looks_right(lead2, f"model-approved-{backend}")

    member.goto(f"{base}/promote?alias=prod&version=2")
    assert member.locator("#promote-missing").count() == 0
    assert who["lead2"].user in member.inner_text("#approvals-counted")
    member.fill("#move-reason", "approved by lead2")
    member.click("#move-go")
    member.wait_for_selector("#alias-history")
    history = member.inner_text("#alias-history")
    assert "prod" in history and "v2" in history and "approved by lead2" in history
    moved = services.promotions.history(project, name, principal=who["viewer"], alias="prod")["events"][-1]
    assert list(moved.approvals) == [who["lead2"].user]


def test_the_override_needs_a_lead_and_a_reason_and_is_on_record(world, page_as, backend):
    services, project, who, tokens, url = world
    name, _ = model(services, project, who, 1)
    dataset = f"cloze-{uuid.uuid4().hex[:6]}"
    files = [e.to_dict() for e in scan(DATA).entries]
    services.datasets.register(Registration(project, dataset, files, path=str(DATA)), principal=who["lead"])
    suite = services.eval_suites.register(
        suite_data(dataset, f"suite-{dataset}") | {"project": project}, principal=who["lead"]
    )[0]
    services.alias_policies.set_policy(
        project, name, "prod", principal=who["lead"], roles=["member"], gate_suite=f"{project}/{suite.name}"
    )
    base = f"{url}/ui/models/{project}/{name}"
    member = page_as("member")
    member.goto(f"{base}/promote?alias=prod&version=1")
    assert "no eval result of" in member.inner_text("#promote-missing")
    assert (
        member.locator("#override-form").count() == 0 and member.locator("#override-needs-lead").count() == 1
    )
    # the member's post of an override (with the CSRF token of their own page) is refused by the service
    member.goto(base)
    token = member.locator("#request-form input[type=hidden]").first
    field, value = token.get_attribute("name"), token.get_attribute("value")
    refused = member.request.post(
        f"{base}/aliases/prod", form={field: value, "version": "1", "override": "yes", "reason": "x"}
    )
    assert refused.status == 403 and "release.override" in refused.text()

    lead = page_as("lead")
    lead.goto(f"{base}/promote?alias=prod&version=1")
    assert lead.locator("#override-form").count() == 1
    assert lead.get_attribute("#override-reason", "required") is not None
    looks_right(lead, f"promote-override-{backend}")
    # the browser asks for the reason; a post without one gets the service's words on the page (422)
    token = lead.locator("#override-form input[type=hidden]").first
    field, value = token.get_attribute("name"), token.get_attribute("value")
    answer = lead.request.post(f"{base}/aliases/prod", form={field: value, "version": "1", "override": "yes"})
    assert answer.status == 422 and "reason" in answer.text()
    lead.fill("#override-reason", "suite results not in yet; signed off by QA")
    lead.click("#override-go")
    lead.wait_for_selector("#alias-history")
    assert "(override)" in lead.inner_text("#alias-history")
    events = services.audit.events(who["lead"], project=project, action="release.override").items
    assert events[-1].after["reason"] == "suite results not in yet; signed off by QA"


def test_deprecate_and_withdraw_with_a_reason_and_csrf_is_required(world, page_as, backend):
    services, project, who, tokens, url = world
    name, _ = model(services, project, who, 1)
    base = f"{url}/ui/models/{project}/{name}"
    member = page_as("member")
    member.goto(base)
    assert member.locator(".status-form").count() == 0  # members change no status
    lead = page_as("lead")
    lead.goto(base)
    form = lead.locator("tr[data-version='1'] .status-form")
    form.locator("select").select_option("deprecated")
    form.locator("input[name=reason]").fill("superseded by v2")
    form.locator("button").click()
    lead.wait_for_selector("tr[data-version='1'] .status-deprecated")
    form = lead.locator("tr[data-version='1'] .status-form")
    form.locator("select").select_option("withdrawn")
    form.locator("input[name=reason]").fill("license problem in the data")
    form.locator("button").click()
    lead.wait_for_selector("tr[data-version='1'] .status-withdrawn")
    release = services.releases.release(project, name, 1, principal=who["viewer"])
    assert release.status == "withdrawn"
    looks_right(lead, f"model-withdrawn-{backend}")
    # a withdrawn release cannot be requested: the service's words next to the form
    lead.fill("#request-alias", "prod")
    lead.click("#request-go")
    assert "withdrawn" in lead.inner_text("#request-form + .action-error")
    # a post without the CSRF token is refused, and nothing changes
    cookies = {c["name"]: c["value"] for c in lead.context.cookies()}
    answer = httpx.post(
        f"{base}/releases/1/status", data={"status": "active", "reason": "x"}, cookies=cookies, timeout=10
    )
    assert answer.status_code == 403 and "CSRF" in answer.text
    assert services.releases.release(project, name, 1, principal=who["viewer"]).status == "withdrawn"


def _run_with_series(services, project, series) -> str:
    return ended_run(services, project, series=series)[0]


def test_metrics_are_grouped_and_the_compare_page_plots_one_metric_of_several_runs(world, page_as, backend):
    services, project, who, _, url = world
    steps = range(1, 21)
    a = _run_with_series(
        services,
        project,
        {
            "train_loss": [(s, 3.0 / s) for s in steps],
            "val_loss": [(s, 3.2 / s) for s in steps],
            "lr": [(s, 0.1 * 0.9**s) for s in steps],
            "epoch": [(s, s // 5) for s in steps],
            "step": [(s, s) for s in steps],
        },
    )
    b = _run_with_series(services, project, {"train_loss": [(s, 2.0 / s) for s in steps]})
    page = page_as("viewer")
    page.goto(f"{url}/ui/runs/{a}")
    groups = page.locator("figure.metric-chart").evaluate_all("fs => fs.map(f => f.dataset.group)")
    assert groups == ["loss", "learning rate"]  # losses together, the learning rate apart, no counters
    alt = page.get_attribute("figure.metric-chart[data-group=loss] img", "alt")
    assert "train_loss" in alt and "val_loss" in alt
    assert page.locator("figure.metric-chart img").evaluate_all("is => is.every(i => i.naturalWidth > 0)")
    looks_right(page, f"run-metrics-{backend}")

    page.goto(f"{url}/ui/compare?run={a}&run={b}&metric=train_loss")
    assert page.locator("#compare-chart img").evaluate("i => i.naturalWidth > 0")
    assert "train_loss of 2 runs" in page.get_attribute("#compare-chart img", "alt")
    assert page.locator("#compared-runs tbody tr").count() == 2
    looks_right(page, f"compare-{backend}")
    page.goto(f"{url}/ui/compare?runs={a}%20{b}&metric=nope")
    assert "none of these runs has it" in page.inner_text(
        "#compare-error"
    ) and "train_loss" in page.inner_text("#compare-error")
