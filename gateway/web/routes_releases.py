"""A model's page and its release actions: request a promotion, approve or reject a request with a
note, promote (the policy's missing pieces shown before the button), deprecate, withdraw or reactivate
a release, and the lead's override of a failed gate with its required reason.

Every action is a CSRF-checked form post that calls the same service as the API's route
(``PromotionService``, ``ReleaseService``), so the same rules hold: who may act, what the policy asks
for, what a reason must be. A refusal (the service's Conflict, Forbidden or SpecError) comes back on the
page next to the form, in the service's words and with the API's status; success redirects to the
model's page.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import RedirectResponse, Response

from gateway.core import names
from gateway.core.access.policy import allowed
from gateway.core.access.values import Principal
from gateway.error_status import status_for
from gateway.errors import GatewayError, SpecError, SpecIssue
from gateway.web.deps import PREFIX, FormDep, PagesDep, PrincipalDep, services_of

router = APIRouter()
Name = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]
Alias = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]
RequestId = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]
Version = Annotated[int, Path(ge=1, le=10**9)]
STATUSES = ("deprecated", "withdrawn", "active")


def _text(form: Any, key: str, limit: int = 2000) -> str:
    value = form.get(key)
    return value.strip()[:limit] if isinstance(value, str) else ""


def _version(form: Any) -> int | str:
    """The form's version as a number, or the text as typed (the service says what is wrong with it)."""
    text = _text(form, "version", 20).removeprefix("v")
    return int(text) if text.isdigit() else text


def _words(exc: GatewayError) -> str:
    if isinstance(exc, SpecError):
        return "; ".join(str(i) for i in exc.issues)
    return str(exc)


def _model_context(request: Request, principal: Principal, project: str, name: str) -> dict[str, Any]:
    services = services_of(request)
    model = services.releases.model(project, name, principal=principal)
    releases = services.releases.releases(project, name, principal=principal)
    policies = services.alias_policies.policies(project, name, principal=principal)
    aliases = services.promotions.aliases(project, name, principal=principal)
    return {
        "model": model,
        "releases": releases,
        "aliases": aliases,
        "events": services.promotions.history(project, name, principal=principal)["events"],
        "policies": policies,
        "requests": services.promotions.requests(project, name, principal=principal),
        "alias_names": sorted({p.alias for p in policies} | {a.alias for a in aliases}),
        "may": {
            action: allowed(principal, f"release.{action}", project)
            for action in ("request", "approve", "status", "promote", "override")
        },
        "statuses": STATUSES,
        "action_error": None,
        "action_form": None,
        "handoff": services.handoff.mirror_status(project, name, principal=principal, check=False)
        if services.handoff
        else None,
    }


@router.get("/models/{project}/{name}")
def model_page(
    request: Request, project: Name, name: Name, pages: PagesDep, principal: PrincipalDep
) -> Response:
    """A model: its releases, where each alias points now, its protection policies, the promotion
    requests, every alias move (oldest first), and the forms for what the caller may do."""
    return pages.render(request, "model.html", principal, **_model_context(request, principal, project, name))


def _refused(
    request: Request,
    pages: PagesDep,
    principal: Principal,
    project: str,
    name: str,
    exc: GatewayError,
    form: str,
) -> Response:
    """The model's page with the service's refusal next to the form that asked (the API's status)."""
    status, _ = status_for(exc)
    context = _model_context(request, principal, project, name)
    context.update(action_error=_words(exc), action_form=form)
    return pages.render(request, "model.html", principal, status_code=status, **context)


def _back(project: str, name: str, anchor: str) -> Response:
    return RedirectResponse(f"{PREFIX}/models/{project}/{name}#{anchor}", status_code=303)


@router.post("/models/{project}/{name}/promotions")
def request_promotion(
    request: Request, project: Name, name: Name, pages: PagesDep, principal: PrincipalDep, form: FormDep
) -> Response:
    """Ask for an alias to point at a release (``PromotionService.request``: members)."""
    version = _version(form)
    try:
        if not isinstance(version, int):
            raise SpecError([SpecIssue("version", "a release version number, such as 2", version)])
        services_of(request).promotions.request(
            project,
            name,
            version,
            _text(form, "alias", 200),
            reason=_text(form, "reason"),
            principal=principal,
        )
    except GatewayError as exc:
        return _refused(request, pages, principal, project, name, exc, "request")
    return _back(project, name, "requests")


