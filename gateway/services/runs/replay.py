"""Idempotency keys of submissions: the claim a request makes on its key, and what a replay answers.

A client that retries a submission after a cut connection sends the same ``Idempotency-Key``: the
claim (the key, the operation and its spec's hash) is committed with the run, so the retry gets the
first run back, or Slurm's refusal of it again; the same key with another request is a Conflict.
A single run (``RunService.submit_keyed``) and each item of a batch (``gateway.services.runs.batch``)
claim and replay their keys here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gateway.core.access.values import Principal
from gateway.core.runs.idempotency import ClaimedKey, IdempotencyClaim
from gateway.core.runs.values import Run
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import Conflict, SubmitRejected
from gateway.store.runs.runs import RunStore


@dataclass(frozen=True)
class Submitted:
    run: Run
    replayed: bool = False  # an earlier request with the same Idempotency-Key made this run
    warnings: tuple[str, ...] = ()  # e.g. the project's run directories near or over their space limit


def claim_key(
    principal: Principal, key: str | None, operation: str, spec: RunSpec, *, ttl_s: float
) -> IdempotencyClaim | None:
    """The claim on ``key`` for this request (its spec's hash: a request without a key skips it),
    kept ``ttl_s`` seconds (``idempotency_ttl_s``)."""
    if key is None:
        return None
    expires = datetime.now(UTC) + timedelta(seconds=ttl_s)
    digest = hashlib.sha256(f"{operation}\n{spec.spec_hash()}".encode()).hexdigest()
    return IdempotencyClaim(principal.user, key, operation, digest, expires)


def replay(store: RunStore, claim: IdempotencyClaim, earlier: ClaimedKey) -> Submitted:
    """The answer an earlier request with the same key got: its run, or Slurm's refusal again."""
    if earlier.request_sha256 != claim.request_sha256:
        raise Conflict(
            f"Idempotency-Key {claim.key!r} was used for another request ({earlier.operation}, run "
            f"{earlier.run_id}); use a new key for a new submission"
        )
    run = store.get_run(earlier.run_id)
    first = run.attempts[0]
    if first.state is RunState.NEVER_SUBMITTED and first.reason and len(run.attempts) == 1:
        rejected = SubmitRejected(first.reason)
        rejected.run_id = run.id  # type: ignore[attr-defined]  # the interfaces read it (getattr) to name the run
        raise rejected
    return Submitted(run, replayed=True)
