"""A batch's runs recorded and sent (``gateway.services.runs.batch``, steps 4 and 5).

Every run is committed in one transaction, each with its first attempt SUBMITTING under its unique
tag, before any script can reach Slurm; then ``batch_submit_parallel`` sending threads each take a
run through ``Submission.prepare``, its run directory (``FirstAttempt.prepare_dir``) and
``Submission.transmit``, and every job id Slurm gave is recorded in one more transaction
(``record_sent``). A crash at any point leaves SUBMITTING attempts that ``Refresher.reconcile``
settles by their tags.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.slurm.protocol import ClusterSlurm
from gateway.core.runs.values import Run
from gateway.errors import GatewayError
from gateway.services.runs.batch_items import ItemOutcome, PendingItem
from gateway.services.runs.first_attempt import FirstAttempt, queued
from gateway.services.runs.replay import replay
from gateway.services.runs.submission import Submission, record_sent
from gateway.store.runs.runs import RunStore


def _backend(clusters: SlurmClusters, cluster: str | None) -> ClusterSlurm | GatewayError:
    """The backend of ``cluster``, or why there is none (its sends record that error)."""
    try:
        return clusters.get(cluster)
    except GatewayError as exc:
        return exc


def _record(
    store: RunStore, pending: list[PendingItem], outcomes: dict[int, ItemOutcome]
) -> list[tuple[PendingItem, Run]]:
    """Every run in one transaction: the runs written, each with its item; an item whose key a
    concurrent request claimed first gets that request's answer."""
    written = store.create_runs([(p.new, p.audit, p.claim) for p in pending if p.new is not None])
    to_send: list[tuple[PendingItem, Run]] = []
    for item, run in zip(pending, written, strict=True):
        if run is not None:
            to_send.append((item, run))
            continue
        assert item.claim is not None  # a concurrent request with the same key won the race
        earlier = store.claimed_key(item.claim.user, item.claim.key)
        assert earlier is not None
        try:
            outcomes[item.index] = ItemOutcome(
                item.index, replay(store, item.claim, earlier).run, replayed=True
            )
        except GatewayError as exc:
            outcomes[item.index] = ItemOutcome(item.index, None, exc)
    return to_send


def record_and_send(
    pending: list[PendingItem],
    outcomes: dict[int, ItemOutcome],
    *,
    store: RunStore,
    clusters: SlurmClusters,
    first: FirstAttempt,
    parallel: int,
) -> None:
    """One transaction for every run, then each attempt sent, ``parallel`` (``batch_submit_parallel``)
    at once; each item's outcome into ``outcomes``."""
    to_send = _record(store, pending, outcomes)

    # Each cluster's backend looked up here, in the batch's snapshot, not once per run in the sending
    # threads (which the snapshot does not reach: each look-up would read the access generation).
    backends = {c: _backend(clusters, c) for c in {run.attempts[0].cluster for _, run in to_send}}

    def send(pair: tuple[PendingItem, Run]) -> ItemOutcome | tuple[PendingItem, Run, str | None]:
        """Prepare, make the run directory, transmit: the job id (recorded after, for all at once)."""
        item, run = pair
        attempt = run.attempts[0]
        backend = backends[attempt.cluster]
        try:
            if isinstance(backend, GatewayError):
                raise backend
            submission = Submission.prepare(
                backend,
                store,
                tag=attempt.tag,
                as_user=run.os_user,
                comment=item.spec.comment,
                mail_user=item.spec.mail_user,
                script_path=first.script_path(run.run_dir),
            )
        except GatewayError as exc:
            store.mark_never_submitted(attempt.id, f"cannot start the submission: {exc}", source="gateway")
            return ItemOutcome(item.index, store.get_run(run.id), exc)
        try:
            first.prepare_dir(run, item.inputs, submission)
            return item, run, submission.transmit(attempt, run.script)
        except GatewayError as exc:
            exc.run_id = run.id  # type: ignore[attr-defined]  # the interfaces name the run
            return ItemOutcome(item.index, store.get_run(run.id), exc)

    workers = max(1, min(parallel, len(to_send)))
    if workers == 1:
        results = [send(pair) for pair in to_send]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="batch-submit") as pool:
            results = list(pool.map(send, to_send))
    answered: list[tuple[PendingItem, Run, str]] = []
    for result in results:
        if isinstance(result, ItemOutcome):
            outcomes[result.index] = result
        elif result[2] is None:  # Slurm did not answer: SUBMITTING, with the note, until reconciled
            outcomes[result[0].index] = ItemOutcome(result[0].index, store.get_run(result[1].id))
        else:
            answered.append((result[0], result[1], result[2]))
    recorded = record_sent(store, [(run.attempts[0], job) for _, run, job in answered], source="gateway")
    for item, run, _ in answered:
        sent = recorded.get(run.attempts[0].id)
        current = queued(run, sent) if sent is not None else store.get_run(run.id)
        outcomes[item.index] = ItemOutcome(item.index, current)
