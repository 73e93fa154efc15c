"""Reports through their interfaces: GET /reports/{kind} in every format and its refusals, ``gw report``
against a served API, and the HTML page opened in headless Chromium (its plots checked on the
screenshot). The records are those of ``tests/service/report_world.py``.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.service.conftest import OPERATOR, PROJECT
from tests.service.report_world import get_world

pytestmark = pytest.mark.slurm


@pytest.fixture
def world(kept, backend, services, settings, principal, eval_world) -> dict:
    return get_world(kept, backend, services, settings, principal, eval_world)


def test_the_html_report_opens_in_chromium_with_its_plots(services, principal, world, tmp_path):
    from tests.service.browser import ink, look

    report = services.reports.report(OPERATOR, "cost", by="project", period=world["period"], charts=True)
    page = tmp_path / "report.html"
    page.write_text(services.reports.render(report, "html").text, encoding="utf-8")
    shot = look(page)
    (tmp_path / "report.png").write_bytes(shot.page_png)
    for plot in ("plot-usage_over_time", "plot-cost_by_queue", "plot-utilisation"):
        assert shot.loaded.get(plot), f"{plot} has no decoded image: {shot.texts}"
        share, colours = ink(shot.images[plot])
        assert share > 0.02 and colours > 8, f"{plot} looks blank: {share:.3f} inked, {colours} colours"
    page_share, _ = ink(shot.page_png)
    assert page_share > 0.02


@pytest.fixture(scope="module")
def api(services):
    from fastapi.testclient import TestClient

    from gateway.api import create_app

    with TestClient(create_app(services=services)) as client:
        yield client


def test_api_serves_every_format(api, tokens, world):
    headers = {"Authorization": f"Bearer {tokens['tester']}"}
    params = {"by": "user", "period": world["period"], "project": PROJECT}
    data = api.get("/reports/cost", params=params, headers=headers)
    assert data.status_code == 200 and data.json()["total"]["values"]["cost"] > 0
    assert data.json()["rate_versions"]
    csv_text = api.get("/reports/cost", params={**params, "format": "csv"}, headers=headers)
    assert (
        csv_text.headers["content-type"].startswith("text/csv")
        and "# priced by rate versions" in csv_text.text
    )
    page = api.get("/reports/usage", params={**params, "format": "html"}, headers=headers)
    assert page.headers["content-type"].startswith("text/html") and "data:image/svg+xml;base64," in page.text
    table = api.get("/reports/efficiency", params={**params, "format": "table"}, headers=headers)
    assert table.headers["content-type"].startswith("text/plain") and "idle GPU-hours" in table.text


def test_a_usage_report_over_no_records_has_no_waits(api, tokens, world):
    """A period with no record: PostgreSQL's grouping set still answers the total, with NULL percentiles
    (once a 500, found by the fuzz pass); the wait is "none", not 0."""
    headers = {"Authorization": f"Bearer {tokens['admin']}"}
    empty = api.get("/reports/usage", params={"by": "queue", "period": "1999-01"}, headers=headers)
    assert empty.status_code == 200, empty.text
    body = empty.json()
    total = body["total"]["values"]
    assert body["rows"] == [] and total["records"] == 0, body
    assert total["wait_median_s"] is None and total["wait_p90_s"] is None, body


def test_api_refusals(api, tokens, world):
    outsider = {"Authorization": f"Bearer {tokens['outsider']}"}
    assert api.get("/reports/usage", params={"project": PROJECT}, headers=outsider).status_code == 404
    shape = api.get("/reports/usage", params={"period": "2026-13"}, headers=outsider)  # the schema's pattern
    assert shape.status_code == 422 and shape.json()["detail"][0]["loc"] == ["query", "period"]
    calendar = api.get("/reports/usage", params={"period": "2026-02-27..2026-02-30"}, headers=outsider)
    assert calendar.status_code == 422 and "not a date of the calendar" in json.dumps(calendar.json())
    assert api.get("/reports/usage", params={"period": "last week"}, headers=outsider).status_code == 422
    assert api.get("/reports/bills", headers=outsider).status_code == 422
    assert api.get("/reports/usage").status_code == 401


@pytest.fixture(scope="module")
def served(services):
    """The API on a free loopback port in a thread, over this module's services (for gw)."""
    from gateway.api import create_app
    from tests.service.gw_serve import serve_in_thread

    with serve_in_thread(create_app(services=services)) as url:
        yield url


def test_gw_report_prints_and_writes_files(served, tokens, world, tmp_path):
    from tests.service.gw_serve import GW

    env = {**os.environ, "GW_URL": served, "GW_TOKEN": tokens["tester"], "COLUMNS": "200"}

    def gw(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*GW, *args], env=env, capture_output=True, text=True, timeout=120, check=False)

    shown = gw("report", "cost", "--by", "user", "--period", world["period"], "--project", PROJECT)
    assert shown.returncode == 0, shown.stderr
    assert "cost report by user" in shown.stdout and "priced by rate versions:" in shown.stdout
    out = tmp_path / "r.html"
    written = gw("report", "usage", "--period", world["period"], "--format", "html", "-o", str(out))
    assert written.returncode == 0, written.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    refused = gw("report", "usage", "--period", "2026-W54")
    assert refused.returncode == 2 and "ISO year 2026 has weeks W01 to W53" in refused.stderr
    no_file = gw("report", "usage", "--format", "html")
    assert no_file.returncode == 2 and "-o FILE.html" in no_file.stderr
