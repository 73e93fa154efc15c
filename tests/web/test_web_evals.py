"""The eval pages in a real browser with real evaluations: the eval world of the service tests (two
tiny_lm models trained as gateway runs and scored by lm-eval in Slurm jobs, tests/service/eval_world.py),
gated and reviewed through the services, served by the API app with the pages mounted (uvicorn on
127.0.0.1), once per database backend (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway.api import create_app
from gateway.web import mount_web
from tests.service import conftest as service_fixtures
from tests.service.eval_world import TASKS
from tests.service.gw_serve import serve_in_thread
from tests.web.conftest import shot

pytestmark = pytest.mark.slurm
# the service tests' fixtures (one database, services and eval world per backend and test process)
backend, database_url, settings, kept = (service_fixtures.backend, service_fixtures.database_url,
                                         service_fixtures.settings, service_fixtures.kept)  # fmt: skip
services, principal, tokens = service_fixtures.services, service_fixtures.principal, service_fixtures.tokens
eval_world = service_fixtures.eval_world


@pytest.fixture(scope="module")
def pages_url(services) -> Iterator[str]:
    """The API with the pages, on these services, served by uvicorn in a thread."""
    with serve_in_thread(mount_web(create_app(services=services))) as url:
        yield url


@pytest.fixture
def page_as(browser, pages_url, tokens):
    contexts = []

    def sign_in(user: str):
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(f"{pages_url}/ui/login")
        page.fill("#token", tokens[user])
        page.click("#sign-in")
        page.wait_for_selector("#signed-in-as")
        return page

    yield sign_in
    for context in contexts:
        context.close()


def _cells(page, selector: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        selector, "rows => rows.map(r => Array.from(r.querySelectorAll('td')).map(c => c.innerText.trim()))"
    )


def test_an_eval_result_shows_suite_tasks_gate_statistics_and_reviews(
    services, principal, eval_world, page_as, pages_url, backend
):
    world = eval_world
    weak, strong = world.results["weak"], world.results["strong"]
    gate = services.gates.gate(weak, principal=principal, baseline_id=strong)
    assert gate.verdict == "fail"
    result = services.gates.result(weak, principal=principal)
    page = page_as("tester")
    page.goto(f"{pages_url}/ui/evals")
    page.click(f"a[href='/ui/evals/results/{weak}']")
    page.wait_for_selector("#task-results")
    assert page.inner_text("#suite-ref") == world.suites["v1"].ref
    assert world.dataset in page.inner_text("#eval-suite") and "lm-eval 0.4.13" in page.inner_text(
        "#eval-suite"
    )
    rows = {
        (r.get_attribute("data-task"), r.get_attribute("data-metric")): r.query_selector(
            "td.value"
        ).inner_text()
        for r in page.query_selector_all("tr.task-metric")
    }
    expected = {
        (n, m): f"{v.value:.4f}" for n, t in result.results.tasks.items() for m, v in t.metrics.items()
    }
    assert rows == expected and {task for task, _ in rows} == set(TASKS)
    card = page.locator(f"#gate-{gate.id}")
    assert card.locator(".verdict").inner_text() == "fail"
    assert f"Baseline: {strong} (explicit)" in card.inner_text()
    comparisons = {c["task"]: c for c in gate.decision["comparisons"]}
    shown = _cells(page, f"#gate-{gate.id} tr.comparison")
    assert {row[0] for row in shown} == set(TASKS)
    for row in shown:
        c = comparisons[row[0]]
        assert row[2].startswith("mcnemar") and row[3] == str(c["test"]["n"]) == "300"
        assert row[6] == f"{c['test']['delta']:.4f}" and row[9] == f"{c['p_adjusted']:.3g}"
        assert row[12].startswith("regression")
        # the rule the outcome was decided by, and the bound it read (issue 27, item 4)
        assert c["decision"] == "non_inferiority" and not c["within_margin"]
        assert (
            f"rule: non-inferiority, worse end {c['worse_bound']:.4f} >= margin {c['margin']:.4f}" in row[12]
        ), row[12]
    assert "Approving reviews: 0 of the 1 the suite requires" in page.inner_text("#review-state")
    shot(page, f"eval-result-gate-fail-{backend}")

    rita = services.access.principal("rita", source="pytest")
    review = services.reviews.record(
        strong, verdict="approve", principal=rita, notes="<b>read</b> ten endings"
    )
    passed = services.gates.gate(strong, principal=principal, baseline_id=strong)
    assert passed.verdict == "pass", passed.decision["reasons"]
    page.goto(f"{pages_url}/ui/evals/results/{strong}")
    assert "enough for a gate" in page.inner_text("#review-state")
    (review_row,) = [
        r for r in _cells(page, "#reviews tr.review") if r[4] == f"{review.created_at:%Y-%m-%d %H:%M:%S}"
    ]
    assert review_row[:4] == ["rita", "approve", "this result", "<b>read</b> ten endings"]  # escaped, as text
    assert page.locator(f"#gate-{passed.id} .verdict").inner_text() == "pass"
    for row in _cells(page, f"#gate-{passed.id} tr.comparison"):  # the same scores: non-inferior
        assert row[12].startswith("passed") and "rule: non-inferiority, worse end" in row[12], row
        assert "< margin 0.0500" in row[12], row
    assert page.locator(f"#gate-{gate.id}").inner_text().count(f"as baseline of {weak}") == 1
    shot(page, f"eval-result-reviewed-pass-{backend}")
    page.goto(f"{pages_url}/ui/evals/results/er-no-such-result")  # errors are pages too, with a way back
    assert page.inner_text("#error-heading").startswith("Not found") and "no eval result" in page.inner_text(
        "#error-message"
    )
    shot(page, f"error-not-found-{backend}")
    page.click("#error-back")
    page.wait_for_selector("table.runs")


def test_eval_compare_from_the_web_page_shows_per_task_differences_with_intervals(
    eval_world, page_as, pages_url, backend
):
    """The comparison `gw eval compare --html` writes, from the result's page: the verdict, a plot of
    each task's paired difference with its interval, and the table; a bad id is said next to the form."""
    from tests.service import page_checks

    weak, strong = eval_world.results["weak"], eval_world.results["strong"]
    page = page_as("tester")
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_viewport_size({"width": page_checks.WIDTH, "height": 900})
    page.goto(f"{pages_url}/ui/evals/results/{weak}")
    page.fill("#compare-b", strong)
    page.click("#compare-with button")
    page.wait_for_selector("#eval-compare-rows")
    rows = page.locator("#eval-compare-rows tr.compare-row")
    assert {r.get_attribute("data-task") for r in rows.all()} == set(TASKS)
    intervals = page.locator("#eval-compare-rows td.nowrap").all_inner_texts()
    assert any(t.startswith("[") and "at 0.95" in t for t in intervals), intervals
    assert "regressed" in page.inner_text("#eval-compare-rows")
    assert page.locator("#eval-compare-plot img").evaluate("i => i.naturalWidth > 0")
    assert "fail" in page.inner_text("#eval-compare-verdict")
    page_checks.check_screen(page, errors, page_checks.SCREENSHOTS / f"eval-compare-{backend}.png")
    page.goto(f"{pages_url}/ui/evals/compare?a={weak}&b=er-nope")
    assert "er-nope" in page.inner_text("#eval-compare-error")
