"""Releases, alias moves and promotion requests as JSON-ready dicts: what the API, traces and bundles show."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from gateway.core.releases.domain import AliasEvent, PromotionRequest, Release


def release_dict(r: Release) -> dict[str, Any]:
    """A release as the API and bundles show it (its snapshot left out: ``GET`` the release for it)."""
    return {
        "id": r.id,
        "ref": r.ref,
        "project": r.project,
        "model": r.model,
        "version": r.version,
        "artifact_sha256": r.artifact_sha256,
        "artifact_path": r.artifact_path,
        "run_id": r.run_id,
        "notes": r.notes,
        "created_by": r.created_by,
        "created_at": r.created_at.isoformat(),
        "status": r.status,
        "status_events": [asdict(s) | {"at": s.at.isoformat()} for s in r.status_events],
    }


def move_dict(m: AliasEvent) -> dict[str, Any]:
    """An alias move, JSON-ready."""
    return asdict(m) | {"at": m.at.isoformat(), "approvals": list(m.approvals)}


def request_dict(q: PromotionRequest) -> dict[str, Any]:
    """A promotion request with its decisions and who approved, JSON-ready."""
    return asdict(q) | {
        "at": q.at.isoformat(),
        "decisions": [asdict(d) | {"at": d.at.isoformat()} for d in q.decisions],
        "approvers": q.approvers(),
        "rejected_by": q.rejected_by(),
    }
