"""Hand-off routes: a model's MLflow mirror status, a run's MLflow tracking, hand-off items and replays."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.routes.evals import ERRORS, NAME_PATTERN
from gateway.api.routes.run_params import RunId
from gateway.api.schemas_handoff import HandoffItemPublic, MirrorStatusPublic, RunHandoffPublic
from gateway.errors import HandoffError
from gateway.services import Services
from gateway.services.handoff.outbox import HandoffService

router = APIRouter(tags=["handoff"])
Project = Annotated[str, Path(pattern=NAME_PATTERN, description="The model's project")]
Name = Annotated[str, Path(pattern=NAME_PATTERN, description="The model's name in its project")]
ItemId = Annotated[str, Path(pattern="^hx-[0-9a-f]{16}$", description="A hand-off item id (hx-...)")]
BAD_GATEWAY: Responses = {
    502: {"model": ERRORS[404]["model"], "description": "MLflow refused or did not answer"}
}


def _handoff(services: Services) -> HandoffService:
    if services.handoff is None:  # build_services always sets it; a hand-made Services may not
        raise HandoffError("this gateway has no hand-off service")
    return services.handoff


@router.get(
    "/models/{project}/{name}/mirror",
    response_model=MirrorStatusPublic,
    responses={404: ERRORS[404]},
    summary="A model's MLflow mirror and webhook deliveries",
)
def mirror_status(
    project: Project, name: Name, services: ServicesDep, principal: PrincipalDep
) -> MirrorStatusPublic:
    """Each release's MLflow version, each alias's mirror, the webhook deliveries with every try, and the
    drift between MLflow and the gateway (reported, never copied back)."""
    return MirrorStatusPublic.model_validate(
        _handoff(services).mirror_status(project, name, principal=principal)
    )


@router.get(
    "/runs/{run_id}/handoff",
    response_model=RunHandoffPublic,
    responses={404: ERRORS[404]},
    summary="A run's MLflow tracking hand-off",
)
def run_handoff(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> RunHandoffPublic:
    """The run's MLflow tracking link (once logged) and its hand-off items with every try."""
    return RunHandoffPublic.model_validate(_handoff(services).run_status(run_id, principal=principal))


@router.post(
    "/runs/{run_id}/handoff/mlflow",
    response_model=HandoffItemPublic,
    responses={403: ERRORS[403], 404: ERRORS[404], 409: ERRORS[409], **BAD_GATEWAY},
    summary="Log a run to MLflow tracking now",
)
def sync_run(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> HandoffItemPublic:
    """Log what MLflow lacks of the run's params, metrics, tags and artifact list (members); a second sync
    logs nothing. The try is recorded; when MLflow does not answer the item stays due for the scheduler."""
    return HandoffItemPublic.model_validate(_handoff(services).resync_run(run_id, principal=principal))


@router.get(
    "/handoff/items",
    response_model=list[HandoffItemPublic],
    responses={422: ERRORS[422]},
    summary="List hand-off items",
)
def list_items(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=NAME_PATTERN, description="Only this project's")] = None,
    status: Annotated[Literal["pending", "done", "failed", "dead"] | None, Query()] = None,
    kind: Annotated[
        Literal["mlflow.release", "mlflow.alias", "mlflow.run", "webhook"] | None, Query()
    ] = None,
) -> list[HandoffItemPublic]:
    """MLflow mirror jobs and webhook deliveries of the projects you may read (admins: all), oldest first."""
    found = _handoff(services).items(principal=principal, project=project, status=status, kind=kind)
    return [HandoffItemPublic.model_validate(i) for i in found]


@router.post(
    "/handoff/items/{item_id}/replay",
    response_model=HandoffItemPublic,
    responses={k: ERRORS[k] for k in (403, 404)},
    summary="Replay a mirror job or webhook delivery",
)
def replay(item_id: ItemId, services: ServicesDep, principal: PrincipalDep) -> HandoffItemPublic:
    """Try the item again now (site admins; audited): a dead one, or a delivered event sent once more
    with the same event id (receivers de-duplicate on it)."""
    return HandoffItemPublic.model_validate(_handoff(services).replay(item_id, principal=principal))
