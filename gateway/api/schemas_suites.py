"""API schemas of eval suites: a suite, its settings, and its immutable versions (the rest of
evaluation's schemas are in ``schemas_eval``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.api.schemas_catalog import CatalogEntryPublic
from gateway.core.eval.domain import EvalSuite, SuiteVersionRecord
from gateway.services.eval.trace import version_dict


class SuiteDatasetPublic(BaseModel):
    ref: str = Field(description="As the suite wrote it (tiny-cloze@latest)")
    version: str = Field(description="The exact version it resolved to: project/name@N")
    version_id: str
    digest: str = Field(description="The dataset version's manifest digest")


class HarnessRefPublic(BaseModel):
    name: str
    version: str | None
    model: str | None


class SuiteVersionPublic(BaseModel):
    id: str
    ref: str = Field(description="project/name@N")
    project: str
    name: str
    version: int
    content_hash: str = Field(
        description="sha256 over the definition, the prompt template and dataset digests"
    )
    prompt_sha256: str
    harness: HarnessRefPublic
    tasks: list[str]
    datasets: list[SuiteDatasetPublic]
    reviews_required: int
    environment: str | None = Field(
        None,
        description="The environment version its eval jobs run in (PROJECT/NAME@N); null: the site's "
        "default eval environment, else its eval Python",
    )
    registered_by: str
    registered_at: datetime

    @classmethod
    def of(cls, version: SuiteVersionRecord) -> SuiteVersionPublic:
        return cls.model_validate(version_dict(version))


class SuiteVersionDetail(SuiteVersionPublic):
    definition: dict[str, Any] = Field(
        description="The suite version as registered (the prompt template inline)"
    )

    @classmethod
    def of(cls, version: SuiteVersionRecord) -> SuiteVersionDetail:
        return cls.model_validate(
            version_dict(version) | {"definition": version.suite.model_dump(mode="json")}
        )


class SuiteVersionRegistered(SuiteVersionDetail):
    created: bool = Field(description="False: the suite already had a version with this content")


class EvalSuitePublic(CatalogEntryPublic):
    version_count: int
    latest_version: int | None
    versions_by: Literal["lead", "member"] = Field(
        description="The least role that may register a new version (the suite's setting)"
    )
    count_self_reviews: bool = Field(
        description="Whether reviews by the run's submitter or the release's requester count for its gates"
    )

    @classmethod
    def of(cls, suite: EvalSuite) -> EvalSuitePublic:
        return cls(
            **cls.entry_fields(suite),
            version_count=suite.version_count,
            latest_version=suite.latest_number,
            versions_by=suite.versions_by,  # type: ignore[arg-type]  # a str in core; the suite service writes only these words
            count_self_reviews=suite.count_self_reviews,
        )


class SuiteSettingsSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    versions_by: Literal["lead", "member"] | None = Field(
        None, description="The least role that may register a new version; none: unchanged"
    )
    count_self_reviews: bool | None = Field(
        None,
        description="Whether reviews by the run's submitter or the release's requester count; none: as is",
    )


class EvalSuiteDetail(EvalSuitePublic):
    versions: list[SuiteVersionPublic]
