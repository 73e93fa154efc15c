"""The submit form: choices from the caller's projects and queues, Preview (the exact script, no
submission), Submit, errors next to their fields, and the spec as YAML and as `gw sbatch`."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from gateway.core.access.values import Principal
from gateway.core.envs.record import SITE_PROJECT
from gateway.core.spec.run_spec import build_spec
from gateway.errors import (
    BatchRejected,
    Forbidden,
    GatewayError,
    NotFound,
    QuotaExceeded,
    SpecError,
    SpecIssue,
    SubmitRejected,
)
from gateway.services.runs.batch_items import BatchItem
from gateway.services.runs.submit_form import ProjectChoices, QueueChoices
from gateway.web.deps import PREFIX, FormDep, PagesDep, PrincipalDep, services_of
from gateway.web.spec_form import (
    FormValues,
    place_issues,
    read_form,
    resource_limits,
    sbatch_command,
    spec_yaml,
)

router = APIRouter()
DATASET_VERSIONS_SHOWN = 5  # per dataset, newest first, besides @latest
LIMITS = resource_limits()  # the run spec's bounds on nodes, CPUs, memory (the form's input bounds)


def _pick(
    choices: list[ProjectChoices], values: FormValues
) -> tuple[ProjectChoices | None, QueueChoices | None]:
    """The project and queue the form shows: as chosen when they are on offer, else the first ones
    (a project change offers only that project's queues)."""
    projects = [p for p in choices if p.may_submit]
    project = next(
        (p for p in projects if p.name == values.shown.get("project")), projects[0] if projects else None
    )
    if project is None:
        return None, None
    queue = next((q for q in project.queues if q.name == values.shown.get("queue")), None)
    queue = queue or (project.queues[0] if project.queues else None)
    if project.name != values.shown.get("project") or (queue and queue.name != values.shown.get("queue")):
        values.shown["project"], values.shown["queue"] = project.name, queue.name if queue else ""
    return project, queue


def _dataset_refs(request: Request, principal: Principal, project: str) -> list[str]:
    """``[project/]name@latest`` and the newest versions of every dataset ``project`` may read."""
    services = services_of(request)
    refs = []
    for ds in services.datasets.list(principal=principal, project=project):
        base = ds.name if ds.project == project else f"{ds.project}/{ds.name}"
        refs.append(f"{base}@latest")
        versions = services.datasets.versions(ds.project, ds.name, principal=principal)
        refs += [
            f"{base}@{v.number}" for v in sorted(versions, key=lambda v: -v.number)[:DATASET_VERSIONS_SHOWN]
        ]
    return refs


def _environment_refs(request: Request, principal: Principal, project: str) -> list[str]:
    """``name@latest`` and each version of every environment of ``project`` (newest first), then
    the site's built-in ones (``site/lm-eval@N``: any run may name them) that are not failed."""
    catalog = services_of(request).environments.catalog
    refs = []
    for env in catalog.list(principal=principal, project=project):
        if env.latest is not None:
            refs.append(f"{env.name}@latest")
            refs += [f"{env.name}@{n}" for n in range(env.latest.number, 0, -1)][:DATASET_VERSIONS_SHOWN]
    if project == SITE_PROJECT:
        return refs
    for env in catalog.list(principal=principal, project=SITE_PROJECT):
        usable = [
            v for v in catalog.versions(env.project, env.name, principal=principal) if v.status != "failed"
        ]
        refs += [f"{SITE_PROJECT}/{env.name}@{v.number}" for v in sorted(usable, key=lambda v: -v.number)][
            :DATASET_VERSIONS_SHOWN
        ]
    return refs


def _form_context(request: Request, principal: Principal, values: FormValues) -> dict[str, Any]:
    services = services_of(request)
    choices = services.submit_form.choices(principal)
    project, queue = _pick(choices, values)
    quota = None
    if project is not None:
        try:
            # the chosen queue's cluster: each cluster enforces the caps on its own associations
            cluster = queue.cluster if queue is not None else None
            quota = services.submit_form.quota_left(principal, project.name, cluster=cluster)
        except GatewayError as exc:  # Slurm's accounting did not answer: the form still works
            values.error("quota", f"quota left unknown now: {exc}")
    if queue is not None:
        # keep shown values within what the queue offers
        if values.shown.get("gpus_per_node") not in [str(c) for c in queue.gpu_counts]:
            values.shown["gpus_per_node"] = "0"
        if values.shown.get("walltime_min") not in [str(w) for w in queue.walltimes_min]:
            values.shown["walltime_min"] = str(min(queue.walltimes_min, key=lambda w: abs(w - 60)))
    return {
        "choices": [p for p in choices if p.may_submit],
        "project": project,
        "queue": queue,
        "quota": quota,
        "datasets": _dataset_refs(request, principal, project.name) if project else [],
        "environments": _environment_refs(request, principal, project.name) if project else [],
        "v": values,
        "limits": LIMITS,
    }


def _defaults() -> FormValues:
    values = FormValues()
    values.shown = {
        "name": "",
        "project": "",
        "queue": "",
        "command": "",
        "script": "",
        "workdir": "",
        "nodes": "1",
        "cpus_per_task": "1",
        "mem_gb": "1",
        "gpus_per_node": "0",
        "gpu_type": "",
        "walltime_min": "60",
        "tags": "",
        "outputs": "",
        "metrics": "",
        "secrets": "",
        "sweep": "",
        "datasets": [],
        "environment": "",
    }
    values.params = []
    return values


@router.get("/submit")
def submit_page(request: Request, pages: PagesDep, principal: PrincipalDep) -> Response:
    """The empty form (the first project and queue the caller may submit to)."""
    values = _defaults()
    for key in ("project", "queue"):
        if request.query_params.get(key):
            values.shown[key] = request.query_params[key]
    return pages.render(
        request, "submit.html", principal, **_form_context(request, principal, values), out=None
    )


@router.post("/submit")
async def submit(request: Request, pages: PagesDep, principal: PrincipalDep, form: FormDep) -> Response:
    """``action``: refresh (new choices after a project or queue change), preview or submit."""
    action = str(form.get("action") or "refresh")
    values = await read_form(form)
    services = services_of(request)
    if not any(p.may_submit for p in services.submit_form.choices(principal)) and action != "refresh":
        raise Forbidden(f"{principal.user} may not submit runs to any project (a viewer reads only)")
    out: dict[str, Any] | None = None
    status = 200
    if action in ("preview", "submit") and not values.errors and values.sweep:
        swept = _sweep(request, principal, values, submit=action == "submit")
        if isinstance(swept, Response):
            return swept
        out = swept
    elif action in ("preview", "submit") and not values.errors:
        try:
            spec = build_spec(values.data, source="the web form")
            out = {"yaml": spec_yaml(spec), "sbatch": sbatch_command(spec)}
            if action == "preview":
                out["script"] = services.submit_form.preview(spec, principal=principal).text
            else:
                run = services.runs.submit(spec, principal=principal)
                return RedirectResponse(f"{PREFIX}/runs/{run.id}", status_code=303)
        except SpecError as exc:
            place_issues(values, exc.issues)
        except QuotaExceeded as exc:
            values.error("gpus_per_node", str(exc))
        except (SubmitRejected, NotFound, Forbidden) as exc:
            values.error("spec", str(exc))
    if values.errors:
        status = 422
    context = _form_context(request, principal, values)
    name = "_submit_form.html" if request.headers.get("HX-Request") else "submit.html"
    return pages.render(request, name, principal, status_code=status, **context, out=out)


def _sweep(
    request: Request, principal: Principal, values: FormValues, *, submit: bool
) -> Response | dict[str, Any] | None:
    """A sweep from the form: one run per point of its grid, submitted as one batch (all or none),
    each run tagged with the sweep's own tag; the run list of that tag after a submit. Preview shows
    the first point's script and how many runs it makes."""
    services = services_of(request)
    points = values.points()
    tag = f"sweep-{uuid.uuid4().hex[:8]}"
    datas = [{**d, "tags": [*d.get("tags", []), tag]} for d in values.point_specs()]
    try:
        first = build_spec(datas[0], source="the web form")
        out: dict[str, Any] = {"yaml": spec_yaml(first), "sbatch": sbatch_command(first), "points": points}
        if not submit:
            out["script"] = services.submit_form.preview(first, principal=principal).text
            return out
        services.runs.submit_batch([BatchItem(d) for d in datas], principal=principal)
        return RedirectResponse(f"{PREFIX}/runs?tag={quote(tag)}", status_code=303)
    except BatchRejected as exc:
        for index, error in exc.items[:10]:
            _place(values, error, f"run {index + 1} ({_point_text(points[index])})")
        if len(exc.items) > 10:
            values.error("sweep", f"... and {len(exc.items) - 10} more runs of the sweep refused")
    except GatewayError as exc:
        _place(values, exc, None)
    return None


def _point_text(point: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())


def _place(values: FormValues, exc: GatewayError, which: str | None) -> None:
    """An error of the sweep (of run ``which`` of it) next to the field it names."""
    if isinstance(exc, SpecError):
        issues = [
            SpecIssue(
                i.path.split(".spec.", 1)[-1] if i.path.startswith("items.") else i.path, i.message, i.value
            )
            for i in exc.issues
        ]
        if which:
            issues = [SpecIssue(i.path, f"{which}: {i.message}", i.value) for i in issues]
        place_issues(values, issues)
    elif isinstance(exc, QuotaExceeded):
        values.error("sweep", f"{which}: {exc}" if which else str(exc))
    else:
        values.error("spec", f"{which}: {exc}" if which else str(exc))
