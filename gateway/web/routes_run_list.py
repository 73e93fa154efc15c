"""The runs list: filters, cursor pages, and a rows fragment htmx polls so states update in place."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from gateway.core import names
from gateway.core.runs.paging import CURSOR_PATTERN, Cursor
from gateway.core.runs.values import RunFilter
from gateway.core.slurm.states import LIVE, RunState
from gateway.web.deps import PagesDep, PrincipalDep, services_of

router = APIRouter()
NamePattern = f"^{names.NAME.pattern}$"
TagPattern = f"^{names.TAG.pattern}$"
DATE = r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?)?$"


def _when(text: str | None, *, day_end: bool = False) -> datetime | None:
    """A date (or date and time) of the filter form as an aware UTC datetime; with ``day_end`` a bare
    date means the end of that day (the list's "until" includes the day it names)."""
    if not text:
        return None
    when = datetime.fromisoformat(text).replace(tzinfo=UTC)
    return when + timedelta(days=1) if day_end and "T" not in text else when


def _query(request: Request, **override: str | None) -> str:
    params = {k: v for k, v in request.query_params.items() if v}
    params.update({k: v for k, v in override.items() if v is not None})
    for k, v in override.items():
        if v is None:
            params.pop(k, None)
    return urlencode(params)


@router.get("/runs")
def runs_list(
    request: Request,
    pages: PagesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=NamePattern)] = None,
    state: RunState | None = None,
    submitter: Annotated[str | None, Query(pattern=TagPattern)] = None,
    tag: Annotated[str | None, Query(pattern=TagPattern)] = None,
    since: Annotated[str | None, Query(pattern=DATE)] = None,
    until: Annotated[str | None, Query(pattern=DATE)] = None,
    cursor: Annotated[str | None, Query(pattern=CURSOR_PATTERN)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    fragment: bool = False,
) -> Response:
    """The list (or, with ``fragment``, only its rows, for htmx to swap in while runs are live)."""
    where = RunFilter(
        project=project or None,
        state=state,
        submitter=submitter or None,
        tag=tag or None,
        since=_when(since),
        until=_when(until, day_end=True),
        cursor=Cursor.decode(cursor) if cursor else None,
        limit=limit,
    )
    page = services_of(request).runs.list(principal=principal, where=where)
    live = any(r.state in LIVE for r in page.items)
    rows_url = f"{request.url.path}?{_query(request, fragment='1')}"
    if fragment:
        return pages.render(request, "_run_rows.html", principal, page=page, live=live, rows_url=rows_url)
    projects = [p.name for p in services_of(request).projects.visible(principal)]
    next_url = (
        f"{request.url.path}?{_query(request, cursor=page.next_cursor.encode(), fragment=None)}"
        if page.next_cursor
        else None
    )
    return pages.render(
        request,
        "runs.html",
        principal,
        page=page,
        live=live,
        rows_url=rows_url,
        next_url=next_url,
        first_url=f"{request.url.path}?{_query(request, cursor=None, fragment=None)}" if cursor else None,
        projects=projects,
        states=[s.value for s in RunState],
        f={
            "project": project or "",
            "state": state.value if state else "",
            "submitter": submitter or "",
            "tag": tag or "",
            "since": since or "",
            "until": until or "",
        },
    )
