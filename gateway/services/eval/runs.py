"""Eval runs: scoring an artifact on a suite version as an ordinary gateway run, and reading them.

``start`` resolves the suite version and the artifact (by sha256, or a
run's output), builds the eval job's run spec (``gateway.core.eval.job``)
and submits it through ``RunService``: the same admission, templates,
queues, quotas, failure classes, retries and accounting as any run. The
eval run then links the gateway run to the suite version, the artifact and
the run that wrote the artifact; ``EvalIngest`` reads its results when it
ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.core.access.policy import allowed, require, visible_projects
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.eval.domain import EvalRun, SuiteVersionRecord
from gateway.core.eval.job import ArtifactInput, eval_run_spec
from gateway.core.lineage.values import Artifact
from gateway.core.runs.values import Run
from gateway.errors import NotFound, SpecError, SpecIssue, SubmitRejected
from gateway.services.envs.site_eval import SiteEvalEnvironment
from gateway.services.eval.suites import EvalSuiteService
from gateway.services.runs.run_service import RunService
from gateway.store.eval.evals import EvalStore, NewEvalRun
from gateway.store.lineage.lineage import LineageStore
from gateway.store.runs.runs import RunStore


@dataclass(frozen=True)
class EvalJobSettings:
    python: str | None  # the interpreter of run_eval.py in the job; None: the built-in environment
    eval_dir: str  # the site's eval/ directory, as compute nodes see it
    environment: str | None = None  # the site's default eval environment (PROJECT/NAME@N); None: python


@dataclass(frozen=True)
class ArtifactChoice:
    """Which artifact an eval run scores: by content, or a run's output (by path when it has several)."""

    sha256: str | None = None
    run_id: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class StartedEval:
    eval_run: EvalRun
    run: Run
    replayed: bool = False


