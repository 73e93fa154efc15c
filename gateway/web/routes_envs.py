"""Training environments: the list (with the form that registers a version: a lock file, an image
archive or a module list, CSRF-checked and through the same service as the API), an environment's
versions (with a diff of two), and a version's page (its packages, lock file, the change from its
parent and the runs that used it)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from gateway.core import names
from gateway.core.access.values import Principal
from gateway.core.envs.diff import diff_lines
from gateway.core.envs.lockfile import MAX_LOCK_CHARS
from gateway.error_status import status_for
from gateway.errors import GatewayError, SpecError, SpecIssue
from gateway.services.envs.registry import EnvDiff, EnvRegistration
from gateway.web.deps import PREFIX, FormDep, PagesDep, PrincipalDep, services_of

router = APIRouter()
Name = Annotated[str, Path(pattern=f"^{names.NAME.pattern}$")]
MAX_FIELD_CHARS = 8192  # a module list, a description; the lock has its own limit (MAX_LOCK_CHARS)
Selector = Annotated[str | None, Query(pattern=r"^(latest|v?\d{1,9}|sha256:[0-9a-f]{8,64})$")]


@router.get("/environments")
def environments(
    request: Request,
    pages: PagesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=f"^{names.NAME.pattern}$")] = None,
) -> Response:
    """Every environment of the caller's projects (of ``project`` only, when given), with its newest
    version, and the form to register one."""
    shown = {**dict.fromkeys(FIELDS, ""), "project": project or "", "kind": "python"}
    return _list_page(request, pages, principal, project, shown)


def _list_page(
    request: Request,
    pages: PagesDep,
    principal: Principal,
    project: str | None,
    shown: dict[str, str],
    error: str | None = None,
    status_code: int = 200,
) -> Response:
    envs = services_of(request).environments
    return pages.render(
        request,
        "environments.html",
        principal,
        status_code=status_code,
        environments=envs.catalog.list(principal=principal, project=project),
        project=project,
        targets=envs.register_targets(principal),
        shown=shown,
        register_error=error,
    )


@router.post("/environments")
async def register(request: Request, pages: PagesDep, principal: PrincipalDep, form: FormDep) -> Response:
    """Register a version from the form (``EnvironmentService.register``, as the API's route): a lock
    file (uploaded or pasted) and its build queue, an image archive's path, or a module list. A new
    version, or the one with the same content, is shown; a refusal comes back above the form, in
    the service's words, with the API's status and what was typed."""
    shown = {k: _text(form, k) for k in FIELDS}
    upload = form.get("lock_file")
    if isinstance(upload, UploadFile) and upload.filename:
        data = await upload.read(MAX_LOCK_CHARS * 4 + 1)
        shown["lock"] = data.decode("utf-8", errors="replace")
    # the service submits a build job (sbatch) and reads an archive: off the event loop
    return await run_in_threadpool(_registered, request, pages, principal, shown)


def _registered(request: Request, pages: PagesDep, principal: Principal, shown: dict[str, str]) -> Response:
    """The version the form's values register, opened on its page; or the refusal above the form."""
    kind = shown["kind"]

    def of(field: str, wanted: str) -> str | None:  # a field of another kind is ignored
        return (shown[field] or None) if kind == wanted else None

    try:
        if not names.NAME.fullmatch(shown["project"]):
            raise SpecError([SpecIssue("project", "choose one of your projects", shown["project"])])
        version, _ = services_of(request).environments.register(
            EnvRegistration(
                project=shown["project"],
                name=shown["name"],
                kind=kind,
                lock=of("lock", "python"),
                build_queue=of("build_queue", "python"),
                archive=of("archive", "image"),
                modules=[m.strip() for m in (of("modules", "modules") or "").splitlines() if m.strip()],
                description=shown["description"],
                parent=shown["parent"] or None,
            ),
            principal=principal,
        )
    except GatewayError as exc:
        words = "; ".join(str(i) for i in exc.issues) if isinstance(exc, SpecError) else str(exc)
        status, _ = status_for(exc)
        return _list_page(request, pages, principal, None, shown, error=words, status_code=status)
    return RedirectResponse(
        f"{PREFIX}/environments/{version.project}/{version.name}/{version.number}", status_code=303
    )


FIELDS = ("project", "name", "kind", "lock", "build_queue", "archive", "modules", "description", "parent")


def _text(form: Any, key: str) -> str:
    value = form.get(key)
    if not isinstance(value, str):
        return ""
    return value.replace("\r\n", "\n") if key == "lock" else value.strip()[:MAX_FIELD_CHARS]


@router.get("/environments/{project}/{name}")
def environment_page(
    request: Request,
    project: Name,
    name: Name,
    pages: PagesDep,
    principal: PrincipalDep,
    old: Selector = None,
    new: Selector = None,
) -> Response:
    """An environment's versions (newest first); with ``old`` and ``new``, the packages that changed."""
    services = services_of(request)
    env = services.environments.catalog.get(project, name, principal=principal)
    versions = sorted(
        services.environments.catalog.versions(project, name, principal=principal), key=lambda v: -v.number
    )
    diff = None
    if old and new:
        found = services.environments.diff(
            f"{name}@{old}", f"{name}@{new}", project=project, principal=principal
        )
        diff = diff_context(found)
    return pages.render(
        request, "environment.html", principal, env=env, versions=versions, diff=diff, old=old, new=new
    )


@router.get("/environments/{project}/{name}/{number}")
def version_page(
    request: Request,
    project: Name,
    name: Name,
    number: Annotated[int, Path(ge=1, le=999_999_999)],
    pages: PagesDep,
    principal: PrincipalDep,
) -> Response:
    """One version: its status, digest, location, installed set, lock, the change from its parent."""
    services = services_of(request)
    version = services.environments.catalog.resolve(
        f"{project}/{name}@{number}", project=project, principal=principal
    )
    parent_lines = diff_lines(version.parent_diff) if version.parent_diff else []
    runs = services.environments.catalog.runs_using(version, limit=50)
    report = services.environments.scan(version.ref, project=project, principal=principal)
    return pages.render(
        request,
        "env_version.html",
        principal,
        version=version,
        parent_lines=parent_lines,
        runs=runs,
        report=report,
    )


def diff_context(found: EnvDiff) -> dict[str, Any]:
    """A dependency change record as the pages show it: both sides, one line per change, the count kept."""
    return {
        "old": found.old,
        "new": found.new,
        "lines": diff_lines(found.packages),
        "unchanged": found.packages["unchanged"],
        "image": found.image,
        "missing": None,  # why there is no record (the compare page's two runs)
    }
