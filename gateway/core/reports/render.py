"""A report as JSON-ready values, CSV and a plain-text table (the HTML page: ``core/reports/html.py``).

CSV and JSON carry exact numbers (hours and money unrounded, shares as
fractions, waits in seconds); the table rounds for reading. Every form says
the period, the rate versions that priced it, and the notes.
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from typing import Any

from gateway.core.reports.rows import MEASURES, NO_TELEMETRY, Report, Row

FORMATS = ("table", "csv", "json", "html")


def to_data(report: Report) -> dict[str, Any]:
    """The report as plain JSON values (the API's ``ReportPublic`` has this shape)."""
    return {
        "kind": report.kind,
        "by": report.by,
        "period": {
            "label": report.period.label,
            "start": report.period.start.isoformat(),
            "end": report.period.end.isoformat(),
        },
        "columns": [asdict(MEASURES[c]) for c in report.columns],
        "rows": [_row(r, report.columns) for r in report.rows],
        "total": _row(report.total, report.columns),
        "rate_versions": report.rate_versions,
        "currency": report.currency,
        "telemetry": report.telemetry,
        "notes": report.notes,
        "charts": asdict(report.charts) if report.charts else None,
    }


def _row(row: Row, columns: tuple[str, ...]) -> dict[str, Any]:
    return {"key": row.key, "values": {c: row.values.get(c) for c in columns}, "note": row.note}


def to_csv(report: Report) -> str:
    """One header line (the dimension, then each column's key), one line per row, then the total.

    Empty cells mean "not known" (no telemetry, no cap); comment lines (``#``) at the end name the
    period, the rate versions and the currency, so a CSV on its own still says what priced it.
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([report.by, *report.columns, "note"])
    for row in [*report.rows, report.total]:
        writer.writerow([row.key, *(_exact(row.values.get(c)) for c in report.columns), row.note])
    out.write(f"# period {report.period.label} [{report.period.start.isoformat()}, ")
    out.write(f"{report.period.end.isoformat()})\n")
    out.write(f"# priced by rate versions: {', '.join(report.rate_versions) or 'none'}\n")
    out.write(f"# currency: {report.currency}\n")
    for note in report.notes:
        out.write(f"# {note}\n")
    return out.getvalue()


def _exact(value: float | int | None) -> str:
    if value is None:
        return ""
    return str(value) if isinstance(value, int) else repr(float(value))


def cell(value: float | int | None, unit: str, currency: str, *, note: str = "") -> str:
    """One value as a person reads it: hours to 2 places, money with its currency, shares as
    percentages, waits as h/m/s; None as "no telemetry" where the row says so, else "-"."""
    if value is None:
        return NO_TELEMETRY if note == NO_TELEMETRY and unit == "pct" else "-"
    if unit == "count":
        return f"{int(value):d}"
    if unit == "h":
        return _amount(float(value))
    if unit == "money":
        return f"{_amount(float(value))} {currency}"
    if unit == "share":
        return f"{value * 100:.0f}%"
    if unit == "pct":
        return f"{value:.1f}%"
    return duration(float(value))


def _amount(value: float) -> str:
    """2 decimals, or 3 significant digits below 1 (short test jobs cost fractions of a cent)."""
    if value == 0 or abs(value) >= 1:
        return f"{value:,.2f}"
    return f"{value:.3g}"


def duration(seconds: float) -> str:
    """Seconds as "2h 05m", "3m 20s" or "45s"."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def table_cells(report: Report) -> tuple[list[str], list[list[str]]]:
    """Headings and rows of text cells (the total last) for a table renderer."""
    headings = [report.by.upper(), *(MEASURES[c].heading for c in report.columns), "NOTE"]
    lines = []
    for row in [*report.rows, report.total]:
        cells = [
            cell(row.values.get(c), MEASURES[c].unit, report.currency, note=row.note) for c in report.columns
        ]
        lines.append([row.key, *cells, row.note])
    return headings, lines


def to_table(report: Report) -> str:
    """The report as an aligned plain-text table with a header and footer lines."""
    headings, lines = table_cells(report)
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headings)]
    head = f"{report.kind} report by {report.by}, {report.period.label} (UTC)"
    out = [head, ""]
    for i, line in enumerate([headings, *lines]):
        if i == len(lines):  # the total follows a rule
            out.append("  ".join("-" * w for w in widths).rstrip())
        out.append(
            "  ".join(
                c.ljust(w) if j == 0 else c.rjust(w)
                for j, (c, w) in enumerate(zip(line, widths, strict=True))
            ).rstrip()
        )
    out.append("")
    out.append(f"priced by rate versions: {', '.join(report.rate_versions) or 'none'}")
    share = report.total.values.get("failed_share")
    if share is not None:
        out.append(f"spent on attempts that failed: {share * 100:.0f}%")
    cancelled = report.total.values.get("cancelled_share")
    if cancelled is not None:
        out.append(f"spent on attempts that were cancelled (not failures): {cancelled * 100:.0f}%")
    out.extend(report.notes)
    return "\n".join(out) + "\n"
