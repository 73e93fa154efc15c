"""Admission: every check a run passes before anything of it is written or submitted.

The caller must be a member of the run's project; the spec's queue must be
one of the project's (it fills partition, account and QoS); the GPU type and
walltime must fit the queue; the run must be able to fit the project's and
the member's caps one day; the caller must map to an OS user on the run
host (root only where the site allows it); and the job's output files must
go where that OS user may write, never to a pseudo file system. With several
clusters (docs/clusters.md), the queue's cluster must be answering: a run for
a queue on a cluster that is down is refused, naming it and the queues open.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.adapters.runhost import RunHost
from gateway.adapters.slurm.clusters import SlurmClusters
from gateway.adapters.slurm.protocol import ClusterSlurm
from gateway.core.access.fit import Shape, misfits, shapes
from gateway.core.access.policy import require
from gateway.core.access.quota import Ask, never_fits
from gateway.core.access.values import Principal
from gateway.core.projects import Project, Queue
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.log_paths import fixed_directory, pattern_problem
from gateway.core.site.schema import ALLOW_ROOT
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import (
    Forbidden,
    NotFound,
    QuotaExceeded,
    SlurmError,
    SlurmUnavailable,
    SpecError,
    SpecIssue,
)
from gateway.services.runs.held_secrets import HeldSecrets
from gateway.store.access.access import AccessStore


@dataclass(frozen=True)
class Walltime:
    """The time limit a run's job will have, in minutes, and where it comes from."""

    minutes: int | None  # None: Slurm would give the job no limit
    source: str  # "the run's walltime_min", "partition cpu's DefaultTime" ...


@dataclass(frozen=True)
class Admitted:
    project: Project
    target: SubmitTarget
    os_user: str  # the OS account the run's jobs run as
    walltime: Walltime = Walltime(None, "not read")
    cluster: str | None = None  # the cluster the queue's partition is on (None: no clusters known)


