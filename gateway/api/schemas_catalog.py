"""What the catalogs' entries share in their answers: a dataset, an environment, an eval suite."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel


class Catalogued(Protocol):
    """A catalog entry as the core holds it (``Dataset``, ``Environment``, ``EvalSuite``)."""

    @property
    def id(self) -> str: ...
    @property
    def project(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def created_by(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...


class CatalogEntryPublic(BaseModel):
    """The fields every catalog entry's answer starts with (its subclasses add theirs after)."""

    id: str
    project: str
    name: str
    description: str
    created_by: str
    created_at: datetime

    @staticmethod
    def entry_fields(entry: Catalogued) -> dict[str, Any]:
        """``entry``'s values of the shared fields, to build a subclass with."""
        return {
            "id": entry.id,
            "project": entry.project,
            "name": entry.name,
            "description": entry.description,
            "created_by": entry.created_by,
            "created_at": entry.created_at,
        }
