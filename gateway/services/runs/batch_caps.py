"""A batch's caps counted together: its runs may each fit a project's and a member's caps and still
not fit them all at once (``gateway.services.runs.batch``, step 2)."""

from __future__ import annotations

from gateway.core.access.quota import Ask
from gateway.core.access.values import Principal
from gateway.core.projects import Quota
from gateway.errors import QuotaExceeded
from gateway.services.runs.batch_items import ItemOutcome, PendingItem


def within_caps(
    pending: list[PendingItem], principal: Principal, outcomes: dict[int, ItemOutcome]
) -> list[PendingItem]:
    """The items, in order, as long as the batch so far fits each cap it counts against: monthly
    GPU-hours (every run's walltime x GPUs, each array task counted) and jobs in queue (a run is one
    job, an array one per task). An item past a cap is refused, QuotaExceeded, with the totals.

    GPUs at once is not counted: a batch's runs may wait for each other, as single runs do."""
    used: dict[str, tuple[float, int]] = {}
    fitting = []
    for item in pending:
        assert item.admitted is not None
        project = item.admitted.project
        tasks = len(item.spec.sweep.expand()) if item.spec.sweep else 1
        ask = Ask.of(item.spec, walltime_min=item.admitted.walltime.minutes)
        caps: list[tuple[str, Quota]] = [(f"project {project.name}", project.quota)]
        member = next((m for m in project.members if m.user == principal.user), None)
        if member is not None:
            caps.append((f"user {principal.user} in project {project.name}", member.quota))
        problems = []
        for scope, quota in caps:
            hours, jobs = used.get(scope, (0.0, 0))
            hours, jobs = hours + ask.gpu_hours * tasks, jobs + tasks
            cap_hours, cap_jobs = quota.gpu_hours_per_month, quota.jobs_in_queue
            if cap_hours is not None and hours > cap_hours:
                problems.append(
                    f"the batch up to this run may use {hours:g} GPU-hours, over the monthly cap of {scope} "
                    f"({cap_hours}): send fewer runs, shorter walltimes or fewer GPUs"
                )
            if cap_jobs is not None and jobs > cap_jobs:
                problems.append(
                    f"the batch up to this run queues {jobs} jobs, over the jobs-in-queue cap of {scope} "
                    f"({cap_jobs}): send at most {cap_jobs} at once"
                )
        if problems:
            outcomes[item.index] = ItemOutcome(
                item.index,
                None,
                QuotaExceeded("this run does not fit the batch's caps: " + "; ".join(problems)),
            )
            continue
        for scope, _ in caps:
            hours, jobs = used.get(scope, (0.0, 0))
            used[scope] = (hours + ask.gpu_hours * tasks, jobs + tasks)
        fitting.append(item)
    return fitting
