"""Evaluation routes: suites, eval runs, results, gates, comparisons, reviews, traces (one call each)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.responses import Responses
from gateway.api.routes.run_params import IdempotencyKey
from gateway.api.schemas import ErrorPublic
from gateway.api.schemas_eval import (
    ArtifactEvalsPublic,
    EvalComparePublic,
    EvalImportCreate,
    EvalResultDetail,
    EvalResultTracePublic,
    EvalRunCreate,
    EvalRunPublic,
    EvalRunStarted,
    GateCreate,
    GatePublic,
    ReviewCreate,
    ReviewPublic,
)
from gateway.api.schemas_suites import (
    EvalSuiteDetail,
    EvalSuitePublic,
    SuiteSettingsSet,
    SuiteVersionDetail,
    SuiteVersionPublic,
    SuiteVersionRegistered,
)
from gateway.core import names
from gateway.core.eval.suite import SuiteVersion
from gateway.errors import SpecError, SpecIssue
from gateway.services.eval.reviews import REVIEW_TARGET_PATTERN
from gateway.services.eval.runs import ArtifactChoice

router = APIRouter(tags=["evaluation"])

NAME_PATTERN = f"^{names.NAME.pattern}$"
Project = Annotated[str, Path(pattern=NAME_PATTERN, description="The suite's project")]
SuiteName = Annotated[str, Path(pattern=NAME_PATTERN, description="The suite's name in its project")]
VersionSel = Annotated[
    str, Path(pattern=f"^(latest|{names.VERSION_NUMBER})$", description="A version number, or latest")
]
EvalRunId = Annotated[str, Path(pattern="^ev-[0-9a-f]{16}$", description="An eval run id (ev-...)")]
ResultId = Annotated[str, Path(pattern="^er-[0-9a-f]{16}$", description="An eval result id (er-...)")]
GateId = Annotated[str, Path(pattern="^gd-[0-9a-f]{16}$", description="A gate decision id (gd-...)")]
Sha256 = Annotated[str, Path(pattern="^[0-9a-fA-F]{64}$", description="A file's sha256 (64 hex digits)")]
ERRORS: Responses = {
    403: {"model": ErrorPublic, "description": "Your role in the project does not allow it"},
    404: {"model": ErrorPublic, "description": "Not found (or not readable by you)"},
    409: {"model": ErrorPublic, "description": "Conflict (an Idempotency-Key used for another request ...)"},
    422: {"model": ErrorPublic, "description": "Invalid request (field paths in detail)"},
}


def _number(selector: str) -> int | None:
    return None if selector == "latest" else int(selector.removeprefix("v"))


# -- suites -----------------------------------------------------------------------------------


@router.post(
    "/eval/suites",
    status_code=status.HTTP_201_CREATED,
    response_model=SuiteVersionRegistered,
    responses={
        200: {"model": SuiteVersionRegistered, "description": "Same content as an existing version"},
        **{k: ERRORS[k] for k in (403, 404, 422)},
    },
    summary="Register an eval suite version",
)
def register_suite(
    body: SuiteVersion, response: Response, services: ServicesDep, principal: PrincipalDep
) -> SuiteVersionRegistered:
    """Register a version of a suite from its definition (the prompt template as text). Its datasets are
    resolved for the suite's project to exact versions and digests; a dataset the project cannot read is a
    422 naming it. The same content again returns the existing version (200) and records nothing."""
    version, created = services.eval_suites.register(body.model_dump(mode="json"), principal=principal)
    response.status_code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return SuiteVersionRegistered.model_validate(
        SuiteVersionDetail.of(version).model_dump() | {"created": created}
    )


@router.get("/eval/suites", response_model=list[EvalSuitePublic], summary="List eval suites")
def list_suites(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=NAME_PATTERN, description="Only this project's")] = None,
) -> list[EvalSuitePublic]:
    """Suites of the projects you have a role in, with their number of versions."""
    return [EvalSuitePublic.of(s) for s in services.eval_suites.list(principal=principal, project=project)]


@router.get(
    "/eval/suites/{project}/{name}",
    response_model=EvalSuiteDetail,
    responses={404: ERRORS[404]},
    summary="Show an eval suite",
)
def get_suite(
    project: Project, name: SuiteName, services: ServicesDep, principal: PrincipalDep
) -> EvalSuiteDetail:
    """A suite and every version of it, oldest first."""
    suite, versions = services.eval_suites.get(project, name, principal=principal)
    return EvalSuiteDetail.model_validate(
        EvalSuitePublic.of(suite).model_dump() | {"versions": [SuiteVersionPublic.of(v) for v in versions]}
    )


@router.get(
    "/eval/suites/{project}/{name}/versions/{version}",
    response_model=SuiteVersionDetail,
    responses={404: ERRORS[404]},
    summary="Show an eval suite version",
)
def get_suite_version(
    project: Project, name: SuiteName, version: VersionSel, services: ServicesDep, principal: PrincipalDep
) -> SuiteVersionDetail:
    """One version: its definition, prompt template hash, the dataset versions and digests it pins."""
    found = services.eval_suites.version(project, name, _number(version), principal=principal)
    return SuiteVersionDetail.of(found)


@router.put(
    "/eval/suites/{project}/{name}/settings",
    response_model=EvalSuitePublic,
    responses={k: ERRORS[k] for k in (403, 404, 422)},
    summary="Change an eval suite's settings",
)
def set_suite_settings(
    project: Project, name: SuiteName, body: SuiteSettingsSet, services: ServicesDep, principal: PrincipalDep
) -> EvalSuitePublic:
    """Who may register new versions (lead or member) and whether self-reviews count for the suite's
    gates (the project's leads; audited). A field left out stays as it is."""
    return EvalSuitePublic.of(
        services.eval_suites.set_settings(
            project,
            name,
            principal=principal,
            versions_by=body.versions_by,
            count_self_reviews=body.count_self_reviews,
        )
    )


@router.post(
    "/eval/suites/{project}/{name}/versions/{version}/imports",
    status_code=status.HTTP_201_CREATED,
    response_model=EvalResultDetail,
    responses={k: ERRORS[k] for k in (403, 404, 422)},
    summary="Import lm-eval results made elsewhere",
)
def import_results(
    project: Project,
    name: SuiteName,
    version: VersionSel,
    body: EvalImportCreate,
    services: ServicesDep,
    principal: PrincipalDep,
) -> EvalResultDetail:
    """Store lm-eval's own output files of a run made outside the gateway as an eval result of this suite
    version, origin ``imported`` (who imported it and when are recorded; audited). The files are read with
    the gateway's lm-eval reader and checked against the suite version: its tasks, lm-eval version, model
    and shots, every document scored, each task hash that of its samples file and equal to the gateway's
    own runs of the version; a mismatch is a 422 naming it, with nothing stored. A protected alias counts
    an imported result only when its policy allows imported results."""
    names_seen = [f.name for f in body.files]
    dupes = sorted({n for n in names_seen if names_seen.count(n) > 1})
    if dupes:
        raise SpecError([SpecIssue("files", "each file once", dupes[0])], what="eval import")
    result = services.eval_imports.import_files(
        project,
        name,
        _number(version),
        {f.name: f.content.encode("utf-8") for f in body.files},
        artifact_sha256=body.artifact_sha256,
        artifact_path=body.artifact_path,
        principal=principal,
    )
    return EvalResultDetail.of(services.gates.show(result.id, principal=principal))


# -- eval runs --------------------------------------------------------------------------------


@router.post(
    "/eval/runs",
    status_code=status.HTTP_201_CREATED,
    response_model=EvalRunStarted,
    responses={k: ERRORS[k] for k in (403, 404, 409, 422)},
    summary="Run a suite version on an artifact",
)
def start_eval(
    body: EvalRunCreate,
    services: ServicesDep,
    principal: PrincipalDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,  # type: ignore[assignment]  # a plain string in OpenAPI; absent: None
) -> EvalRunStarted:
    """Submit an ordinary run (admission, quotas, failure classes, retries, accounting as any run) that
    scores the artifact with the suite's harness; its results are ingested when it ends. The artifact is
    named by sha256, or as a run's output (with ``artifact_path`` when the run has several). The same
    Idempotency-Key again returns the first eval run, with header Idempotent-Replayed: true."""
    started = services.evals.start(
        body.suite,
        ArtifactChoice(sha256=body.artifact_sha256, run_id=body.run_id, path=body.artifact_path),
        principal=principal,
        queue=body.queue,
        idempotency_key=idempotency_key,
    )
    if started.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return EvalRunStarted.started(started.eval_run, started.run)


@router.get(
    "/eval/runs", response_model=list[EvalRunPublic], responses={422: ERRORS[422]}, summary="List eval runs"
)
def list_eval_runs(
    services: ServicesDep,
    principal: PrincipalDep,
    project: Annotated[str | None, Query(pattern=NAME_PATTERN)] = None,
    artifact: Annotated[
        str | None, Query(pattern="^[0-9a-fA-F]{64}$", description="Only on this sha256")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[EvalRunPublic]:
    """Eval runs of your projects, newest first."""
    found = services.evals.list(principal=principal, project=project, artifact_sha256=artifact, limit=limit)
    return [EvalRunPublic.of(e) for e in found]


@router.get(
    "/eval/runs/{eval_run_id}",
    response_model=EvalRunPublic,
    responses={404: ERRORS[404]},
    summary="Show an eval run",
)
def get_eval_run(eval_run_id: EvalRunId, services: ServicesDep, principal: PrincipalDep) -> EvalRunPublic:
    """An eval run: its gateway run, suite version, artifact, status (pending, ingested, refused, failed)."""
    return EvalRunPublic.of(services.evals.get(eval_run_id, principal=principal))


# -- results, gates, comparisons --------------------------------------------------------------


@router.get(
    "/eval/results/{result_id}",
    response_model=EvalResultDetail,
    responses={404: ERRORS[404]},
    summary="Show an eval result",
)
def get_result(result_id: ResultId, services: ServicesDep, principal: PrincipalDep) -> EvalResultDetail:
    """Per task its values with standard errors and sample counts; the harness and its version, the seeds,
    the source files with their sha256; the reviews and the gate decisions it took part in."""
    return EvalResultDetail.of(services.gates.show(result_id, principal=principal))


@router.post(
    "/eval/results/{result_id}/gate",
    status_code=status.HTTP_201_CREATED,
    response_model=GatePublic,
    responses={k: ERRORS[k] for k in (403, 404, 422)},
    summary="Gate an eval result",
)
def gate_result(
    result_id: ResultId, body: GateCreate, services: ServicesDep, principal: PrincipalDep
) -> GatePublic:
    """Decide the candidate against the baseline on the candidate's suite version and record it: pass,
    fail or not_comparable, with the rule, every number, the baseline and why. A baseline of another suite
    is refused (422, nothing recorded)."""
    return GatePublic.of(services.gates.gate(result_id, principal=principal, baseline_id=body.baseline))


@router.get(
    "/eval/gates/{gate_id}",
    response_model=GatePublic,
    responses={404: ERRORS[404]},
    summary="Show a gate decision",
)
def get_gate(gate_id: GateId, services: ServicesDep, principal: PrincipalDep) -> GatePublic:
    """A recorded gate decision, with every number behind it."""
    return GatePublic.of(services.gates.gate_record(gate_id, principal=principal))


@router.get(
    "/eval/compare/{a}/{b}",
    response_model=EvalComparePublic,
    responses={k: ERRORS[k] for k in (404, 422)},
    summary="Compare two eval results",
)
def compare_results(
    a: ResultId, b: ResultId, services: ServicesDep, principal: PrincipalDep
) -> EvalComparePublic:
    """Per task and metric: both values, the paired difference a - b with its interval, p-values and what
    it means; the gate of a against b as it would be decided now (nothing is recorded)."""
    return EvalComparePublic.model_validate(services.gates.compare(a, b, principal=principal))


# -- reviews ----------------------------------------------------------------------------------


@router.post(
    "/eval/reviews",
    status_code=status.HTTP_201_CREATED,
    response_model=ReviewPublic,
    responses={k: ERRORS[k] for k in (403, 404, 409, 422)},
    summary="Record a review",
)
def add_review(body: ReviewCreate, services: ServicesDep, principal: PrincipalDep) -> ReviewPublic:
    """A human review of an eval result or a model artifact (leads and the project's reviewers): verdict,
    notes, the samples looked at, per-sample labels. Append-only: your newer review of the same target
    supersedes your older one, which stays on record."""
    review = services.reviews.record(
        body.target,
        verdict=body.verdict,
        principal=principal,
        notes=body.notes,
        samples=[(s.task, s.id) for s in body.samples],
        labels=body.labels,
    )
    return ReviewPublic.of(review)


@router.get(
    "/eval/reviews",
    response_model=list[ReviewPublic],
    responses={k: ERRORS[k] for k in (404, 422)},
    summary="List the reviews of a target",
)
def list_reviews(
    services: ServicesDep,
    principal: PrincipalDep,
    target: Annotated[
        str,
        Query(
            max_length=64,
            description="An eval result id or an artifact's sha256",
            json_schema_extra={"pattern": REVIEW_TARGET_PATTERN},
        ),
    ],
) -> list[ReviewPublic]:
    """Every review of the target, oldest first; superseded ones are marked (``current`` false)."""
    return [ReviewPublic.of(r) for r in services.reviews.list(target, principal=principal)]


# -- lineage ----------------------------------------------------------------------------------


@router.get(
    "/lineage/eval-results/{result_id}",
    response_model=EvalResultTracePublic,
    responses={404: ERRORS[404]},
    summary="Trace an eval result",
    tags=["lineage"],
)
def trace_result(
    result_id: ResultId, services: ServicesDep, principal: PrincipalDep
) -> EvalResultTracePublic:
    """The suite version (content hash, prompt template hash, datasets with digests), the harness and its
    version, the eval job's run and Slurm jobs, the artifact and the run that wrote it, reviews and gates."""
    return EvalResultTracePublic.model_validate(
        services.eval_trace.trace_result(result_id, principal=principal)
    )


@router.get(
    "/lineage/artifacts/{sha256}/evals",
    response_model=ArtifactEvalsPublic,
    responses={404: ERRORS[404]},
    summary="Evaluations of a file",
    tags=["lineage"],
)
def artifact_evals(sha256: Sha256, services: ServicesDep, principal: PrincipalDep) -> ArtifactEvalsPublic:
    """Every eval run on an artifact with this content, their results, the gate decisions those took part
    in, and the reviews of the artifact."""
    return ArtifactEvalsPublic.model_validate(services.eval_trace.artifact_evals(sha256, principal=principal))
