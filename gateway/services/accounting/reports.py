"""Usage, cost and efficiency reports over the priced accounting records (docs/reports.md).

``ReportService.report`` checks who may see what (members: their projects'
records; site admins and the operator: every record, attributed or not),
parses the period, has the store sum the records per dimension value in SQL
and builds the ``Report``; ``render`` turns it into table text, CSV, JSON or
the HTML page with its plots.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from gateway.adapters import plots
from gateway.core.access.policy import require, visible_projects
from gateway.core.access.values import Principal
from gateway.core.reports.html import report_page
from gateway.core.reports.periods import Period, parse_period
from gateway.core.reports.render import FORMATS, to_csv, to_data, to_table
from gateway.core.reports.rows import DIMENSIONS, KINDS, Charts, Dimension, Kind, Report, build_report
from gateway.errors import SpecError, SpecIssue
from gateway.store.access.access import AccessStore
from gateway.store.reports.reports import ReportStore, Scope

MEDIA_TYPES = {"table": "text/plain", "csv": "text/csv", "json": "application/json", "html": "text/html"}


@dataclass(frozen=True)
class Rendered:
    """A report in one format: its text and media type."""

    text: str
    media_type: str


def _bad(field: str, message: str, value: object) -> SpecError:
    return SpecError([SpecIssue(field, message, value)], location="query", what="report request")


def current_month(now: datetime) -> str:
    """``YYYY-MM`` of ``now`` in UTC: the period of a report that names none."""
    return now.astimezone(UTC).strftime("%Y-%m")


class ReportService:
    def __init__(self, store: ReportStore, access: AccessStore) -> None:
        self.store = store
        self.access = access

    def report(
        self,
        principal: Principal,
        kind: str,
        *,
        by: str = "project",
        period: str | None = None,
        project: str | None = None,
        charts: bool = False,
        now: datetime | None = None,
    ) -> Report:
        """The ``kind`` report by ``by`` over ``period`` (default: this month, UTC).

        ``project`` limits it to one project (NotFound unless the caller is in it or an admin);
        otherwise it covers every project the caller may read (admins: all records, including
        those of Slurm accounts no project claims). ``charts`` adds what the HTML page plots.
        Raises SpecError (location "query") for an unknown kind, dimension or a bad period.
        """
        if kind not in KINDS:
            raise _bad("kind", f"unknown report kind; use one of {', '.join(KINDS)}", kind)
        if by not in DIMENSIONS:
            raise _bad("by", f"unknown dimension; use one of {', '.join(DIMENSIONS)}", by)
        text = period or current_month(now or datetime.now(UTC))
        try:
            span = parse_period(text)
        except ValueError as exc:
            raise _bad("period", f"{exc}", text) from None
        scope = self._scope(principal, span, project)
        return self._build(kind, by, scope, charts=charts)

    def _scope(self, principal: Principal, period: Period, project: str | None) -> Scope:
        if project is not None:
            require(principal, "report.read", project, hide=True)
            self.access.project(project)  # NotFound for an admin naming no project
            return Scope(period, frozenset({project}))
        visible = visible_projects(principal)
        return Scope(period, None if visible is None else frozenset(visible))

    def _build(self, kind: Kind, by: Dimension, scope: Scope, *, charts: bool) -> Report:
        summed = self.store.summed(by, scope, waits=kind == "usage", telemetry=kind == "efficiency")
        groups, total, versions, currencies = (
            summed.groups,
            summed.total,
            summed.rate_versions,
            summed.currencies,
        )
        notes = []
        if len(currencies) > 1:
            notes.append(
                f"records were priced in several currencies ({', '.join(currencies)}): costs mix them"
            )
        caps, total_cap = self._caps(kind, by, scope, notes)
        return build_report(
            kind,
            by,
            scope.period,
            groups,
            total,
            rate_versions=versions,
            currency=currencies[0] if len(currencies) == 1 else ("/".join(currencies) or "-"),
            caps_gpu_hours=caps,
            total_cap_gpu_hours=total_cap,
            notes=notes,
            charts=self._charts(scope) if charts else None,
        )

    def _caps(
        self, kind: Kind, by: Dimension, scope: Scope, notes: list[str]
    ) -> tuple[dict[str, float], float | None]:
        """Monthly GPU-hour caps per project (usage by project over a calendar month only)."""
        if kind != "usage" or by != "project":
            return {}, None
        projects = [p for p in self.access.projects() if scope.projects is None or p.name in scope.projects]
        capped = {p.name: float(p.quota.gpu_hours_per_month) for p in projects if p.quota.gpu_hours_per_month}
        if not capped:
            return {}, None
        if not _is_month(scope.period):
            notes.append("GPU-hour caps are per calendar month: shown for a month period (YYYY-MM) only")
            return {}, None
        return capped, None

    def _charts(self, scope: Scope) -> Charts:
        series = self.store.gpu_hours_over_time(scope)
        cost_by_queue = {k: s.cost for k, s in self.store.summed("queue", scope).groups.items()}
        util_pct, util_gpu_hours = self.store.utilisation(scope)
        return Charts(
            bucket_starts=[start.isoformat() for start, _ in scope.period.buckets()],
            gpu_hours_by_project=series,
            cost_by_queue=cost_by_queue,
            utilisation_pct=util_pct,
            utilisation_gpu_hours=util_gpu_hours,
        )

    def render(self, report: Report, fmt: str) -> Rendered:
        """``report`` as ``fmt`` (table, csv, json, html); SpecError for another format. The HTML page
        needs a report built with ``charts=True`` to have its plots."""
        if fmt not in FORMATS:
            raise _bad("format", f"unknown format; use one of {', '.join(FORMATS)}", fmt)
        if fmt == "table":
            text = to_table(report)
        elif fmt == "csv":
            text = to_csv(report)
        elif fmt == "json":
            text = json.dumps(to_data(report), indent=2) + "\n"
        else:
            text = report_page(report, page_plots(report))
        return Rendered(text, MEDIA_TYPES[fmt])


def page_plots(report: Report) -> dict[str, bytes | None]:
    """The three plots of the HTML page as SVG (None: nothing to plot, or a report without charts)."""
    charts = report.charts or Charts()
    return {
        "usage_over_time": plots.usage_over_time_svg(charts),
        "cost_by_queue": plots.cost_by_queue_svg(charts, report.currency),
        "utilisation": plots.utilisation_svg(charts),
    }


def _is_month(period: Period) -> bool:
    start = period.start
    return start.day == 1 and period.label == start.strftime("%Y-%m")
