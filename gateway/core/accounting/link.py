"""Which gateway attempt (if any) an accounting record is, and which project pays for it.

A record belongs to a gateway attempt when it ran on the attempt's cluster
(job ids are unique per cluster only: two clusters each have a job 42), its
base job id (the job id, or the array job id of an array task) is the
attempt's job id, and it is the
attempt's own record of that job: the one with the attempt's submit time
(the refresh stores each attempt's own record's), or else the one at the
attempt's place among the job's known records ordered by submit time
(``Attempt.slurm_record``: a Slurm requeue keeps the job id and adds a
record, and the gateway adds an attempt for it). The tag guards
against a job id that slurmdbd reused: when the job's first record carries
a comment, it must be the attempt's tag (a requeued record's own comment is
empty, so the first one speaks for the job). Records of no gateway attempt
are charged to the project whose Slurm account they ran under, if any.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from gateway.core.accounting.records import GatewayAttempt, RecordLink, SacctRecord
from gateway.core.slurm.tags import job_comment


def base_job_id(record: SacctRecord) -> str:
    """The job id a gateway attempt stores for ``record``: the array job id of a task, else JobIDRaw."""
    return record.array_job_id or record.job_id_raw


def link_records(
    records: Sequence[SacctRecord],
    attempts: Sequence[GatewayAttempt],
    siblings: Mapping[tuple[str, str], Sequence[tuple[datetime, str | None]]],
    projects_by_account: Mapping[str, str],
) -> list[RecordLink]:
    """The link of each record, in order.

    ``siblings`` maps (cluster, shown job id: ``123``, ``123_4``) to every known record of that job
    (those being saved and those already stored) as (submit time, comment); ``projects_by_account``
    maps a Slurm account to its project.
    """
    by_job: dict[tuple[str, str], list[GatewayAttempt]] = {}
    for attempt in attempts:
        by_job.setdefault((attempt.cluster, attempt.job_id), []).append(attempt)
    links = []
    for record in records:
        candidates = by_job.get((record.cluster, base_job_id(record)), [])
        linked = _attempt_of(record, candidates, siblings.get((record.cluster, record.job_id), ()))
        if linked is not None:
            links.append(RecordLink(linked.run_id, linked.attempt_id, linked.number, linked.project))
        else:
            links.append(RecordLink(project=projects_by_account.get(record.account or "")))
    return links


def _attempt_of(
    record: SacctRecord, candidates: Sequence[GatewayAttempt], siblings: Sequence[tuple[datetime, str | None]]
) -> GatewayAttempt | None:
    if not candidates:
        return None
    known = sorted({**dict(siblings), record.submit_time: record.comment}.items())
    first_comment = known[0][1]
    rank = [t for t, _ in known].index(record.submit_time)
    ranked = [a for a in candidates if a.slurm_record == rank]
    exact = [a for a in candidates if a.submit_time == record.submit_time]
    chosen = exact[0] if exact else ranked[0] if ranked else None
    if chosen is None:
        return None
    if first_comment is not None and first_comment != job_comment(chosen.tag):
        return None  # the job id is another job's (reused): its first record names another tag
    return chosen
