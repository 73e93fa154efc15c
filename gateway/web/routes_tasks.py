"""A sweep's compare page: one metric of every task on one chart, and a table of each task's sweep
point against its final metrics, best first (``/ui/runs/{id}/tasks``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from gateway.core import names
from gateway.core.runs.tasks import default_order, metric_names, rank_tasks
from gateway.services.lineage.metric_plots import sweep_figure, task_label
from gateway.web.deps import PagesDep, PrincipalDep, services_of
from gateway.web.routes_compare import data_uri

router = APIRouter()
RunId = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]


@router.get("/runs/{run_id}/tasks")
def sweep_tasks_page(
    request: Request,
    run_id: RunId,
    pages: PagesDep,
    principal: PrincipalDep,
    metric: Annotated[str | None, Query(max_length=200)] = None,
    order: Literal["min", "max"] | None = None,
    attempt: Annotated[int | None, Query(ge=1, le=10_000)] = None,
) -> Response:
    """Every task of the sweep, best first by ``metric`` (default: a loss if there is one, else the
    first metric any task has); a metric no task has is said above the table, which then stays in
    index order."""
    run, shown, tasks = services_of(request).tasks.tasks(run_id, principal=principal, attempt_number=attempt)
    metrics = metric_names(tasks)
    error = None
    asked = (metric or "").strip() or None
    if asked is not None and asked not in metrics:
        error = f"no task has a metric {asked!r}; they have: {', '.join(metrics) or 'none yet'}"
        asked = None
    chosen = asked or _default_metric(metrics)
    best = order or (default_order(chosen) if chosen else "min")
    ranked = rank_tasks(tasks, chosen, best) if chosen else tasks
    figure = sweep_figure(ranked, chosen) if chosen else None
    keys = list(dict.fromkeys(k for t in tasks for k in t.point))
    context: dict[str, Any] = {
        "run": run,
        "attempt": shown,
        "tasks": ranked,
        "labels": {t.index: task_label(t) for t in tasks},
        "point_keys": keys,
        "metrics": metrics,
        "metric": chosen,
        "order": best,
        "error": error,
        "src": data_uri(figure.svg) if figure else None,
        "missing": [t.index for t in tasks if chosen and chosen not in t.metrics],
    }
    return pages.render(request, "sweep_tasks.html", principal, status_code=422 if error else 200, **context)


def _default_metric(metrics: list[str]) -> str | None:
    """The metric a sweep is compared on when none is named: a loss first, else the first one."""
    losses = [m for m in metrics if "loss" in m.lower()]
    return (losses or metrics)[0] if metrics else None
