"""Secrets in the web UI (docs/access.md#site-and-project-secrets), in a real browser against a real
`gw serve` and the real cluster: the submit form names a site secret, the job gets its value, and the
run's page shows the name, never the value; a line that is no reference is refused next to the field."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import uuid

import pytest
from playwright.sync_api import expect

from tests.conftest import JOB_ROOT
from tests.web.conftest import RUN_DONE_S, api, fill_run

pytestmark = pytest.mark.slurm


@pytest.fixture
def site_secret(serve):
    """A site secret ``web-token`` in a root-only file, defined through POST /admin/site; the value."""
    value = f"web-{secrets.token_hex(12)}"
    JOB_ROOT.mkdir(parents=True, exist_ok=True)
    path = JOB_ROOT / f"web-secret-{uuid.uuid4().hex[:8]}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    admin = api(serve, "admin")
    site = admin.get("/admin/site").json()
    wanted = {**site, "secrets": [{"name": "web-token", "file": str(path)}]}
    applied = admin.post("/admin/site", params={"sync_slurm": "false"}, json=wanted)
    assert applied.status_code == 200, applied.text
    assert any("set secrets: site/web-token" in line for line in applied.json()["changes"]), applied.text
    yield value
    admin.post("/admin/site", params={"sync_slurm": "false"}, json={**site, "secrets": []})
    path.unlink(missing_ok=True)


def test_the_form_names_a_site_secret_and_the_page_shows_only_its_name(signed_in, serve, site_secret):
    expected = hashlib.sha256(site_secret.encode()).hexdigest()
    command = (
        f'[ "$(printf %s "$WEB_TOKEN" | sha256sum | cut -d" " -f1)" = {expected} ] '
        "&& echo WEB_TOKEN-ok || echo WEB_TOKEN-wrong"
    )
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/submit")
    fill_run(page, project="test", queue="cpu", name="web-secret", command=command)
    page.fill("#secrets", "WEB_TOKEN hunter2")  # a value where the reference goes
    page.click("#submit")
    expect(page.locator(".field-error[data-field=secrets]")).to_contain_text("write VAR site NAME")
    page.fill("#secrets", "WEB_TOKEN site web-token")
    page.click("#submit")
    page.wait_for_url(re.compile(r".*/ui/runs/r-[0-9a-f]{16}$"))
    expect(page.locator("#run-state")).to_have_text("succeeded", timeout=RUN_DONE_S * 1000)
    expect(page.locator("#log-text")).to_contain_text("WEB_TOKEN-ok")
    expect(page.locator("#secrets")).to_contain_text("WEB_TOKEN")
    expect(page.locator("#secrets")).to_contain_text("the site's secret web-token")
    assert site_secret not in page.content()