class Admission:
    def __init__(self, access: AccessStore, host: RunHost, clusters: SlurmClusters | None = None) -> None:
        self.access = access
        self.host = host
        self.clusters = clusters  # each queue's cluster: its partitions' DefaultTime, shapes, health
        self.held = HeldSecrets(access, host)  # site and project secrets named by reference

    def slurm_of(self, queue: Queue) -> ClusterSlurm | None:
        """The backend of ``queue``'s cluster; None without clusters (tests that build no Slurm)."""
        return None if self.clusters is None else self.clusters.get(self.clusters.of_queue(queue))

    def open_cluster(self, project: Project, queue: Queue) -> str | None:
        """The name of ``queue``'s cluster, recorded on the run's attempts (None when the site file lists no
        clusters: the one cluster, recorded as before); SlurmUnavailable naming it, its queues and the
        open ones when that cluster is not answering (a submission would only wait on it)."""
        if self.clusters is None or not self.clusters.listed():
            return None
        name = self.clusters.of_queue(queue)
        down = self.clusters.down(name)
        if down is None:
            return name
        on = [q.name for q in project.queues if self.clusters.of_queue(q) == name]
        others = [
            q.name
            for q in project.queues
            if q.name not in on and self.clusters.down(self.clusters.of_queue(q)) is None
        ]
        open_text = f"other queues are open: {', '.join(others)}" if others else "no other queue is open"
        raise SlurmUnavailable(
            f"cluster {name} is not answering ({down.since_said()}); "
            f"queues on it: {', '.join(on)}; {open_text}; nothing was submitted",
            command="admission",
        )

    def walltime(self, spec: RunSpec, queue: Queue) -> Walltime:
        """The time limit the run's job will have: the spec's, else the one Slurm gives it.

        A run that gives no ``walltime_min`` (gw sbatch without ``-t``) gets no
        ``--time`` line, so Slurm applies the partition's ``DefaultTime``, else
        its ``MaxTime``; that is read here (``scontrol show partition``) for the
        quota's GPU-hours and the queue's limit. ``minutes`` None: the partition
        has neither (the job could run unlimited), which ``_queue_issues`` refuses.
        """
        if spec.resources.walltime_min is not None:
            return Walltime(spec.resources.walltime_min, "the run's walltime_min")
        slurm = self.slurm_of(queue)
        if slurm is None:
            return Walltime(None, f"partition {queue.partition}: no Slurm to read its DefaultTime from")
        part = next((p for p in slurm.partitions() if p.name == queue.partition), None)
        if part is not None and part.default_time_min:
            return Walltime(part.default_time_min, f"partition {queue.partition}'s DefaultTime")
        if part is not None and part.max_time_min:
            return Walltime(part.max_time_min, f"partition {queue.partition}'s MaxTime (no DefaultTime)")
        return Walltime(None, f"partition {queue.partition} has no DefaultTime and no MaxTime")

    def admit(self, spec: RunSpec, principal: Principal) -> Admitted:
        """Every check, in the order a user can best act on; raises NotFound, Forbidden, SpecError
        or QuotaExceeded with what to change."""
        with self.access.snapshot():  # the project and the site options as of one moment: one read
            project, target, walltime, cluster = self._project_and_target(spec, principal)
            os_user = self.os_user(principal)
            self._outputs(spec, os_user)
            self._secrets(spec, os_user, principal)
        return Admitted(project, target, os_user, walltime, cluster)

    def _project_and_target(
        self, spec: RunSpec, principal: Principal
    ) -> tuple[Project, SubmitTarget, Walltime, str | None]:
        if principal.role(spec.project) is None and not principal.is_admin:
            raise NotFound(f"no project {spec.project!r} that {principal.user} is a member of")
        require(principal, "run.submit", spec.project)
        try:
            project = self.access.project(spec.project)
        except NotFound as exc:
            raise NotFound(f"no project {spec.project!r}") from exc
        queue = project.queue(spec.queue) or _by_partition(project, spec.queue)
        if queue is None:
            valid = ", ".join(q.name for q in project.queues) or "none yet (ask an admin)"
            raise SpecError(
                [
                    SpecIssue(
                        "queue",
                        f"project {project.name} has no queue for it; its queues: {valid} "
                        "(a partition with no queue of your project is not open to it)",
                        spec.queue,
                    )
                ]
            )
        cluster = self.open_cluster(project, queue)
        walltime = self.walltime(spec, queue)
        issues = _queue_issues(spec, project, queue, walltime)
        issues += self._shape_issues(spec, project, queue, walltime)
        if issues:
            raise SpecError(issues)
        res = spec.resources
        gpu_type = _gpu_type(queue, res.gpu_type)[0] if res.gpus_asked() else None
        caps = [(f"project {project.name}", project.quota)]
        member = next((m for m in project.members if m.user == principal.user), None)
        if member is not None:
            caps.append((f"user {principal.user} in project {project.name}", member.quota))
        problems = never_fits(Ask.of(spec, walltime_min=walltime.minutes), caps)
        if problems:
            raise QuotaExceeded("this run can never start: " + "; ".join(problems))
        target = SubmitTarget(
            partition=queue.partition, account=project.slurm_account, qos=queue.qos, gpu_type=gpu_type
        )
        return project, target, walltime, cluster

    def _shape_issues(
        self, spec: RunSpec, project: Project, queue: Queue, walltime: Walltime
    ) -> list[SpecIssue]:
        """What the run asks that no node of its queue's partition could ever hold (``core/access/fit.py``),
        from the cached Slurm's partitions and nodes; nothing when Slurm cannot be read (sbatch decides)."""
        slurm = self.slurm_of(queue)
        if slurm is None or self.clusters is None:
            return []
        try:
            known = shapes(slurm.partitions(), slurm.node_sizes())
        except SlurmError:
            return []  # unknown is not a refusal: sbatch still checks the job itself
        shape = known.get(queue.partition)
        if shape is None:
            return []
        cluster = self.clusters.of_queue(queue)
        others: dict[str, Shape] = {
            q.name: known[q.partition]
            for q in project.queues
            if q.name != queue.name and q.partition in known and self.clusters.of_queue(q) == cluster
        }
        found = misfits(spec.resources, walltime.minutes, queue.name, shape, others)
        return [SpecIssue(m.field, m.message, m.value) for m in found]

    def os_user(self, principal: Principal) -> str:
        """The OS user jobs of ``principal`` run as; root only where the site file allows it."""
        user = principal.os_user
        if not user:
            raise Forbidden(f"user {principal.user} has no OS user to run jobs as; ask an admin to map one")
        if user == "root" and not self.access.option(ALLOW_ROOT, False):
            raise Forbidden(
                f"user {principal.user} maps to root, which this site does not allow (allow_root_mapping)"
            )
        if self.host.account(user) is None:
            raise Forbidden(
                f"user {principal.user} maps to OS user {user!r}, which does not exist on this host; "
                "ask an admin to fix the mapping or create the account"
            )
        return user

    def _outputs(self, spec: RunSpec, os_user: str) -> None:
        """stdout/stderr go where ``os_user`` may write, and never to /proc, /sys or /dev."""
        issues = []
        for stream in ("stdout", "stderr"):
            pattern = getattr(spec, stream)
            if pattern is None:
                continue
            problem = pattern_problem(pattern)
            if problem is None and pattern != "/dev/null":
                directory = fixed_directory(pattern)
                why = self.host.writable_dir(directory, as_user=os_user)
                if why is not None:
                    problem = f"the job runs as {os_user}, who cannot write there: {why}"
            if problem is not None:
                issues.append(SpecIssue(stream, problem, pattern))
        if issues:
            raise SpecError(issues)

    def _secrets(self, spec: RunSpec, os_user: str, principal: Principal) -> None:
        """Each secret's file is a regular file ``os_user`` can read (opened as that user, never read);
        each site or project secret is defined, ``principal`` may use it, and its value can be read."""
        issues = self.held.issues(spec, principal)
        for name, item in sorted(spec.secrets.items()):
            if item.file is None:
                continue
            why = self.host.readable_file(item.file, as_user=os_user)
            if why is not None:
                problem = f"the job runs as {os_user}, who cannot read this secret's file: {why}"
                issues.append(SpecIssue(f"secrets.{name}.file", problem, item.file))
        if issues:
            raise SpecError(issues)


