"""API schemas of the hand-off: MLflow mirror status, hand-off items (mirror jobs, webhook deliveries)
and each try at them (docs/handoff.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class HandoffTryPublic(BaseModel):
    id: str
    item_id: str
    number: int = Field(description="1, 2, ... per item")
    at: str
    ok: bool
    status_code: int | None = Field(description="Webhooks: the receiver's HTTP status; None: no answer")
    error: str
    duration_ms: int
    delivery_id: str = Field(description="Webhooks: this try's X-Gateway-Delivery")


class HandoffItemPublic(BaseModel):
    id: str
    kind: Literal["mlflow.release", "mlflow.alias", "mlflow.run", "webhook"]
    subject: str = Field(description="The release, alias move or run it hands off")
    project: str
    target: str = Field(description="Webhooks: the endpoint's name; empty for MLflow")
    event_type: str
    event_id: str = Field(description="Webhooks: X-Gateway-Event-Id, the same on every try and replay")
    status: Literal["pending", "done", "failed", "dead"]
    attempts: int
    next_at: str | None = Field(description="When it is tried next (pending and failed ones)")
    last_error: str
    created_at: str
    done_at: str | None
    result: dict[str, Any] = Field(description="MLflow: version, tracking run, links")
    tries: list[HandoffTryPublic] = Field(default_factory=list)


class MirrorReleasePublic(BaseModel):
    version: int
    release_id: str
    mirror: HandoffItemPublic | None
    mlflow_version: str | None
    version_url: str | None = Field(description="The version's page in MLflow's UI")
    links: dict[str, str] = Field(description="The gateway's release page and evidence bundle")
    webhooks: list[HandoffItemPublic]


class MirrorAliasPublic(BaseModel):
    alias: str
    version: int | None = Field(description="The release the gateway says it points at")
    move_id: str
    mirror: HandoffItemPublic | None = Field(description="None: an unprotected alias, not mirrored")
    mlflow_version: str | None
    webhooks: list[HandoffItemPublic]


class MirrorStatusPublic(BaseModel):
    model: str
    mlflow: str | None = Field(description="The MLflow server; None when none is configured")
    registered_model: str | None
    releases: list[MirrorReleasePublic]
    aliases: list[MirrorAliasPublic]
    drift: list[str] = Field(description="How MLflow differs from the gateway (reported, never copied back)")
    checked: bool = Field(description="Whether MLflow answered, so drift was checked")
    problem: str | None


class RunHandoffPublic(BaseModel):
    run_id: str
    mlflow: str | None
    run_url: str | None = Field(description="The run's page in MLflow tracking, once logged")
    items: list[HandoffItemPublic]
