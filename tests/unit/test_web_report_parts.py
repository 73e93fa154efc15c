"""The reports page's pure parts: a table line's text and exact values, the download links' queries."""

from __future__ import annotations

from urllib.parse import parse_qs

from gateway.core.reports.periods import parse_period
from gateway.core.reports.rows import NO_TELEMETRY, Report, Row
from gateway.web.routes_reports import Asked, _line


def _report(row: Row) -> Report:
    return Report(
        kind="efficiency",
        by="run",
        period=parse_period("2026-11"),
        columns=("records", "cost", "gpu_util_pct"),
        rows=[row],
        total=row,
        rate_versions=["3"],
        currency="EUR",
        telemetry=False,
    )


def test_a_line_shows_rounded_text_and_carries_the_exact_values():
    row = Row("r-1", {"records": 3, "cost": 0.1 + 0.2, "gpu_util_pct": None}, note=NO_TELEMETRY)
    line = _line(row, _report(row))
    cells = {c["column"]: c for c in line["cells"]}
    assert [c["column"] for c in line["cells"]] == ["records", "cost", "gpu_util_pct"]
    assert cells["records"] == {"column": "records", "text": "3", "value": "3"}
    assert cells["cost"]["text"] == "0.3 EUR" and float(cells["cost"]["value"]) == 0.1 + 0.2
    assert cells["cost"]["value"] == "0.30000000000000004"  # unrounded, as the JSON has it
    assert cells["gpu_util_pct"] == {"column": "gpu_util_pct", "text": NO_TELEMETRY, "value": ""}
    assert line["key"] == "r-1" and line["note"] == NO_TELEMETRY


def test_a_download_query_keeps_the_forms_values_and_leaves_out_empty_ones():
    asked = Asked(kind="cost", by="user", period="2026-11-01..2026-11-15", project="")
    query = parse_qs(asked.query(format="csv"))
    period = ["2026-11-01..2026-11-15"]
    assert query == {"kind": ["cost"], "by": ["user"], "period": period, "format": ["csv"]}
    hostile = Asked(kind="cost&by=run", by="project", period="2026-11", project="a b")
    assert parse_qs(hostile.query())["kind"] == ["cost&by=run"]  # a value stays one value
