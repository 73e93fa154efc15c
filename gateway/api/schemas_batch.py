"""Schemas of ``POST /runs/batch``: many runs in one request, an answer per item."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gateway.api.errors import item_error_body
from gateway.api.schemas import ErrorPublic, RunSummary
from gateway.core.spec.run_spec import RunSpec
from gateway.services.runs.batch_items import BatchItem, BatchOutcome, ItemOutcome

IDEMPOTENCY_KEY = r"^[A-Za-z0-9._:-]{8,128}$"


class RunBatchItemCreate(BaseModel):
    """One run of a batch."""

    model_config = ConfigDict(extra="forbid")

    spec: RunSpec = Field(
        description="A run spec, exactly as POST /runs takes it. One that is not a valid spec makes the "
        "request invalid (422 invalid_request at items.<index>.spec.<field>), partial or not"
    )
    idempotency_key: str | None = Field(
        default=None,
        pattern=IDEMPOTENCY_KEY,
        description="This item's own Idempotency-Key (as POST /runs takes it); default: the batch's "
        "Idempotency-Key followed by #<index>",
    )

    def item(self) -> BatchItem:
        return BatchItem(self.spec, self.idempotency_key)


class RunBatchCreate(BaseModel):
    """Up to ``batch_max_items`` runs (1,000 by default), admitted together and recorded in one go."""

    model_config = ConfigDict(extra="forbid")

    items: list[RunBatchItemCreate] = Field(min_length=1, description="The runs, in order")
    partial: bool = Field(
        default=False,
        description="false (all or none): any item that would be refused refuses the whole batch, 422 "
        "batch_rejected naming each one, and nothing is submitted. true: the refused items get their "
        "error, the others are submitted",
    )

    def batch(self) -> list[BatchItem]:
        return [i.item() for i in self.items]


class RunBatchItemPublic(BaseModel):
    """What came of one item: its run (id, state, Slurm job id), or its error, or both when Slurm
    refused a run already recorded."""

    index: int = Field(description="The item's place in the request, from 0")
    status: int = Field(
        description="What POST /runs would have answered for it: 201, 200 (replayed), 4xx, 5xx"
    )
    run: RunSummary | None = Field(default=None, description="The run, when one is on record")
    replayed: bool = Field(default=False, description="An earlier request with the same key made this run")
    error: ErrorPublic | None = Field(default=None, description="Why the item was refused")

    @classmethod
    def of(cls, outcome: ItemOutcome) -> RunBatchItemPublic:
        run = RunSummary.of(outcome.run) if outcome.run is not None else None
        if outcome.error is None:
            return cls(
                index=outcome.index,
                status=200 if outcome.replayed else 201,
                run=run,
                replayed=outcome.replayed,
            )
        status, body = item_error_body(outcome.error)
        return cls(
            index=outcome.index,
            status=status,
            run=run,
            replayed=outcome.replayed,
            error=ErrorPublic.model_validate(body),
        )


class RejectedItemPublic(BaseModel):
    index: int = Field(description="The item's place in the request, from 0")
    status: int = Field(description="What POST /runs would have answered for it")
    error: ErrorPublic


class BatchRejectedPublic(ErrorPublic):
    """An all-or-none batch refused: every refused item with its error; nothing was submitted."""

    items: list[RejectedItemPublic] = Field(default_factory=list)


class RunBatchPublic(BaseModel):
    """Every item's answer, in the request's order."""

    items: list[RunBatchItemPublic]
    submitted: int = Field(description="Items with a new run that has a Slurm job id")
    failed: int = Field(description="Items with an error")
    replayed: int = Field(description="Items an earlier request with the same keys made")

    @classmethod
    def of(cls, outcome: BatchOutcome) -> RunBatchPublic:
        items = [RunBatchItemPublic.of(i) for i in outcome.items]
        return cls(
            items=items,
            submitted=sum(
                1
                for i in outcome.items
                if i.error is None
                and not i.replayed
                and i.run is not None
                and i.run.latest is not None
                and i.run.latest.job_id
            ),
            failed=outcome.failed,
            replayed=sum(1 for i in outcome.items if i.replayed),
        )
