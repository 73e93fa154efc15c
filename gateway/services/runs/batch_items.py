"""What a batch of runs is asked and what it answers, item by item (``gateway.services.runs.batch``).

``BatchItem`` is one run as asked, ``ItemOutcome`` what came of it and ``BatchOutcome`` the answer of
the whole batch, in the items' order (``POST /runs/batch``'s schemas read them). ``PendingItem`` is an
item on its way through the batch's steps; ``item_key`` and ``item_error`` say what an item is
recorded under and where its errors point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.core.audit.entry import AuditEntry
from gateway.core.runs.idempotency import IdempotencyClaim
from gateway.core.runs.values import NewRun, Run
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import GatewayError, SpecError, SpecIssue
from gateway.services.runs.admission import Admitted
from gateway.services.runs.inputs import ResolvedInput


@dataclass(frozen=True)
class BatchItem:
    """One run of a batch as asked: its spec (a ``RunSpec``, or the request's mapping, read here) and
    its own Idempotency-Key (None: the batch key's ``<key>#<index>``, or none without a batch key)."""

    spec: RunSpec | dict[str, Any]
    idempotency_key: str | None = None


@dataclass(frozen=True)
class ItemOutcome:
    """What came of one item: its run (``replayed`` when an earlier request made it), or its error.

    A run refused by Slurm after it was recorded has both: the run (never submitted) and the error.
    """

    index: int
    run: Run | None
    error: GatewayError | None = None
    replayed: bool = False


@dataclass(frozen=True)
class BatchOutcome:
    items: list[ItemOutcome]

    @property
    def replayed(self) -> bool:
        """Every item's run was made by an earlier request with the same keys."""
        return bool(self.items) and all(i.replayed for i in self.items)

    @property
    def failed(self) -> int:
        """How many items have an error."""
        return sum(1 for i in self.items if i.error is not None)


@dataclass
class PendingItem:
    """An item on its way: what is known of it so far."""

    index: int
    spec: RunSpec
    claim: IdempotencyClaim | None
    admitted: Admitted | None = None
    new: NewRun | None = None
    inputs: list[ResolvedInput] = field(default_factory=list)
    audit: AuditEntry | None = None


def item_key(batch_key: str | None, index: int, own: str | None) -> str | None:
    """The Idempotency-Key an item is recorded under: its own, else ``<batch key>#<index>`` (``#`` is
    not allowed in a client's key, so a derived key never meets one a client chose)."""
    if own is not None:
        return own
    return None if batch_key is None else f"{batch_key}#{index}"


def item_error(index: int, exc: GatewayError) -> GatewayError:
    """``exc`` with its spec issues' paths under the item (``items.3.spec.resources.mem_gb``)."""
    if isinstance(exc, SpecError) and exc.what == "run spec":
        issues = [
            SpecIssue(f"items.{index}.spec" + (f".{i.path}" if i.path else ""), i.message, i.value)
            for i in exc.issues
        ]
        moved = SpecError(issues, exc.source, exc.location, exc.what)
        moved.__cause__ = exc
        return moved
    return exc
