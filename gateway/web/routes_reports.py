"""The reports page: a usage, cost or efficiency report (``ReportService``, docs/reports.md) chosen in a
form, shown as its table with the totals and the rate versions that priced it, and its plots (the
same SVGs the HTML report embeds, as ``data:`` images, which the pages' CSP allows); and the report
downloaded as CSV, JSON or HTML with the browser's session (the API's route wants a bearer token).

The service checks who may see what (members: their projects' records; admins: every record) and
says what is wrong with a kind, dimension, period or project; the page shows that next to the field.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from gateway.core.access.values import Principal
from gateway.core.reports.html import NOTHING_TO_PLOT, PLOT_TITLES
from gateway.core.reports.periods import RELATIVE_HELP, resolve_period
from gateway.core.reports.render import cell
from gateway.core.reports.rows import DIMENSIONS, KINDS, MEASURES, Report, Row
from gateway.errors import NotFound, SpecError
from gateway.services import Services
from gateway.services.accounting.reports import current_month, page_plots
from gateway.web.deps import PagesDep, PrincipalDep, services_of

router = APIRouter()
# Plain text up to a bound: what is valid the service checks, so the page can say it next to the field.
Text = Annotated[str | None, Query(max_length=200)]
DOWNLOADS = ("csv", "json", "html")


@dataclass(frozen=True)
class Asked:
    """What the form asks for (as typed; the service validates it)."""

    kind: str
    by: str
    period: str
    project: str

    def query(self, **more: str) -> str:
        """The form's values (and ``more``) as a query string, empty ones left out."""
        values = {"kind": self.kind, "by": self.by, "period": self.period, "project": self.project, **more}
        return urlencode({k: v for k, v in values.items() if v})


def _asked(kind: str | None, by: str | None, period: str | None, project: str | None) -> Asked:
    return Asked(
        kind=(kind or "cost").strip(),
        by=(by or "project").strip(),
        period=_period(period),
        project=(project or "").strip(),
    )


def _period(typed: str | None) -> str:
    """The period as the service takes it: the words ``gw report`` takes too (today, this-week, a
    single day ...) turned into their month, week or range; anything else as typed (the service
    says what is wrong with it)."""
    text = (typed or "").strip()
    if not text:
        return current_month(datetime.now(UTC))
    try:
        return resolve_period(text, today=datetime.now(UTC).date()).label
    except ValueError:
        return text


def _report(
    services: Services, principal: Principal, asked: Asked, projects: list[str]
) -> tuple[Report | None, dict[str, list[str]]]:
    """The report (with what its plots need), or None and the service's messages per form field
    (kind, by, period, project); ``projects``: those the caller may read, named when one is refused."""
    try:
        built = services.reports.report(
            principal,
            asked.kind,
            by=asked.by,
            period=asked.period,
            project=asked.project or None,
            charts=True,
        )
    except SpecError as exc:
        errors: dict[str, list[str]] = {}
        for issue in exc.issues:
            errors.setdefault(issue.path, []).append(issue.message)
        return None, errors
    except NotFound:  # a project that does not exist, or that the caller is not in: the same answer
        valid = f"yours: {', '.join(projects)}" if projects else "you are in no project"
        return None, {"project": [f"no project {asked.project!r} that you may read ({valid}); empty: all"]}
    return built, {}


def _line(row: Row, report: Report) -> dict[str, Any]:
    """One table line: per column its text for people and its exact value (``data-value``)."""
    cells = []
    for column in report.columns:
        value = row.values.get(column)
        text = cell(value, MEASURES[column].unit, report.currency, note=row.note)
        exact = "" if value is None else (str(value) if isinstance(value, int) else repr(float(value)))
        cells.append({"column": column, "text": text, "value": exact})
    return {"key": row.key, "cells": cells, "note": row.note}


def _plots(report: Report) -> list[dict[str, str | None]]:
    """The HTML report's three plots: title, a ``data:`` URI of the SVG (None: nothing to plot), why not."""
    shown = []
    for name, svg in page_plots(report).items():
        src = None if svg is None else "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
        shown.append({"name": name, "title": PLOT_TITLES[name], "src": src, "empty": NOTHING_TO_PLOT[name]})
    return shown


@router.get("/reports")
def reports_page(
    request: Request,
    pages: PagesDep,
    principal: PrincipalDep,
    kind: Text = None,
    by: Text = None,
    period: Text = None,
    project: Text = None,
) -> Response:
    """The form and, for valid values, the report (default: this month's cost by project); invalid
    values are answered 422 with the service's message next to their field."""
    services = services_of(request)
    asked = _asked(kind, by, period, project)
    projects = [p.name for p in services.projects.visible(principal)]
    report, errors = _report(services, principal, asked, projects)
    context: dict[str, Any] = {
        "asked": asked,
        "kinds": KINDS,
        "dimensions": DIMENSIONS,
        "period_help": RELATIVE_HELP,
        "projects": projects,
        "v": {"errors": errors},
        "report": report,
    }
    if report is not None:
        context.update(
            headings=[MEASURES[c].heading for c in report.columns],
            rows=[_line(r, report) for r in report.rows],
            total=_line(report.total, report),
            plots=_plots(report),
            downloads=[(fmt, asked.query(format=fmt)) for fmt in DOWNLOADS],
        )
    return pages.render(request, "reports.html", principal, status_code=422 if errors else 200, **context)


@router.get("/reports/download")
def reports_download(
    request: Request,
    principal: PrincipalDep,
    format: Annotated[Literal["csv", "json", "html"], Query(description="The file's form")],  # noqa: A002
    kind: Text = None,
    by: Text = None,
    period: Text = None,
    project: Text = None,
) -> Response:
    """The report as a CSV, JSON or HTML file (what ``GET /reports/{kind}?format=`` answers), as an
    attachment; a value the service refuses is an error page (422), a hidden project 404."""
    services = services_of(request)
    asked = _asked(kind, by, period, project)
    built = services.reports.report(
        principal,
        asked.kind,
        by=asked.by,
        period=asked.period,
        project=asked.project or None,
        charts=format == "html",
    )
    rendered = services.reports.render(built, format)
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", f"{built.kind}-by-{built.by}-{built.period.label}")
    return Response(
        rendered.text,
        media_type=rendered.media_type,
        headers={"Content-Disposition": f'attachment; filename="{stem}.{format}"'},
    )