class EvalRunService:
    def __init__(
        self,
        store: EvalStore,
        suites: EvalSuiteService,
        runs: RunService,
        run_store: RunStore,
        lineage: LineageStore,
        job: EvalJobSettings,
        site_env: SiteEvalEnvironment | None = None,
    ) -> None:
        self.site_env = site_env  # built on first need when neither job.environment nor job.python is set
        self.store = store
        self.suites = suites
        self.runs = runs
        self.run_store = run_store
        self.lineage = lineage
        self.job = job

    def start(
        self,
        suite: str,
        artifact: ArtifactChoice,
        *,
        principal: Principal,
        queue: str | None = None,
        idempotency_key: str | None = None,
    ) -> StartedEval:
        """Submit the eval of ``artifact`` on ``suite`` (``project/name@version``).

        Raises SpecError (bad reference, no queue, the artifact is ambiguous),
        NotFound (a suite, run or artifact the caller may not read), Forbidden
        (below member), and whatever the submission raises (QuotaExceeded,
        SubmitRejected: the eval run is linked to the run on record even then).
        """
        version = self.suites.resolve(suite, principal=principal)
        require(principal, "eval.run", version.project)
        found, training = self._artifact(artifact, principal)
        target = queue or version.suite.queue
        if target is None:
            raise SpecError(
                [SpecIssue("queue", f"suite {version.ref} names no queue; give one for its jobs")]
            )
        abs_path = f"{training.run_dir}/{found.path}"
        environment, dependency = self._environment(version, target, principal)
        spec = eval_run_spec(
            version,
            ArtifactInput(abs_path, found.sha256),
            queue=target,
            python=self.job.python or "python3",
            eval_dir=self.job.eval_dir,
            environment=environment,
            dependency=dependency,
        )
        try:
            submitted = self.runs.submit_keyed(spec, principal=principal, idempotency_key=idempotency_key)
        except SubmitRejected as exc:
            run_id = getattr(exc, "run_id", None)
            if run_id:
                self._link(run_id, version, found, abs_path, training, principal)
            raise
        eval_run = self._link(submitted.run.id, version, found, abs_path, training, principal)
        return StartedEval(eval_run, submitted.run, submitted.replayed)

    def _environment(
        self, version: SuiteVersionRecord, queue: str, principal: Principal
    ) -> tuple[str | None, str | None]:
        """(environment, dependency) of the eval job: the suite's environment, else the site's
        default (GATEWAY_EVAL_ENVIRONMENT), else, with no GATEWAY_EVAL_PYTHON either, the built-in
        one, registered and built on first need (the job then waits for its build job)."""
        named = version.suite.environment or self.job.environment
        if named is not None or self.job.python is not None or self.site_env is None:
            return named, None
        site = self.site_env.ensure(project=version.project, queue=queue, principal=principal)
        return site.ref, self.site_env.dependency(site)

    def _link(
        self,
        run_id: str,
        version: SuiteVersionRecord,
        artifact: Artifact,
        abs_path: str,
        training: Run,
        principal: Principal,
    ) -> EvalRun:
        eval_run, _ = self.store.create_eval_run(
            NewEvalRun(
                run_id=run_id,
                project=version.project,
                suite_version_id=version.id,
                artifact_sha256=artifact.sha256,
                artifact_path=abs_path,
                artifact_run_id=training.id,
                submitted_by=principal.user,
            ),
            audit=AuditEntry(
                actor=principal.user,
                action="eval.run",
                target_type="eval_run",
                target_id="",
                project=version.project,
                source=principal.source,
                after={"suite_version": version.ref, "artifact_run_id": training.id, "path": artifact.path},
            ),
        )
        return eval_run

    def _artifact(self, choice: ArtifactChoice, principal: Principal) -> tuple[Artifact, Run]:
        """The artifact ``choice`` names and the run that wrote it, among what the caller may read."""
        if (choice.sha256 is None) == (choice.run_id is None):
            raise SpecError([SpecIssue("artifact", "give the artifact's sha256, or a run id (and a path)")])
        if choice.sha256 is not None:
            sha = choice.sha256.lower()
            for candidate in self.lineage.artifacts_by_sha256(sha):
                run = self.run_store.get_run(candidate.run_id)
                if allowed(principal, "run.read", run.project):
                    return candidate, run
            raise NotFound(
                f"no artifact with sha256 {sha} that you may read (is its run's output harvested?)"
            )
        assert choice.run_id is not None
        run = self.run_store.get_run(choice.run_id)
        if not allowed(principal, "run.read", run.project):
            raise NotFound(f"no run {choice.run_id!r}")
        newest: dict[str, Artifact] = {}
        for item in self.lineage.artifacts(run.id):
            if item.path not in newest or item.id > newest[item.path].id:
                newest[item.path] = item
        if choice.path is not None:
            if choice.path not in newest:
                listed = ", ".join(sorted(newest)) or "none (yet)"
                raise NotFound(f"run {run.id} has no artifact {choice.path!r}; its artifacts: {listed}")
            return newest[choice.path], run
        if len(newest) != 1:
            listed = ", ".join(sorted(newest)) or "none (yet: the harvest registers them when the run ends)"
            raise SpecError(
                [SpecIssue("artifact_path", f"run {run.id} has {len(newest)} artifacts; name one: {listed}")]
            )
        return next(iter(newest.values())), run

    # -- reading ----------------------------------------------------------------------------------

    def get(self, eval_run_id: str, *, principal: Principal) -> EvalRun:
        """One eval run, if the caller may read its project (else NotFound)."""
        eval_run = self.store.eval_run(eval_run_id)
        if not allowed(principal, "eval.read", eval_run.project):
            raise NotFound(f"no eval run {eval_run_id!r}")
        return eval_run

    def list(
        self,
        *,
        principal: Principal,
        project: str | None = None,
        artifact_sha256: str | None = None,
        limit: int = 200,
    ) -> list[EvalRun]:
        """Eval runs of the projects the caller may read, newest first."""
        visible = visible_projects(principal)
        if project is not None:
            if visible is not None and project not in visible:
                return []
            visible = [project]
        sha = artifact_sha256.lower() if artifact_sha256 else None
        return self.store.eval_runs(visible, artifact_sha256=sha, limit=limit)
