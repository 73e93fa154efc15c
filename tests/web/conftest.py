"""Browser fixtures: a real `gw serve` (its own database and Slurm accounts) and Debian's chromium
driven by Playwright (scripts/chromium-ready installs it; Playwright's own browser download is not used).

GW_WEB_DATABASE=postgresql runs them on PostgreSQL. Screenshots of the main pages go to
test-artifacts/screenshots/ (GW_SCREENSHOT_DIR overrides).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.envs_world import WHEELHOUSE
from tests.service.conftest import fresh_database
from tests.service.gw_serve import Serve, gw_serve

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
# The database of the `gw serve` the browser tests drive: sqlite (default) or postgresql (a fresh database
# on GW_TEST_POSTGRES_URL's server). test_web_evals.py runs on both through the service fixtures instead.
WEB_DATABASE = os.environ.get("GW_WEB_DATABASE", "sqlite")
SCREENSHOTS = Path(os.environ.get("GW_SCREENSHOT_DIR", REPO / "test-artifacts" / "screenshots"))


@pytest.fixture(scope="module")
def serve(tmp_path_factory) -> Iterator[Serve]:
    state = tmp_path_factory.mktemp("web")
    with (
        fresh_database(WEB_DATABASE, state) as database_url,
        gw_serve(
            state,
            prefix="web",
            users=("tester", "watcher", "admin"),
            database_url=database_url,
            # locked environments registered through the pages install the tests' wheels
            settings={"GATEWAY_ENV_PIP_FIND_LINKS": str(WHEELHOUSE)},
        ) as s,
    ):
        yield s


@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/chromium-ready (make test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def signed_in(browser, serve) -> Iterator[Callable]:
    """``signed_in(user)``: a page of a fresh browser context, signed in through the form as ``user``."""
    contexts = []

    def sign_in(user: str):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(f"{serve.url}/ui/runs")
        assert "/ui/login" in page.url  # not signed in yet: sent to the sign-in page
        page.fill("#token", serve.tokens[user])
        page.click("#sign-in")
        page.wait_for_selector("#signed-in-as")
        assert page.inner_text("#signed-in-as") == user
        return page

    yield sign_in
    for context in contexts:
        context.close()


def shot(page, name: str) -> Path:
    """Save a full-page screenshot as ``<name>.png`` in the screenshots folder."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{re.sub(r'[^a-z0-9_-]', '_', name)}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def api(serve: Serve, user: str) -> httpx.Client:
    """An API client of the same `gw serve`, as ``user``."""
    return httpx.Client(
        base_url=serve.url, headers={"Authorization": f"Bearer {serve.tokens[user]}"}, timeout=30
    )


# -- the submit form and one's own runs (test_web_ui.py, test_web_sessions.py, test_web_run_pages.py) --

RUN_DONE_S = 180  # a tiny CPU job: queue, run, accounting harvested


def choose(page, select: str, value: str) -> None:
    """Pick ``value`` in a select that makes htmx fetch the form's new choices, and wait until the new
    form is in place (typing into the old one would be lost)."""
    is_refresh = lambda r: r.url.endswith("/ui/submit") and r.request.method == "POST"  # noqa: E731
    with page.expect_response(is_refresh):
        page.select_option(select, value)
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')")
    assert page.eval_on_selector(select, "e => e.value") == value


def fill_run(page, *, project: str, queue: str, name: str, command: str) -> None:
    """The submit form's project and queue (each choice waited for), name and command."""
    choose(page, "#project", project)
    choose(page, "#queue", queue)
    page.fill("#name", name)
    page.fill("#command", command)


def own_runs(serve, user: str, tag: str | None = None) -> list[dict]:
    """``user``'s runs (with ``tag`` only, when given), through the API."""
    params = {"submitter": user, **({"tag": tag} if tag else {})}
    return api(serve, user).get("/runs", params=params).json()["items"]


__all__ = ["RUN_DONE_S", "api", "choose", "fill_run", "own_runs", "shot", "REPO", "shutil"]
