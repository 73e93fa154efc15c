"""Lineage routes: trace a file, a run or a dataset version; a run's outputs; compare two runs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.routes.datasets import ERRORS, Name, Project, Version
from gateway.api.routes.run_params import RunId
from gateway.api.schemas_lineage import (
    ArtifactTracePublic,
    ComparePublic,
    DatasetTracePublic,
    LineageRunPublic,
    RunOutputsPublic,
)

router = APIRouter(tags=["lineage"])
Sha256 = Annotated[str, Path(pattern="^[0-9a-fA-F]{64}$", description="A file's sha256 (64 hex digits)")]


@router.get(
    "/lineage/artifacts/{sha256}",
    response_model=ArtifactTracePublic,
    responses={404: ERRORS[404]},
    summary="Trace a file back by its sha256",
)
def trace_artifact(sha256: Sha256, services: ServicesDep, principal: PrincipalDep) -> ArtifactTracePublic:
    """Every run output with this content, each with its run, attempt, Slurm job, rendered script, code,
    environment, params and dataset versions (with their parents); and dataset files with it."""
    return ArtifactTracePublic.model_validate(services.lineage.trace_artifact(sha256, principal=principal))


@router.get(
    "/lineage/runs/{run_id}",
    response_model=LineageRunPublic,
    responses={404: ERRORS[404]},
    summary="A run's lineage",
)
def trace_run(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> LineageRunPublic:
    """The run's inputs (dataset versions and parents, code, environment, params), process (script,
    attempts and Slurm jobs) and outputs (artifacts, metrics)."""
    return LineageRunPublic.model_validate(services.lineage.trace_run(run_id, principal=principal))


@router.get(
    "/lineage/datasets/{project}/{name}/{version}",
    response_model=DatasetTracePublic,
    responses={404: ERRORS[404]},
    summary="Trace a dataset version forward",
)
def trace_dataset(
    project: Project, name: Name, version: Version, services: ServicesDep, principal: PrincipalDep
) -> DatasetTracePublic:
    """The version's parents and the versions made from it, every run that read it and every artifact
    those runs wrote."""
    return DatasetTracePublic.model_validate(
        services.lineage.trace_dataset(project, name, version, principal=principal)
    )


@router.get(
    "/runs/{run_id}/outputs",
    response_model=RunOutputsPublic,
    responses={404: ERRORS[404]},
    summary="A run's artifacts and metrics",
    tags=["runs"],
)
def run_outputs(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> RunOutputsPublic:
    """The files the run declared as outputs (path, size, sha256, attempt), its summary metrics and
    per-step series, and when each attempt's outputs were registered."""
    return RunOutputsPublic.model_validate(services.lineage.outputs(run_id, principal=principal))


@router.get(
    "/runs/{run_id}/compare/{other_id}",
    response_model=ComparePublic,
    responses={404: ERRORS[404]},
    summary="Compare two runs",
    tags=["runs"],
)
def compare_runs(
    run_id: RunId, other_id: RunId, services: ServicesDep, principal: PrincipalDep
) -> ComparePublic:
    """Params that differ, dataset versions of each, metrics side by side (with deltas), code and
    environment of both."""
    return ComparePublic.model_validate(services.lineage.compare(run_id, other_id, principal=principal))
