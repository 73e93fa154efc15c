"""One run's page: state and timeline, why it waits or failed, attempts, cost, GPU telemetry, inputs,
script, log tail, artifacts, metrics and lineage; cancel and rerun (for those allowed; the services
refuse others)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import RedirectResponse, Response

from gateway.core import names
from gateway.core.access.policy import allowed
from gateway.core.access.values import Principal
from gateway.core.runs.rerun import command_text
from gateway.core.runs.values import Run
from gateway.core.slurm.states import LIVE
from gateway.errors import Forbidden, GatewayError, NotFound, SpecError
from gateway.services.lineage.metric_plots import run_figures
from gateway.web import svg
from gateway.web.deps import PREFIX, FormDep, PagesDep, PrincipalDep, services_of
from gateway.web.routes_compare import data_uri
from gateway.web.run_usage import usage_sections

router = APIRouter()
RunId = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]
LOG_TAIL_LINES = 200  # what the page shows of a log, at most (the log service caps a read at 1 MiB)
# A failure class's suggested change for the rerun form, from the failed attempt's numbers.
SUGGESTIONS = {
    "out_of_memory": lambda run: [f"resources.mem_gb={_double(run.spec.resources.mem_gb or 1.0)}"],
    "time_limit": lambda run: [f"resources.walltime_min={run.spec.resources.walltime_min * 2}"],
}


def _double(value: float) -> float:
    return round(value * 2, 3)


def may_cancel(principal: Principal, run: Run) -> bool:
    """Whether to offer the cancel button (the service checks again)."""
    action = "run.cancel.own" if run.submitter == principal.user else "run.cancel.any"
    return run.state in LIVE and allowed(principal, action, run.project)


def rerun_suggestion(run: Run) -> list[str]:
    """The changes the rerun form starts with: what the failure class suggests, else none."""
    latest = run.latest
    klass = (latest.failure or {}).get("class") if latest else None
    make = SUGGESTIONS.get(klass or "")
    return make(run) if make else []


def metric_figures(series: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's metric charts (losses together, the learning rate apart, no step counters), each as
    its title, the series it holds and a ``data:`` image."""
    return [{"title": f.title, "labels": f.labels, "src": data_uri(f.svg)} for f in run_figures(series)]


def _lineage(request: Request, principal: Principal, run: Run) -> dict[str, Any]:
    """Up to the data (the run's trace), down to its artifacts' evals and releases."""
    services = services_of(request)
    record = services.lineage.trace_run(run.id, principal=principal)
    outputs = services.lineage.outputs(run.id, principal=principal)
    down = []
    for artifact in outputs["artifacts"]:
        releases = services.releases.releases_of_artifact(artifact["sha256"], principal=principal)
        try:
            evals = services.eval_trace.artifact_evals(artifact["sha256"], principal=principal)["eval_runs"]
        except NotFound:
            evals = []
        down.append({"artifact": artifact, "releases": releases, "evals": evals})
    return {"record": record, "outputs": outputs, "down": down}


def _status_context(request: Request, principal: Principal, run_id: str) -> dict[str, Any]:
    view = services_of(request).runs.show(run_id, principal=principal)
    run = view.run
    return {
        "run": run,
        "view": view,
        "live": run.state in LIVE,
        "timeline": svg.timeline(run.attempts),
        "may_cancel": may_cancel(principal, run),
        "may_rerun": allowed(principal, "run.submit", run.project),
        # someone else's run: the form shows what it runs and asks whose identity it runs under
        "rerun_other": run.submitter != principal.user,
        "rerun_as_owner": allowed(principal, "run.rerun.any", run.project),
        "rerun_command": command_text(run.spec),
    }


@router.get("/runs/{run_id}")
def run_page(request: Request, run_id: RunId, pages: PagesDep, principal: PrincipalDep) -> Response:
    """The whole page."""
    context = _page_context(request, principal, run_id)
    return pages.render(
        request,
        "run.html",
        principal,
        **context,
        suggestion="\n".join(rerun_suggestion(context["run"])),
        rerun_error=None,
    )


