"""Signing in and who sees what in the web UI (a real browser against a real `gw serve`): sign-in and
sign-out, a revoked token's session, users' and jobs' text shown as text, CSRF, a viewer's submit."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.web.conftest import RUN_DONE_S, api, fill_run, own_runs, shot

pytestmark = pytest.mark.slurm


def test_sign_in_sign_out_and_a_bad_token(signed_in, browser, serve):
    page = signed_in("tester")
    shot(page, "runs-list")
    cookies = {c["name"]: c for c in page.context.cookies()}
    session = cookies["gw_session"]
    assert session["httpOnly"] and session["sameSite"] == "Lax" and session["expires"] > time.time()
    assert "script-src 'self'" in page.request.get(f"{serve.url}/ui/runs").headers["content-security-policy"]
    page.click("#sign-out")
    page.wait_for_selector("#token")
    assert page.request.get(f"{serve.url}/ui/runs", max_redirects=0).status == 303  # signed out

    other = browser.new_context()
    try:
        bad = other.new_page()
        bad.goto(f"{serve.url}/ui/login")
        bad.fill("#token", "gwt_" + "x" * 43)
        bad.click("#sign-in")
        expect(bad.locator("#login-error")).to_contain_text("unknown token")
        shot(bad, "sign-in-refused")
    finally:
        other.close()


def test_revoking_the_token_ends_the_session_made_from_it(browser, serve):
    issued = api(serve, "tester").post("/tokens", json={"name": "web-revoke"}).json()
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{serve.url}/ui/login")
        page.fill("#token", issued["token"])
        page.click("#sign-in")
        expect(page.locator("#signed-in-as")).to_have_text("tester")
        assert api(serve, "tester").delete(f"/tokens/{issued['id']}").status_code == 200
        page.goto(f"{serve.url}/ui/runs")
        assert "/ui/login" in page.url
        expect(page.locator("main")).to_contain_text("was revoked")
    finally:
        context.close()


def test_text_users_and_jobs_control_is_shown_as_text(signed_in, serve):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/submit")
    fill_run(page, project="test", queue="cpu", name="<script>window.pwned=1</script>", command="true")
    page.click("#submit")
    expect(page.locator(".field-error[data-field=name]")).to_contain_text("<script>window.pwned=1</script>")
    hostile = "<script>window.pwned=2</script>"
    created = api(serve, "tester").post(
        "/runs",
        json={
            "name": "escaped-web",
            "project": "test",
            "queue": "cpu",
            "command": f"echo '{hostile}'",
            "params": {"note": hostile},
        },
    )
    run_id = created.json()["id"]
    page.goto(f"{serve.url}/ui/runs/{run_id}")
    expect(page.locator("#run-state")).to_have_text("succeeded", timeout=RUN_DONE_S * 1000)
    expect(page.locator("#log-text")).to_contain_text(hostile)
    expect(page.locator("#params")).to_contain_text(hostile)
    assert page.evaluate("() => window.pwned") is None
    assert page.eval_on_selector_all("script", "s => s.map(x => x.getAttribute('src'))") == [
        "/ui-static/htmx.min.js"
    ]
    shot(page, "run-escaped-log")


def test_a_form_posted_without_its_csrf_token_is_refused(signed_in, serve):
    page = signed_in("tester")
    form = {"project": "test", "queue": "cpu", "name": "no-csrf", "command": "true", "action": "submit"}
    refused = page.request.post(f"{serve.url}/ui/submit", form=form)
    assert refused.status == 403 and "CSRF" in refused.text()
    forged = page.request.post(f"{serve.url}/ui/submit", form={**form, "csrf": "x" * 43})
    assert forged.status == 403
    assert not [r for r in own_runs(serve, "tester") if r["name"] == "no-csrf"]


def test_a_viewer_sees_no_submit_button_and_the_server_refuses_anyway(signed_in, serve):
    page = signed_in("watcher")
    page.goto(f"{serve.url}/ui/submit")
    expect(page.locator("#no-submit")).to_be_visible()
    assert page.locator("#submit").count() == 0
    shot(page, "submit-viewer")
    csrf = page.get_attribute("header form input[name=csrf]", "value")
    form = {"csrf": csrf, "project": "test", "queue": "cpu", "name": "viewer-run", "command": "true"}
    refused = page.request.post(f"{serve.url}/ui/submit", form={**form, "action": "submit"})
    assert refused.status == 403
    assert not own_runs(serve, "watcher")
