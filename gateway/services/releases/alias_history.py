"""Where a model's aliases stand and have stood, and the promotion requests on record: the reads of
``PromotionService`` (``services.releases.promotions``), which moves aliases.

Where an alias stands at any time is its newest move at or before that time (``aliases(at=...)``,
``history(at=...)``). Every read checks that the caller may read the model's project.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.core.access.policy import allowed
from gateway.core.access.values import Principal
from gateway.core.releases.domain import AliasEvent, PromotionRequest, Release, alias_at
from gateway.core.releases.views import move_dict, release_dict, request_dict
from gateway.errors import NotFound, SpecError
from gateway.services.releases.registry import ReleaseService, alias_issues
from gateway.store.releases.promotions import PromotionStore


@dataclass(frozen=True)
class AliasState:
    """Where an alias stands (at a time): the move that put it there, and the release it points at."""

    alias: str
    event: AliasEvent | None
    release: Release | None


class AliasReads:
    """The read side of ``PromotionService`` (a base class: the service holds the stores)."""

    store: PromotionStore
    releases: ReleaseService

    # -- promotion requests -----------------------------------------------------------------------

    def requests(
        self, project: str, model: str, *, principal: Principal, status: str | None = None
    ) -> list[PromotionRequest]:
        """A model's promotion requests (one status, if given), newest first."""
        return self.store.requests([self.releases.model(project, model, principal=principal).id], status)

    def get_request(self, request_id: str, *, principal: Principal) -> PromotionRequest:
        """One promotion request the caller may read, or NotFound."""
        found = self.store.request(request_id)
        if not allowed(principal, "release.read", found.project):
            raise NotFound(f"no promotion request {request_id!r}")
        return found

    # -- where aliases stand ----------------------------------------------------------------------

    def aliases(
        self, project: str, model: str, *, principal: Principal, at: datetime | None = None
    ) -> list[AliasState]:
        """Every alias of a model as it stood at ``at`` (None: now), by name."""
        found = self.releases.model(project, model, principal=principal)
        events = self.store.alias_events(found.id, until=at)
        by_alias: dict[str, list[AliasEvent]] = {}
        for event in events:
            by_alias.setdefault(event.alias, []).append(event)
        states = []
        for alias, moves in sorted(by_alias.items()):
            last = alias_at(moves, at) if at is not None else moves[-1]
            release = self.releases.store.release_by_id(last.to_release) if last and last.to_release else None
            states.append(AliasState(alias, last, release))
        return states

    def history(
        self,
        project: str,
        model: str,
        *,
        principal: Principal,
        alias: str | None = None,
        at: datetime | None = None,
    ) -> dict[str, Any]:
        """A model's alias moves (one alias's, with ``alias``), oldest first; with ``at`` also where each
        alias stood then (``at_time``)."""
        if alias is not None and (issues := alias_issues(alias)):
            raise SpecError(issues, what="history query")
        found = self.releases.model(project, model, principal=principal)
        events = self.store.alias_events(found.id, alias)
        states = self.aliases(project, model, principal=principal, at=at) if at is not None else None
        if states is not None and alias is not None:
            states = [s for s in states if s.alias == alias] or [AliasState(alias, None, None)]
        return {"model": found.ref, "alias": alias, "at": at, "events": events, "at_time": states}

    def artifact_releases(self, sha256: str, *, principal: Principal) -> dict[str, Any]:
        """The releases of an artifact with this content the caller may read: each with the aliases that
        point at it now (and since when), every move to or from it, its promotion requests."""
        found = self.releases.releases_of_artifact(sha256, principal=principal)
        if not found and not self.releases.readable_artifact(sha256.lower(), principal):
            raise NotFound(f"no artifact with sha256 {sha256.lower()} that you may read")
        out = []
        for release in found:
            states = self.aliases(release.project, release.model, principal=principal)
            current = [s for s in states if s.release is not None and s.release.id == release.id]
            out.append(
                release_dict(release)
                | {
                    "aliases": [
                        {
                            "alias": s.alias,
                            "version": release.version,
                            "release_id": release.id,
                            "since": s.event.at if s.event else None,
                            "move": move_dict(s.event) if s.event else None,
                        }
                        for s in current
                    ],
                    "alias_events": [move_dict(m) for m in self.store.alias_events_of([release.id])],
                    "promotions": [request_dict(q) for q in self.store.requests_of([release.id])],
                }
            )
        return {"sha256": sha256.lower(), "releases": out}

    def moves_of(self, release_ids: Sequence[str]) -> list[AliasEvent]:
        """Alias moves to or from these releases (for traces and bundles)."""
        return self.store.alias_events_of(release_ids)

    def requests_of(self, release_ids: Sequence[str]) -> list[PromotionRequest]:
        """Promotion requests of these releases (for traces and bundles)."""
        return self.store.requests_of(release_ids)