def _page_context(request: Request, principal: Principal, run_id: str) -> dict[str, Any]:
    """Everything run.html shows of the run but the rerun form's text and error: the status part,
    usage and cost, lineage with the metric charts, the environment and the hand-off."""
    services = services_of(request)
    context = _status_context(request, principal, run_id)
    run = context["run"]
    lineage = _lineage(request, principal, run)
    return {
        **context,
        **usage_sections(services, principal, run),
        "lineage": lineage,
        "metric_figures": metric_figures(lineage["outputs"]["series"]),
        "environment": services.environments.of_run(run.id, principal=principal),
        "handoff": _handoff(request, principal, run_id),
    }


def _handoff(request: Request, principal: Principal, run_id: str) -> dict[str, Any] | None:
    """The run's MLflow tracking link and hand-off items (None without a hand-off service)."""
    handoff = services_of(request).handoff
    return handoff.run_status(run_id, principal=principal) if handoff else None


@router.get("/runs/{run_id}/status")
def run_status(
    request: Request, run_id: RunId, pages: PagesDep, principal: PrincipalDep, was_live: bool = False
) -> Response:
    """The state, timeline, waiting and attempts section alone (htmx polls it while the run lives).
    When a run the page showed live has ended, htmx reloads the whole page (failure, artifacts)."""
    context = _status_context(request, principal, run_id)
    if was_live and not context["live"] and request.headers.get("HX-Request"):
        return Response(status_code=200, headers={"HX-Refresh": "true"})
    return pages.render(request, "_run_status.html", principal, **context)


@router.get("/runs/{run_id}/log")
def run_log(
    request: Request,
    run_id: RunId,
    pages: PagesDep,
    principal: PrincipalDep,
    stream: Literal["stdout", "stderr"] = "stdout",
    attempt: Annotated[int | None, Query(ge=1, le=10_000)] = None,
    task: Annotated[str | None, Query(pattern=r"^\d{1,7}$")] = None,
) -> Response:
    """The last lines of a log (followed by htmx while the run lives); an array's first task unless
    ``task`` names another (one the array does not have is said in the log box)."""
    services = services_of(request)
    run = services.runs.get(run_id, principal=principal)
    chunk = None
    problem = None
    if run.attempts:
        try:
            chunk = services.logs.read(
                run_id,
                principal=principal,
                stream=stream,
                attempt_number=attempt,
                task=task,
                tail_lines=LOG_TAIL_LINES,
            )
        except GatewayError as exc:  # the run host did not answer: say so in the log box
            problem = str(exc)
    return pages.render(
        request,
        "_log.html",
        principal,
        run=run,
        chunk=chunk,
        problem=problem,
        stream=stream,
        live=run.state in LIVE,
    )


@router.post("/runs/{run_id}/cancel")
def cancel(request: Request, run_id: RunId, principal: PrincipalDep, form: FormDep) -> Response:
    """Cancel, then back to the run's page."""
    services_of(request).runs.cancel(run_id, principal=principal)
    return RedirectResponse(f"{PREFIX}/runs/{run_id}", status_code=303)


@router.post("/runs/{run_id}/rerun")
def rerun(
    request: Request, run_id: RunId, pages: PagesDep, principal: PrincipalDep, form: FormDep
) -> Response:
    """A derived run with the form's ``key.path=value`` changes (one a line); its page on success,
    this page with the error next to the changes otherwise. Another person's run reruns as its owner,
    or, with the form's ``as_me`` box ticked (next to the command it runs), as the caller."""
    changes = [line.strip() for line in str(form.get("changes") or "").splitlines() if line.strip()]
    as_me = form.get("as_me") == "yes"
    services = services_of(request)
    try:
        new = services.runs.rerun(run_id, principal=principal, changes=changes, as_me=as_me)
    except (SpecError, ValueError, Forbidden) as exc:
        message = "; ".join(str(i) for i in exc.issues) if isinstance(exc, SpecError) else str(exc)
        return pages.render(
            request,
            "run.html",
            principal,
            status_code=403 if isinstance(exc, Forbidden) else 422,
            **_page_context(request, principal, run_id),
            suggestion="\n".join(changes),
            rerun_error=message,
        )
    return RedirectResponse(f"{PREFIX}/runs/{new.id}", status_code=303)
