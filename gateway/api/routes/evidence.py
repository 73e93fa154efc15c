"""Evidence routes: a run's, a release's or an artifact's evidence bundle, as one zip archive."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.routes.evals import ERRORS, Sha256
from gateway.api.routes.releases import Name, Project, Version
from gateway.api.routes.run_params import RunId
from gateway.core.evidence.bundle import zip_bytes
from gateway.errors import NotFound
from gateway.services.releases.evidence import Bundle

router = APIRouter(tags=["evidence"])
Redact = Annotated[
    bool, Query(description="Replace user names, OS users, hosts, path prefixes, env values, tokens")
]
ZIP: Responses = {
    200: {
        "content": {"application/zip": {}},
        "description": "evidence.json, index.html and manifest.json (docs/evidence-schema.md)",
    },
    404: ERRORS[404],
    422: ERRORS[422],
}


def _zip(bundle: Bundle, name: str) -> Response:
    return Response(
        zip_bytes(bundle.files),
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="evidence-{name}.zip"'},
    )


@router.get("/evidence/runs/{run_id}", response_class=Response, responses=ZIP, summary="A run's evidence")
def run_evidence(
    run_id: RunId, services: ServicesDep, principal: PrincipalDep, redact: Redact = False
) -> Response:
    """The run, its attempts, data, artifacts, their evaluations and releases, and the audit trail."""
    if not run_id.startswith("r-"):  # run ids are r-...; anything else would name another kind of target
        raise NotFound(f"no run {run_id!r}")
    return _zip(services.evidence.bundle(run_id, principal=principal, redacted=redact), run_id)


@router.get(
    "/evidence/releases/{project}/{name}/{version}",
    response_class=Response,
    responses=ZIP,
    summary="A release's evidence",
)
def release_evidence(
    project: Project,
    name: Name,
    version: Version,
    services: ServicesDep,
    principal: PrincipalDep,
    redact: Redact = False,
) -> Response:
    """The release, its artifact's run and evaluations, its alias moves and approvals, the audit trail."""
    target = f"{project}/{name}@{version}"
    bundle = services.evidence.bundle(target, principal=principal, redacted=redact)
    return _zip(bundle, f"{project}-{name}-{version}")


@router.get(
    "/evidence/artifacts/{sha256}", response_class=Response, responses=ZIP, summary="A file's evidence"
)
def artifact_evidence(
    sha256: Sha256, services: ServicesDep, principal: PrincipalDep, redact: Redact = False
) -> Response:
    """Every run that wrote the content, its evaluations and releases, and the audit trail."""
    return _zip(services.evidence.bundle(sha256, principal=principal, redacted=redact), sha256.lower()[:16])
