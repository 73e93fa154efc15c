"""The reports page in a real browser against a real `gw serve` and the real cluster: one CPU job ended,
ingested from Slurm accounting and priced by the example rate table; the page's totals are the API's
(GET /reports/cost), its plots are the HTML report's SVGs and load under the pages' CSP, its downloads
are the API's answers with the session cookie, a bad period is said next to its field, and a project
the caller is not in is refused there as the service refuses it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.service.gw_serve import Serve, gw_serve
from tests.web.conftest import api, shot
from tests.web.priced import apply_rates, ended, priced_costs, wait_until

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def serve(tmp_path_factory) -> Iterator[Serve]:
    with gw_serve(
        tmp_path_factory.mktemp("webrep"), prefix="webrep", users=("tester", "outsider", "admin")
    ) as s:
        yield s


@pytest.fixture(scope="module")
def priced(serve, tmp_path_factory) -> dict:
    """One CPU run of project test, ended, its accounting record ingested and priced; this month."""
    since = (datetime.now(UTC) - timedelta(minutes=2)).isoformat()
    client = api(serve, "tester")
    made = client.post(
        "/runs", json={"name": "reported", "project": "test", "queue": "cpu", "command": "sleep 2"}
    )
    assert made.status_code == 201, made.text
    run_id = made.json()["id"]
    assert wait_until("the run to end", lambda: ended(client, run_id), 240) == "succeeded"
    apply_rates(serve, tmp_path_factory.mktemp("rates"))
    cost = priced_costs(api(serve, "admin"), client, since, {"run": run_id})["run"]
    return {"id": run_id, "cost": cost, "month": datetime.now(UTC).strftime("%Y-%m")}


def _page_total(page) -> dict[str, str]:
    cells = page.locator("#report-total td[data-column]")
    return {
        cells.nth(i).get_attribute("data-column"): cells.nth(i).get_attribute("data-value")
        for i in range(cells.count())
    }


def _same_total(page, report: dict) -> None:
    """The page's total line holds the exact values of ``report``'s (the API's JSON) total."""
    expected = report["total"]["values"]
    shown = _page_total(page)
    assert set(shown) == set(expected) and shown
    for column, value in expected.items():
        if value is None:
            assert shown[column] == "", column
        else:
            assert float(shown[column]) == pytest.approx(value, rel=1e-12, abs=1e-12), column


def test_the_reports_page_shows_the_apis_cost_report_with_its_plots_and_downloads(signed_in, serve, priced):
    page = signed_in("tester")
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.click("#nav-reports")
    expect(page.locator("#report-title")).to_contain_text(f"Cost report by project, {priced['month']}")
    expected = api(serve, "tester").get("/reports/cost", params={"by": "project"}).json()
    assert expected["total"]["values"]["cost"] == pytest.approx(priced["cost"]["total"], abs=1e-9)
    assert expected["total"]["values"]["cost"] > 0 and expected["rate_versions"]
    _same_total(page, expected)
    expect(page.locator("#report-table tbody tr.report-row")).to_have_count(len(expected["rows"]))
    expect(page.locator("#report-table tr[data-key=test]")).to_have_count(1)
    expect(page.locator("#rate-versions strong")).to_have_text(", ".join(expected["rate_versions"]))
    # the plots: the HTML report's own SVGs, loaded (the CSP allows data: images), none blocked
    html_page = api(serve, "tester").get("/reports/cost", params={"format": "html"}).text
    plot = page.locator("#plot-cost_by_queue img")
    src = plot.get_attribute("src")
    assert src.startswith("data:image/svg+xml;base64,") and src in html_page
    assert plot.evaluate("img => img.complete && img.naturalWidth > 0")
    assert page.locator("#plots figure").count() == 3 and not violations, violations
    # downloads with the session cookie: the API's own answers
    with page.expect_download() as got:
        page.click("#download-json")
    downloaded = json.loads(Path(got.value.path()).read_text())
    assert downloaded == expected
    assert got.value.suggested_filename == f"cost-by-project-{priced['month']}.json"
    with page.expect_download() as got:
        page.click("#download-csv")
    csv_text = Path(got.value.path()).read_text()
    assert csv_text == api(serve, "tester").get("/reports/cost", params={"format": "csv"}).text
    href = page.get_attribute("#download-html", "href")
    as_html = page.request.get(f"{serve.url}{href}")
    assert as_html.status == 200 and as_html.headers["content-type"].startswith("text/html")
    disposition = f'attachment; filename="cost-by-project-{priced["month"]}.html"'
    assert as_html.headers["content-disposition"] == disposition
    assert as_html.text() == html_page  # the API's page, plots and all
    shot(page, "reports")
    # the form: another kind and dimension
    page.select_option("#kind", "usage")
    page.select_option("#by", "queue")
    page.click("#show")
    expect(page.locator("#report-title")).to_contain_text("Usage report by queue")
    usage = api(serve, "tester").get("/reports/usage", params={"by": "queue"}).json()
    _same_total(page, usage)
    keys = page.locator("#report-table tr.report-row").evaluate_all("rows => rows.map(r => r.dataset.key)")
    assert keys == [r["key"] for r in usage["rows"]] and any("cpu" in k for k in keys), keys


def test_a_bad_period_is_said_next_to_its_field(signed_in, serve, priced):
    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/reports")
    for typed, said in (
        ("2026-13", "month 13 does not exist (01 to 12)"),
        ("2026-11-20..2026-11-02", "the range ends (2026-11-02) before it starts (2026-11-20)"),
        ("last month", "is not a period; use YYYY-MM (a month)"),
    ):
        page.fill("#period", typed)
        page.click("#show")
        expect(page.locator(".field-error[data-field=period]")).to_contain_text(said)
        expect(page.locator("#period")).to_have_value(typed)
        expect(page.locator("#report-table")).to_have_count(0)
    shot(page, "reports-bad-period")
    response = page.request.get(f"{serve.url}/ui/reports?period=2026-13")
    assert response.status == 422


def test_the_form_takes_the_words_gw_report_takes(signed_in, serve, priced):
    from datetime import UTC, datetime, timedelta

    page = signed_in("tester")
    page.goto(f"{serve.url}/ui/reports")
    today = datetime.now(UTC).date()
    yesterday = today - timedelta(days=1)
    for typed, label in (
        ("this-month", f"{today:%Y-%m}"),
        ("yesterday", f"{yesterday}..{yesterday}"),
        (str(today), f"{today}..{today}"),
    ):
        page.fill("#period", typed)
        page.click("#show")
        expect(page.locator("#report-title")).to_contain_text(label)
        expect(page.locator(".field-error[data-field=period]")).to_have_count(0)


def test_members_see_their_projects_and_admins_everything(signed_in, serve, priced):
    outsider = signed_in("outsider")
    outsider.goto(f"{serve.url}/ui/reports?kind=cost&project=test")
    refused = outsider.locator(".field-error[data-field=project]")
    expect(refused).to_contain_text("no project 'test' that you may read")
    said = refused.inner_text()
    outsider.goto(f"{serve.url}/ui/reports?kind=cost&project=nosuch")  # the same words: nothing leaks
    expect(refused).to_have_text(said.replace("'test'", "'nosuch'"))
    assert api(serve, "outsider").get("/reports/cost", params={"project": "test"}).status_code == 404
    outsider.goto(f"{serve.url}/ui/reports?kind=cost")
    expect(outsider.locator("#report-empty")).to_be_visible()
    _same_total(outsider, api(serve, "outsider").get("/reports/cost").json())
    assert float(_page_total(outsider)["records"]) == 0
    download = outsider.request.get(f"{serve.url}/ui/reports/download?format=csv&project=test")
    assert download.status == 404
    admin = signed_in("admin")
    admin.goto(f"{serve.url}/ui/reports?kind=cost&by=user")
    _same_total(admin, api(serve, "admin").get("/reports/cost", params={"by": "user"}).json())
    assert float(_page_total(admin)["cost"]) >= priced["cost"]["total"] - 1e-9
