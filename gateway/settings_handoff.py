"""The hand-off part of the gateway's settings (``GATEWAY_MLFLOW_*``, ``GATEWAY_WEBHOOKS``,
``GATEWAY_HANDOFF_*``, ``GATEWAY_PUBLIC_URL``): a group of fields ``gateway.settings.Settings``
inherits, so every variable is still declared once (docs/handoff.md).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gateway.core.handoff.webhooks import EVENT_TYPES

ENDPOINT_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")


class WebhookEndpoint(BaseModel):
    """One receiver of the gateway's events."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="A short name for records and replays: lower-case letters, digits, _ or -.")
    url: str = Field(description="http:// or https:// URL the events are POSTed to.")
    secret: SecretStr = Field(
        description="The HMAC-SHA256 key (at least 16 characters), shared with the receiver."
    )
    events: list[str] = Field(default_factory=lambda: list(EVENT_TYPES), description="Which event types.")
    projects: list[str] | None = Field(default=None, description="Only these projects' events (None: all).")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not ENDPOINT_NAME.fullmatch(value):
            raise ValueError("a webhook name is 1-64 characters: lower-case letters, digits, _ or -")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s]*)?", value):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: SecretStr) -> SecretStr:
        if len(value.get_secret_value()) < 16:
            raise ValueError("a webhook secret needs at least 16 characters (`openssl rand -hex 24`)")
        return value

    @field_validator("events")
    @classmethod
    def _events(cls, value: list[str]) -> list[str]:
        unknown = [e for e in value if e not in EVENT_TYPES]
        if unknown:
            raise ValueError(f"unknown event type {unknown[0]!r}; the types are {', '.join(EVENT_TYPES)}")
        return value


class HandoffSettings(BaseSettings):
    """MLflow mirror, tracking and webhook settings (docs/handoff.md)."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore")

    public_url: str | None = Field(
        default=None,
        description="The gateway's public base URL (https://gateway.example.org): links to release pages and "
        "evidence bundles in MLflow tags and webhook events; unset: the events carry ids only.",
    )
    mlflow_tracking_uri: str | None = Field(
        default=None,
        description="The MLflow server releases are mirrored to and runs logged in (http://host:5000); "
        "unset: no MLflow hand-off. Needs the optional extra gateway[mlflow].",
    )
    mlflow_artifacts: Literal["upload", "reference"] = Field(
        default="upload",
        description="upload: a release's artifact file is uploaded to the run's MLflow artifacts (its sha256 "
        "checked first; the gateway must be able to read it). reference: the model version's source is "
        "mlflow_reference_uri, nothing is copied.",
    )
    mlflow_reference_uri: str | None = Field(
        default=None,
        description="reference mode: the artifact's URI in the site's object store, with {sha256}, "
        "{project}, {model}, {version} and {path} replaced (s3://models/{sha256}).",
    )
    mlflow_timeout_s: float = Field(default=10.0, gt=0, description="Longest wait for one MLflow request.")
    mlflow_track_runs_since: str | None = Field(
        default=None,
        description="Only runs created at or after this ISO time are logged to MLflow tracking (unset: every "
        "ended run, a back-fill the first time).",
    )
    webhooks: list[WebhookEndpoint] = Field(
        default_factory=list,
        description='Endpoints that get signed events, as JSON: [{"name": "deploy", "url": "https://...", '
        '"secret": "...", "events": ["alias.moved"], "projects": ["demo"]}].',
    )
    webhook_timeout_s: float = Field(default=10.0, gt=0, description="Longest wait for a webhook's answer.")
    handoff_interval_s: float = Field(
        default=10.0, gt=0, description="How often `gw serve` (the leader) works the hand-off outbox."
    )
    handoff_max_attempts: int = Field(
        default=12, ge=1, le=100, description="Tries of one mirror job or delivery before it is dead."
    )
    handoff_backoff_s: float = Field(
        default=5.0, ge=0, description="Wait after the first failed try; doubled after each, up to the cap."
    )
    handoff_backoff_cap_s: float = Field(default=3600.0, ge=0, description="The longest wait between tries.")

    @field_validator("webhooks")
    @classmethod
    def _unique_names(cls, value: list[WebhookEndpoint]) -> list[WebhookEndpoint]:
        names = [w.name for w in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"webhook names must be unique; {', '.join(twice)} is given twice")
        return value

    @model_validator(mode="after")
    def _reference_needs_uri(self) -> HandoffSettings:
        if self.mlflow_artifacts == "reference" and not self.mlflow_reference_uri:
            raise ValueError(
                "mlflow_artifacts reference needs mlflow_reference_uri (GATEWAY_MLFLOW_REFERENCE_URI), the "
                "artifact's URI in your object store with {sha256} in it, e.g. s3://models/{sha256}"
            )
        if self.mlflow_reference_uri:
            try:
                self.mlflow_reference_uri.format(sha256="0", project="p", model="m", version=1, path="f")
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"mlflow_reference_uri {self.mlflow_reference_uri!r} does not format ({exc!r}); it may "
                    "use {sha256}, {project}, {model}, {version} and {path}"
                ) from None
        return self
