"""The compare pages: one metric of several runs on one chart (as experiment trackers plot a run
comparison), and two eval results' per-task paired differences with their intervals (the page
``gw eval compare --html`` writes, served). Both read through the services, which check who may read
what and say what is wrong with a run id or a metric; the page shows that next to the form.
"""

from __future__ import annotations

import base64
import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from gateway.core.access.values import Principal
from gateway.errors import GatewayError, NotFound, SpecError
from gateway.services.lineage.metric_plots import MAX_COMPARED, compare, eval_difference_svg
from gateway.web.deps import PagesDep, PrincipalDep, services_of
from gateway.web.routes_envs import diff_context

router = APIRouter()
Text = Annotated[str | None, Query(max_length=2000)]
RunIds = Annotated[list[str] | None, Query(max_length=MAX_COMPARED * 2)]


def data_uri(svg: bytes | None) -> str | None:
    """An SVG as a ``data:`` image (the pages' CSP allows those, and nothing fetched elsewhere)."""
    return None if svg is None else "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")


def _ids(run: list[str] | None, runs: str | None) -> list[str]:
    """The run ids asked for: repeated ``run`` parameters and the form's ``runs`` text (spaces, commas)."""
    typed = [r for r in re.split(r"[\s,]+", runs or "") if r]
    return list(dict.fromkeys([*(run or []), *typed]))


@router.get("/compare")
def compare_runs(
    request: Request,
    pages: PagesDep,
    principal: PrincipalDep,
    run: RunIds = None,
    runs: Text = None,
    metric: Text = None,
) -> Response:
    """``metric`` (default: the one most of them have) of the runs named, one line per run."""
    ids = _ids(run, runs)
    context: dict[str, Any] = {
        "ids": ids,
        "asked_metric": metric or "",
        "error": None,
        "compared": None,
        "src": None,
        "env_diff": None,
    }
    status = 200
    if ids:
        try:
            compared = compare(
                services_of(request).lineage, ids, (metric or "").strip() or None, principal=principal
            )
        except SpecError as exc:
            context["error"] = "; ".join(str(i) for i in exc.issues)
            status = 422
        except NotFound as exc:
            context["error"] = str(exc)
            status = 404
        else:
            context.update(compared=compared, src=data_uri(compared.figure.svg if compared.figure else None))
            context["env_diff"] = _environment_diff(request, ids, principal)
    return pages.render(request, "compare.html", principal, status_code=status, **context)


def _environment_diff(request: Request, ids: list[str], principal: Principal) -> dict[str, Any] | None:
    """Two runs' dependency change record (the environment versions they ran in); None for other counts
    of runs, or when either named no registered environment (the reason is shown instead)."""
    if len(ids) != 2:
        return None
    try:
        found = services_of(request).environments.diff(ids[0], ids[1], project=None, principal=principal)
    except (SpecError, NotFound) as exc:
        return {"missing": "; ".join(str(i) for i in exc.issues) if isinstance(exc, SpecError) else str(exc)}
    return diff_context(found)


@router.get("/evals/compare")
def compare_evals(
    request: Request, pages: PagesDep, principal: PrincipalDep, a: Text = None, b: Text = None
) -> Response:
    """Result ``a`` against result ``b`` on their suite version: the verdict, a plot of each task's
    paired difference with its interval, and the per-task table."""
    a, b = (a or "").strip(), (b or "").strip()
    context: dict[str, Any] = {"a": a, "b": b, "cmp": None, "src": None, "error": None}
    status = 200
    if a and b:
        try:
            cmp = services_of(request).gates.compare(a, b, principal=principal)
        except SpecError as exc:
            context["error"] = "; ".join(str(i) for i in exc.issues)
            status = 422
        except GatewayError as exc:  # NotFound, a refused pair (other suite versions): said on the page
            context["error"] = str(exc)
            status = 404 if isinstance(exc, NotFound) else 409
        else:
            context.update(cmp=cmp, src=data_uri(eval_difference_svg(cmp)))
    elif a or b:
        context["error"] = "name both results: a (the candidate) and b (the one it is compared with)"
        status = 422
    return pages.render(request, "eval_compare.html", principal, status_code=status, **context)
