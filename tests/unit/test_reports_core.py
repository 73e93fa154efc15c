"""Report measures, reconciliation and the renderers (CSV, JSON values, table, HTML page)."""

import csv
import io
import json

from gateway.core.reports.html import report_page
from gateway.core.reports.periods import parse_period
from gateway.core.reports.render import to_csv, to_data, to_table
from gateway.core.reports.rows import NO_TELEMETRY, Sums, build_report, unreconciled


def _sums(**kw):
    return Sums(**kw)


def _report(kind="cost", telemetry=False):
    groups = {
        "alice": _sums(records=3, failed=1, gpu_hours=10.0, cpu_hours=40.0, cost=30.0, cost_failed=6.0),
        "bob": _sums(
            records=1,
            gpu_hours=2.0,
            cpu_hours=4.0,
            cost=6.0,
            telemetry_gpu_hours=2.0 if telemetry else 0.0,
            util_gpu_hours=100.0 if telemetry else 0.0,
            idle_gpu_hours=0.5 if telemetry else 0.0,
        ),
    }
    total = _sums(records=4, failed=1, gpu_hours=12.0, cpu_hours=44.0, cost=36.0, cost_failed=6.0)
    return build_report(
        kind, "user", parse_period("2026-11"), groups, total, rate_versions=["v2", "v1"], currency="EUR"
    )


def test_failed_share_is_cost_of_failed_over_cost():
    report = _report()
    assert report.total.values["failed_share"] == 6.0 / 36.0
    assert [r.key for r in report.rows] == ["alice", "bob"]  # largest GPU-hours first
    assert report.rate_versions == ["v1", "v2"]


def test_reconciliation_finds_a_missing_row():
    report = _report()
    assert unreconciled(report) == []
    report.rows.pop()
    problems = unreconciled(report)
    assert any(p.startswith("gpu_hours: rows add up to 10.0, the total is 12.0") for p in problems)


def test_no_telemetry_is_not_zero():
    report = _report("efficiency")
    alice = report.rows[0]
    assert alice.values["gpu_util_pct"] is None and alice.note == NO_TELEMETRY
    assert any("no GPU telemetry" in n for n in report.notes)
    assert NO_TELEMETRY in to_table(report)
    with_telemetry = _report("efficiency", telemetry=True)
    bob = next(r for r in with_telemetry.rows if r.key == "bob")
    assert bob.values["gpu_util_pct"] == 50.0 and bob.values["idle_gpu_hours"] == 0.5


def test_csv_has_exact_numbers_and_names_the_rate_versions():
    text = to_csv(_report())
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:4] == ["user", "records", "gpu_hours", "cpu_hours"]
    assert rows[3][0] == "(total)" and float(rows[3][2]) == 12.0
    assert "# priced by rate versions: v1, v2" in text


def test_json_values_round_trip():
    data = json.loads(json.dumps(to_data(_report())))
    assert data["total"]["values"]["cost"] == 36.0 and data["period"]["label"] == "2026-11"


def test_table_says_what_was_spent_on_failed_attempts():
    text = to_table(_report())
    assert "spent on attempts that failed: 17%" in text
    assert "priced by rate versions: v1, v2" in text


def test_html_escapes_names_and_embeds_plots():
    groups = {"<script>alert(1)</script>": _sums(records=1, gpu_hours=1.0, cost=1.0)}
    report = build_report(
        "cost",
        "user",
        parse_period("2026-W47"),
        groups,
        _sums(records=1, gpu_hours=1.0, cost=1.0),
        rate_versions=["v1"],
        currency="EUR",
    )
    page = report_page(report, {"usage_over_time": b"<svg/>", "cost_by_queue": None, "utilisation": None})
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'src="data:image/svg+xml;base64,PHN2Zy8+"' in page
    assert "nothing to plot" in page


def test_usage_against_a_cap():
    groups = {"vision": _sums(records=2, gpu_hours=125.0), "nlp": _sums(records=1, gpu_hours=3.0)}
    report = build_report(
        "usage",
        "project",
        parse_period("2026-11"),
        groups,
        _sums(records=3, gpu_hours=128.0),
        rate_versions=[],
        currency="-",
        caps_gpu_hours={"vision": 500.0},
    )
    vision, nlp = report.rows
    assert vision.values["gpu_hours_cap"] == 500.0 and vision.values["gpu_hours_of_cap"] == 0.25
    assert nlp.values["gpu_hours_cap"] is None and nlp.values["gpu_hours_of_cap"] is None
    assert "of cap" in to_table(report) and "25%" in to_table(report)
    assert any("no record in this period was priced" in n for n in report.notes)


def test_cost_reports_do_not_claim_missing_telemetry():
    report = _report("cost")
    assert all(r.note == "" for r in report.rows) and not any("telemetry" in n for n in report.notes)
