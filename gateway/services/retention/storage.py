"""Storage in the reports: run-directory bytes measured on the run host (as each run's OS user),
cached, per project, user and run; growth over time; what the next sweep would free; the space
limit's warning (on submit, on the project page, in ``gw report storage`` and ``/metrics``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from gateway.adapters.runhost import RunHost
from gateway.core.access.policy import require, visible_projects
from gateway.core.access.values import Principal
from gateway.core.clock import utcnow
from gateway.core.retention.plan import WHOLE_DIR
from gateway.core.retention.policy import GIB
from gateway.core.retention.values import Departure, RunStorage, StorageSample
from gateway.errors import GatewayError
from gateway.services.retention.policies import Policies
from gateway.services.retention.sweep import RetentionSweeper
from gateway.store.access.access import AccessStore
from gateway.store.retention.retention import RetentionStore

By = Literal["project", "user", "run"]
BY: tuple[By, ...] = ("project", "user", "run")
MEASURE_CHUNK = 200  # run directories per run host call
GROWTH_DAYS = 30


@dataclass(frozen=True)
class StorageRow:
    key: str  # the project, "project/user" or the run id
    project: str
    user: str | None
    run_id: str | None
    size_bytes: int
    files: int
    runs: int
    freeable_bytes: int  # what the next sweep would delete of it
    measured_at: datetime | None


@dataclass(frozen=True)
class ProjectSpace:
    project: str
    size_bytes: int | None  # None: never measured
    limit_bytes: int | None
    warn_bytes: int | None
    freeable_bytes: int
    growth_bytes: int | None  # over the last GROWTH_DAYS days of samples
    status: str  # unmeasured | unlimited | ok | warn | over
    warning: str | None


@dataclass(frozen=True)
class StorageReport:
    by: str
    rows: list[StorageRow] = field(default_factory=list)
    projects: list[ProjectSpace] = field(default_factory=list)
    samples: list[StorageSample] = field(default_factory=list)
    departures: list[Departure] = field(default_factory=list)  # who left, and who answers for their files


class StorageService:
    def __init__(
        self,
        store: RetentionStore,
        access: AccessStore,
        host: RunHost,
        sweeper: RetentionSweeper,
        *,
        next_sweep_in_s: float,
    ) -> None:
        self.store = store
        self.access = access
        self.host = host
        self.sweeper = sweeper
        self.policies = Policies(access)
        self.next_sweep_in_s = next_sweep_in_s

    def measure_all(self, now: datetime, project: str | None = None) -> list[str]:
        """Measure every kept run directory (of ``project``), cache the sizes with what the next sweep
        would free, and add one sample per project; returns the problems met."""
        projects = [project] if project else None
        problems: list[str] = []
        by_user: dict[str, list[tuple[str, str, str, str]]] = defaultdict(list)
        for run_id, proj, submitter, run_dir, os_user in self.store.runs_of(projects):
            if not os_user:
                problems.append(f"{run_id}: no OS user recorded; not measured")
                continue
            by_user[os_user].append((run_id, proj, submitter, run_dir))
        freeable = self._freeable(now, projects)
        rows: list[RunStorage] = []
        gone: list[str] = []
        for os_user, runs in sorted(by_user.items()):
            for start in range(0, len(runs), MEASURE_CHUNK):
                chunk = runs[start : start + MEASURE_CHUNK]
                try:
                    usages = self.host.measure_dirs([r[3] for r in chunk], as_user=os_user)
                except GatewayError as exc:
                    problems.append(f"run directories of {os_user} not measured: {exc}")
                    continue
                for (run_id, proj, submitter, run_dir), usage in zip(chunk, usages, strict=True):
                    if not usage.exists:
                        gone.append(run_id)
                        continue
                    rows.append(
                        RunStorage(
                            run_id,
                            proj,
                            submitter,
                            run_dir,
                            usage.size_bytes,
                            usage.files,
                            min(freeable.get(run_id, 0), usage.size_bytes),
                            now,
                            usage.error,
                        )
                    )
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for row in rows:
            totals[row.project][0] += row.size_bytes
            totals[row.project][1] += 1
        samples = [StorageSample(p, now, size, count) for p, (size, count) in sorted(totals.items())]
        self.store.put_storage(rows, samples, gone)
        return problems

    def _freeable(self, now: datetime, projects: list[str] | None) -> dict[str, int]:
        """run id -> bytes the sweep after this one would delete (sizes measured, nothing hashed)."""
        deletions, _kept = self.sweeper.plan(projects, now + timedelta(seconds=self.next_sweep_in_s))
        per_run: dict[str, list] = defaultdict(list)
        for deletion in deletions:
            per_run[deletion.run_id].append(deletion)
        freeable: dict[str, int] = {}
        for run_id, items in per_run.items():
            first = items[0]
            try:
                measured = self.host.measure_paths(
                    first.run_dir, [d.rel for d in items], as_user=first.os_user, digest=False
                )
            except GatewayError:
                continue
            freeable[run_id] = sum(m.size_bytes for m in measured if m.exists and not m.error)
            if any(d.rel == WHOLE_DIR for d in items):
                freeable[run_id] = max(m.size_bytes for m in measured)
        return freeable

    def report(
        self,
        principal: Principal,
        *,
        by: str = "project",
        project: str | None = None,
        now: datetime | None = None,
    ) -> StorageReport:
        """Bytes per project, user or run of the projects the caller may read (``project``: one)."""
        if by not in BY:
            from gateway.errors import SpecError, SpecIssue

            raise SpecError(
                [SpecIssue("by", f"must be one of {', '.join(BY)}", by)], location="query", what="query"
            )
        if project is not None:
            require(principal, "retention.read", project, hide=True)
            projects: list[str] | None = [project]
        else:
            projects = visible_projects(principal)
        cached = self.store.storage(projects)
        rows = _rows(cached, by)
        names = sorted(
            {r.project for r in cached} | set(projects or [p.name for p in self.access.projects()])
        )
        since = (now or utcnow()) - timedelta(days=GROWTH_DAYS)
        samples = self.store.samples(names, None)
        spaces = [self._space(name, cached, samples, since) for name in names]
        departures = [d for d in self.store.departures() if d.project in names]
        return StorageReport(by, rows, spaces, samples, departures)

    def space(self, project: str) -> ProjectSpace:
        """One project's space against its limit, growth left out (no permission check: for the submit
        warning and /metrics); one aggregate query, and the policy from the cached site options."""
        totals = self.store.project_totals(project)
        return self._judge(project, totals, None)

    def warning(self, project: str) -> str | None:
        """The words a submit to ``project`` carries when its run directories are near or over the
        space limit; None otherwise (or when nothing is measured yet). Without a space limit in the
        project's policy there is nothing to warn of, and its run directories are not summed (every
        submission asks)."""
        try:
            policy = self.policies.of(project)
            if policy.space_limit_bytes is None or policy.space_warn_bytes is None:
                return None
            return self.space(project).warning
        except GatewayError:
            return None

    def _space(
        self, project: str, cached: list[RunStorage], samples: list[StorageSample], since: datetime | None
    ) -> ProjectSpace:
        mine = [r for r in cached if r.project == project]
        totals = (sum(r.size_bytes for r in mine), sum(r.freeable_bytes for r in mine)) if mine else None
        series = [s for s in samples if s.project == project]
        growth = None
        if series:
            start = next((s for s in series if since is None or s.at >= since), series[0])
            growth = series[-1].size_bytes - start.size_bytes
        return self._judge(project, totals, growth)

    def _judge(self, project: str, totals: tuple[int, int] | None, growth: int | None) -> ProjectSpace:
        """The project's (size, freeable) against its policy's limit: status and the warning."""
        policy = self.policies.of(project)
        limit, warn = policy.space_limit_bytes, policy.space_warn_bytes
        size, freeable = totals if totals is not None else (None, 0)
        status, warning = "unmeasured", None
        if size is not None:
            status = "unlimited"
            if limit is not None and warn is not None:
                status = "over" if size > limit else "warn" if size >= warn else "ok"
                if status != "ok":
                    over = ", over the limit" if status == "over" else ""
                    warning = (
                        f"project {project}'s run directories use {_gib(size)} of its {_gib(limit)} "
                        f"space limit ({100 * size / limit:.0f}%{over}; the warning starts at "
                        f"{policy.space_warn_percent}%). The next retention sweep frees {_gib(freeable)}; "
                        "delete what you no longer need, or ask a lead for more space "
                        "(gw report storage --by run)."
                    )
        return ProjectSpace(project, size, limit, warn, freeable, growth, status, warning)


def _rows(cached: list[RunStorage], by: str) -> list[StorageRow]:
    if by == "run":
        return [
            StorageRow(
                r.run_id,
                r.project,
                r.submitter,
                r.run_id,
                r.size_bytes,
                r.files,
                1,
                r.freeable_bytes,
                r.measured_at,
            )
            for r in cached
        ]
    groups: dict[tuple[str, str | None], list[RunStorage]] = defaultdict(list)
    for r in cached:
        groups[(r.project, r.submitter if by == "user" else None)].append(r)
    rows = [
        StorageRow(
            f"{project}/{user}" if user else project,
            project,
            user,
            None,
            sum(r.size_bytes for r in items),
            sum(r.files for r in items),
            len(items),
            sum(r.freeable_bytes for r in items),
            min(r.measured_at for r in items),
        )
        for (project, user), items in groups.items()
    ]
    return sorted(rows, key=lambda r: (-r.size_bytes, r.key))


def _gib(size: int) -> str:
    return f"{size / GIB:.2f} GiB" if size >= GIB / 100 else f"{size:,} bytes"
