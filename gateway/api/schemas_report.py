"""API schemas of the reports (``GET /reports/{kind}``): the shape of ``core.report_render.to_data``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from gateway.core.reports.render import to_data
from gateway.core.reports.rows import Report


class PeriodPublic(BaseModel):
    label: str = Field(description="As asked for, normalised: 2026-11, 2026-W47 or 2026-11-01..2026-11-15")
    start: str = Field(description="Inclusive, ISO 8601 UTC")
    end: str = Field(description="Exclusive, ISO 8601 UTC")


class ColumnPublic(BaseModel):
    key: str = Field(description="The key of this measure in each row's values")
    heading: str
    unit: Literal["h", "money", "s", "share", "pct", "count"] = Field(
        description="h: hours; money: in the report's currency; s: seconds; share: a fraction 0..1; "
        "pct: percent 0..100; count: a number of records"
    )


class RowPublic(BaseModel):
    key: str = Field(description="The dimension's value (a project, user, project/queue, run id, release)")
    values: dict[str, float | int | None] = Field(
        description="One value per column key; null: not known (no telemetry, no cap, no wait)"
    )
    note: str = Field(description='e.g. "no telemetry"; empty when nothing to say')


class ChartsPublic(BaseModel):
    bucket_starts: list[str]
    gpu_hours_by_project: dict[str, list[float]]
    cost_by_queue: dict[str, float]
    utilisation_pct: list[float]
    utilisation_gpu_hours: list[float]


class ReportPublic(BaseModel):
    kind: Literal["usage", "cost", "efficiency"]
    by: Literal["project", "user", "queue", "run", "release", "cluster"]
    period: PeriodPublic
    columns: list[ColumnPublic]
    rows: list[RowPublic]
    total: RowPublic = Field(description="Summed over the records once (a release report's rows may overlap)")
    rate_versions: list[str] = Field(description="Every rate table version that priced a counted record")
    currency: str
    telemetry: bool = Field(description="Whether any counted record has GPU telemetry")
    notes: list[str]
    charts: ChartsPublic | None = Field(description="What the HTML page plots (with charts=true)")

    @classmethod
    def of(cls, report: Report) -> ReportPublic:
        data: dict[str, Any] = to_data(report)
        return cls.model_validate(data)