@router.post("/promotions/{request_id}/decide")
def decide(
    request: Request, request_id: RequestId, pages: PagesDep, principal: PrincipalDep, form: FormDep
) -> Response:
    """Approve or reject a promotion request with a note (``PromotionService.decide``: leads and
    reviewers, never the requester)."""
    services = services_of(request)
    found = services.promotions.get_request(request_id, principal=principal)
    decision = _text(form, "decision", 20)
    try:
        services.promotions.decide(request_id, decision, note=_text(form, "note"), principal=principal)
    except GatewayError as exc:
        return _refused(request, pages, principal, found.project, found.model, exc, f"decide-{request_id}")
    return _back(found.project, found.model, "requests")


@router.post("/models/{project}/{name}/releases/{version}/status")
def set_status(
    request: Request,
    project: Name,
    name: Name,
    version: Version,
    pages: PagesDep,
    principal: PrincipalDep,
    form: FormDep,
) -> Response:
    """Deprecate, withdraw or reactivate a release with a reason (``ReleaseService.set_status``: leads)."""
    try:
        services_of(request).releases.set_status(
            project,
            name,
            version,
            _text(form, "status", 20),
            reason=_text(form, "reason"),
            principal=principal,
        )
    except GatewayError as exc:
        return _refused(request, pages, principal, project, name, exc, f"status-{version}")
    return _back(project, name, "releases")


@router.get("/models/{project}/{name}/promote")
def promote_page(
    request: Request,
    project: Name,
    name: Name,
    pages: PagesDep,
    principal: PrincipalDep,
    alias: Annotated[str | None, Query(max_length=200)] = None,
    version: Annotated[str | None, Query(max_length=20)] = None,
) -> Response:
    """Before the button: what moving ``alias`` to ``version`` would count (the policy, the gateway's
    gate, the approvals) and what it misses (``PromotionService.preview``); the button when nothing is
    missing, the override with its reason for a lead when only the gate is."""
    return _promote(request, pages, principal, project, name, alias or "", version or "", error=None)


def _promote(
    request: Request,
    pages: PagesDep,
    principal: Principal,
    project: str,
    name: str,
    alias: str,
    version: str,
    *,
    error: GatewayError | None,
) -> Response:
    services = services_of(request)
    context = _model_context(request, principal, project, name)
    preview, problem = None, None
    number = version.removeprefix("v")
    if alias and number:
        try:
            if not number.isdigit():
                raise SpecError([SpecIssue("version", "a release version number, such as 2", version)])
            preview = services.promotions.preview(project, name, int(number), alias, principal=principal)
        except GatewayError as exc:
            problem = exc
    status = 200
    shown = error or problem
    if shown is not None:
        status = status_for(shown)[0]
    return pages.render(
        request,
        "promote.html",
        principal,
        status_code=status,
        **context,
        preview=preview,
        asked={"alias": alias, "version": version},
        promote_error=_words(shown) if shown is not None else None,
    )


@router.post("/models/{project}/{name}/aliases/{alias}")
def move_alias(
    request: Request,
    project: Name,
    name: Name,
    alias: Alias,
    pages: PagesDep,
    principal: PrincipalDep,
    form: FormDep,
) -> Response:
    """Move the alias (``PromotionService.promote``): the policy checked again at the press; an
    override (``override=yes``) needs a lead and a reason."""
    version = _version(form)
    override = _text(form, "override", 5) == "yes"
    try:
        if not isinstance(version, int):
            raise SpecError([SpecIssue("version", "a release version number, such as 2", version)])
        services_of(request).promotions.promote(
            project,
            name,
            version,
            alias,
            principal=principal,
            reason=_text(form, "reason"),
            override=override,
        )
    except GatewayError as exc:
        return _promote(request, pages, principal, project, name, alias, str(version), error=exc)
    return _back(project, name, "history")