def _queue_issues(spec: RunSpec, project: Project, queue: Queue, walltime: Walltime) -> list[SpecIssue]:
    """What the run asks that its queue does not allow: GPU type, QoS, walltime, whole-node memory."""
    issues = []
    res = spec.resources
    problem = _gpu_type(queue, res.gpu_type)[1] if res.gpus_asked() else None
    if problem:
        issues.append(SpecIssue("resources.gpu_type", problem, res.gpu_type))
    if spec.qos is not None and queue.qos is not None and spec.qos != queue.qos:
        issues.append(
            SpecIssue(
                "qos",
                f"queue {queue.name} runs jobs under QoS {queue.qos}; give that or none "
                "(the gateway's rule: the queue's qos in the site file)",
                spec.qos,
            )
        )
    if walltime.minutes is None:
        issues.append(
            SpecIssue(
                "resources.walltime_min",
                f"no walltime given and {walltime.source}: the gateway plans GPU-hour quotas from the "
                "job's time limit; give one (walltime_min, sbatch -t)",
            )
        )
    elif queue.max_walltime_min is not None and walltime.minutes > queue.max_walltime_min:
        given = "" if res.walltime_min is not None else f" (no walltime given: {walltime.source})"
        issues.append(
            SpecIssue(
                "resources.walltime_min",
                f"queue {queue.name} allows at most {queue.max_walltime_min} minutes{given} (the "
                "gateway's rule, not Slurm's: the queue's max_walltime_min in the site file)",
                walltime.minutes,
            )
        )
    if res.mem_gb == 0 and not queue.whole_node_mem:
        allowing = ", ".join(q.name for q in project.queues if q.whole_node_mem) or "none (ask an admin)"
        issues.append(
            SpecIssue(
                "resources.mem_gb",
                f"memory 0 (sbatch --mem=0: all of each node's memory) is not allowed on queue {queue.name}; "
                f"queues of project {project.name} that allow it (whole_node_mem): {allowing}. "
                "Give a size (--mem=4G)",
                0,
            )
        )
    return issues


def _by_partition(project: Project, partition: str) -> Queue | None:
    """The project's one queue on Slurm partition ``partition`` (sbatch's -p names a partition)."""
    found = [q for q in project.queues if q.partition == partition]
    return found[0] if len(found) == 1 else None


def _gpu_type(queue: Queue, asked: str | None) -> tuple[str | None, str | None]:
    """The queue's spelling of the asked GPU type (matched case-insensitively), or why none fits.

    An untyped request on a queue with one GPU type gets that type, as Slurm gives it.
    """
    types = queue.gpu_types
    if not types:
        return asked, None
    if asked is None:
        if len(types) == 1:
            return None, None  # Slurm has only that type to give; the request stays untyped, as sbatch's
        return (
            None,
            f"queue {queue.name} has GPU types {', '.join(types)}; name one, such as gpu:{types[0]}:N "
            "(the gateway's rule for a queue of several GPU types, not Slurm's: the queue's gpu_types "
            "in the site file)",
        )
    match = next((t for t in types if t.lower() == asked.lower()), None)
    if match is None:
        return None, (
            f"queue {queue.name} allows GPU types {', '.join(types)}; name one of them "
            "(the gateway's rule: the queue's gpu_types in the site file)"
        )
    return match, None
