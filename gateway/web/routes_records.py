"""Datasets and their versions (with a diff), eval runs and results with gate decisions, and
released models with their releases and alias history."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from gateway.core import names
from gateway.web.deps import PagesDep, PrincipalDep, services_of

router = APIRouter()
Name = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]
Selector = Annotated[str | None, Query(pattern=r"^(latest|v?\d{1,9}|sha256:[0-9a-f]{8,64})$")]
ResultId = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]


@router.get("/datasets")
def datasets(request: Request, pages: PagesDep, principal: PrincipalDep) -> Response:
    """Every dataset the caller may read, with its newest version."""
    found = services_of(request).datasets.list(principal=principal)
    return pages.render(request, "datasets.html", principal, datasets=found)


@router.get("/datasets/{project}/{name}")
def dataset_page(
    request: Request,
    project: Name,
    name: Name,
    pages: PagesDep,
    principal: PrincipalDep,
    old: Selector = None,
    new: Selector = None,
) -> Response:
    """A dataset's versions (newest first); with ``old`` and ``new``, what changed between them."""
    services = services_of(request)
    dataset = services.datasets.get(project, name, principal=principal)
    versions = sorted(services.datasets.versions(project, name, principal=principal), key=lambda v: -v.number)
    diff = None
    if old and new:
        a, b, changes = services.datasets.diff(project, name, old, new, principal=principal)
        diff = {"old": a, "new": b, "changes": changes}
    return pages.render(
        request, "dataset.html", principal, dataset=dataset, versions=versions, diff=diff, old=old, new=new
    )


@router.get("/evals")
def evals(request: Request, pages: PagesDep, principal: PrincipalDep) -> Response:
    """Eval runs the caller may read, newest first, with links to their results."""
    found = services_of(request).evals.list(principal=principal, limit=200)
    return pages.render(request, "evals.html", principal, eval_runs=found)


@router.get("/evals/results/{result_id}")
def eval_result(request: Request, result_id: ResultId, pages: PagesDep, principal: PrincipalDep) -> Response:
    """One result: its suite version, per task its values, the review state (approving reviews
    against what the suite's gate requires), the reviews, and the gate decisions it took part in."""
    services = services_of(request)
    view = services.gates.show(result_id, principal=principal)
    suite = services.eval_suites.version_by_id(view.result.suite_version_id, principal=principal)
    gates = sorted(view.gates, key=lambda g: g.decided_at, reverse=True)  # newest first
    return pages.render(request, "eval_result.html", principal, view=view, suite=suite, gates=gates)


@router.get("/models")
def models(request: Request, pages: PagesDep, principal: PrincipalDep) -> Response:
    """Registered models the caller may read."""
    found = services_of(request).releases.models(principal=principal)
    return pages.render(request, "models.html", principal, models=found)


@router.get("/models/{project}/{name}")
def model_page(
    request: Request, project: Name, name: Name, pages: PagesDep, principal: PrincipalDep
) -> Response:
    """A model: its releases, where each alias points now, and every alias move (oldest first)."""
    services = services_of(request)
    model = services.releases.model(project, name, principal=principal)
    releases = services.releases.releases(project, name, principal=principal)
    aliases = services.promotions.aliases(project, name, principal=principal)
    history = services.promotions.history(project, name, principal=principal)
    return pages.render(
        request,
        "model.html",
        principal,
        model=model,
        releases=releases,
        aliases=aliases,
        events=history["events"],
        policies=services.alias_policies.policies(project, name, principal=principal),
        handoff=services.handoff.mirror_status(project, name, principal=principal, check=False)
        if services.handoff
        else None,
    )
