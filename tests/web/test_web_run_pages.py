"""Run pages in the web UI (a real browser against a real `gw serve` and Slurm): a waiting run says why
and is cancelled from its page, an array run shows each task, a failed run its class and linked rerun."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.web.conftest import RUN_DONE_S, api, shot

pytestmark = pytest.mark.slurm


def test_a_waiting_run_shows_why_and_is_cancelled_from_its_page(signed_in, serve):
    created = api(serve, "tester").post(
        "/runs",
        json={"name": "held-web", "project": "test", "queue": "cpu", "command": "true", "hold": True},
    )
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/runs/{run_id}")
    deadline = time.monotonic() + 60
    while not page.locator("#why-waiting").count() and time.monotonic() < deadline:
        time.sleep(2)
        page.reload()
    expect(page.locator("#why-waiting")).to_contain_text("held")
    shot(page, "run-waiting")
    listing = page.context.new_page()  # the runs list, open while the run is cancelled on its page
    listing.goto(f"{serve.url}/ui/runs?project=test")
    row_state = listing.locator(f"tr[data-run='{run_id}'] .state")
    expect(row_state).to_have_text(re.compile("held|queued"))
    page.click("#cancel")
    expect(page.locator("#run-state")).to_have_text("cancelled", timeout=60_000)
    expect(row_state).to_have_text("cancelled", timeout=30_000)  # htmx polled the rows: no reload
    # a cancellation is its own outcome, named with who asked: not "Why it failed"
    deadline = time.monotonic() + 60
    while not page.locator("#cancelled").count() and time.monotonic() < deadline:
        time.sleep(1)
        page.reload()
    expect(page.locator("#cancelled-by")).to_have_text("Cancelled by tester.")
    assert not page.locator("#why-failed").count()


def test_an_array_run_shows_each_task_and_its_log_names_the_task(signed_in, serve):
    created = api(serve, "tester").post(
        "/runs",
        json={
            "name": "array-web",
            "project": "test",
            "queue": "cpu",
            "command": "echo task $SLURM_ARRAY_TASK_ID",
            "resources": {"mem_gb": 0.1, "walltime_min": 5},
            "sweep": {"params": [{"i": 0}, {"i": 1}, {"i": 2}]},
        },
    )
    assert created.status_code == 201, created.text
    run_id = created.json()["id"]
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/runs/{run_id}")
    expect(page.locator("#run-state")).to_have_text("succeeded", timeout=RUN_DONE_S * 1000)
    page.reload()
    expect(page.locator("#tasks-summary-1")).to_contain_text("Array of 3 tasks: 3 succeeded")
    assert page.locator("#tasks-1 tbody tr").count() == 3
    expect(page.locator("#log-task")).to_have_text("array task 0")
    expect(page.locator("#log-text")).to_have_text("task 0")
    page.fill("#log-task-input", "2")
    page.click("#log-task-show")
    expect(page.locator("#log-task")).to_have_text("array task 2")
    expect(page.locator("#log-text")).to_have_text("task 2")
    page.fill("#log-task-input", "7")
    page.click("#log-task-show")
    expect(page.locator("#log")).to_contain_text("has no array task 7; its tasks are 0-2")


def test_a_failed_run_shows_its_class_and_reruns_linked_to_the_original(signed_in, serve):
    created = api(serve, "tester").post(
        "/runs", json={"name": "fails-web", "project": "test", "queue": "cpu", "command": "exit 3"}
    )
    run_id = created.json()["id"]
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/runs/{run_id}")
    expect(page.locator("#run-state")).to_have_text("failed", timeout=RUN_DONE_S * 1000)
    deadline = time.monotonic() + 60
    while not page.locator("#failure-class").count() and time.monotonic() < deadline:
        time.sleep(2)
        page.reload()
    expect(page.locator("#failure-class")).to_have_text("user_code")
    shot(page, "run-failed")
    page.fill("#changes", "command=echo fixed")
    page.click("#rerun")
    page.wait_for_url(re.compile(r".*/ui/runs/r-[0-9a-f]{16}$"))
    assert run_id not in page.url
    expect(page.locator("#derived-from a")).to_have_text(run_id)
    page.click("#derived-from a")
    expect(page.locator("#reruns")).to_be_visible()
