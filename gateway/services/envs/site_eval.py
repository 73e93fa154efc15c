"""The site's default eval environment: the lm-eval lock the gateway ships, built on first need.

An eval job whose suite names no environment, on a gateway whose settings name neither
``eval_environment`` nor ``eval_python``, runs in ``site/lm-eval@N``: a locked Python environment of
the site (project ``SITE_PROJECT``, read by every user) whose lock is ``environments/lm-eval.lock``
of the eval directory (``scripts/eval-env-lock`` writes it: lm-eval and PyYAML and what they
require, pinned as installed in the gateway's own venv, with the sha256 of each file).

- The first eval that needs it registers the version (``EnvironmentService.register_site``,
  audited) and submits its build job: an ordinary run of that eval's project, in the eval's queue,
  as its user. pip may build the lock's source archives (a few pins publish no wheel), their hashes
  checked as a wheel's are.
- That eval, and every eval submitted while the build runs, waits for the build job in Slurm
  (``--dependency=afterok:<build job>``, ``--kill-on-invalid-dep=yes``): when the build fails, Slurm
  cancels them, and reading their environment says why (``RunEnvironment.warnings``).
- Exactly once: a version is unique by content digest, so two first evals at once register one
  version; only the request that created it submits the build, the other waits here (``wait_s``)
  for the build job's id before it submits.
- A build that failed is built again on the next need (``EnvironmentService.rebuild``: a new
  directory, the failure kept and audited), until the version has had ``max_builds`` builds
  (``MAX_BUILDS``); then evals are refused with every build's failure and what the site can do.
  A build whose registering request died before submitting its job is found on the next read
  (``EnvCatalog.settle``: linked by its run's tag, or failed as never submitted after a grace) and
  so built again too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from gateway import resources
from gateway.core.access.values import Principal
from gateway.core.envs.lockfile import lock_content
from gateway.core.envs.record import SITE_PROJECT, EnvVersion, content_digest
from gateway.errors import Conflict, NotFound
from gateway.services.envs.registry import MAX_BUILDS, EnvironmentService, EnvRegistration

NAME = "lm-eval"
LOCK = "environments/lm-eval.lock"  # below the eval directory
DESCRIPTION = (
    "The site's default eval environment: lm-eval and PyYAML pinned as the gateway's own venv has "
    "them (eval/environments/lm-eval.lock), built by the gateway the first time an eval needs it."
)


def builtin_lock(eval_dir: Path | None) -> Path:
    """The lock of the site's eval directory when it holds one, else the one the gateway ships."""
    if eval_dir is not None and (eval_dir / LOCK).is_file():
        return eval_dir / LOCK
    return resources.builtin_dir(resources.EVAL) / LOCK


class SiteEvalEnvironment:
    def __init__(
        self,
        registry: EnvironmentService,
        lock_path: Path,
        *,
        name: str = NAME,
        wait_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        max_builds: int = MAX_BUILDS,
    ) -> None:
        self.max_builds = max_builds  # builds a version gets in all before evals are refused
        self.name = name  # the site environment's name (tests give their own)
        self.registry = registry
        self.lock_path = lock_path
        self.wait_s = wait_s
        self.sleep = sleep

    @property
    def ref_name(self) -> str:
        """``site/lm-eval``: the environment (its versions are numbered as any)."""
        return f"{SITE_PROJECT}/{self.name}"

    def ensure(self, *, project: str, queue: str, principal: Principal) -> EnvVersion:
        """The version eval jobs of ``project`` run in, ``ready`` or ``building`` with its build job
        submitted; registered (and its build submitted in ``queue``) when this lock has none yet.

        Conflict when its build failed, or when another request registered it and its build job
        did not appear within ``wait_s``; whatever the build's admission raises (the queue, quotas).
        """
        lock = self.lock_path.read_text()
        catalog = self.registry.catalog
        version = self._existing(lock)
        if version is None:
            version, _ = self.registry.register_site(
                EnvRegistration(
                    project=SITE_PROJECT,
                    name=self.name,
                    kind="python",
                    lock=lock,
                    build_queue=queue,
                    description=DESCRIPTION,
                    pip_sources=True,
                ),
                build_project=project,
                principal=principal,
            )
        deadline = time.monotonic() + self.wait_s
        while True:
            version = catalog.builds.settle(self.registry.store.version(version.id))
            if version.status == "failed":
                version = self._again(version, project=project, queue=queue, principal=principal)
            if version.status == "ready" or catalog.builds.build_job_id(version) is not None:
                return version
            if time.monotonic() >= deadline:
                raise Conflict(
                    f"the site's default eval environment {version.ref} is being registered by another "
                    f"request, whose build job has not appeared after {self.wait_s:.0f} s; try again"
                )
            self.sleep(0.5)

    def _again(self, version: EnvVersion, *, project: str, queue: str, principal: Principal) -> EnvVersion:
        """A failed build tried again in ``queue`` (``EnvironmentService.rebuild``); Conflict, with every
        build's failure, once it has had its builds."""
        if version.build_attempts >= self.max_builds:
            earlier = "; ".join(f"build {f['attempt']}: {f['failure']}" for f in version.build_failures)
            raise Conflict(
                f"the site's default eval environment {version.ref} failed to build "
                f"{version.build_attempts} times, the most the gateway tries: {version.failure}"
                + (f" (earlier: {earlier})" if earlier else "")
                + ". A site admin names another (GATEWAY_EVAL_ENVIRONMENT, or GATEWAY_EVAL_PYTHON), or "
                "name one in the suite (environment: PROJECT/NAME@N)"
            )
        return self.registry.rebuild(
            version, build_queue=queue, build_project=project, principal=principal, max_builds=self.max_builds
        )

    def dependency(self, version: EnvVersion) -> str | None:
        """The Slurm dependency of an eval job run in ``version``: on its build job while it builds."""
        if version.status != "building":
            return None
        job_id = self.registry.catalog.builds.build_job_id(version)
        return f"afterok:{job_id}" if job_id else None

    def _existing(self, lock: str) -> EnvVersion | None:
        """The site's version of this lock, if one is registered."""
        content = lock_content(lock, pip_sources=True)
        store = self.registry.store
        try:
            env = store.environment(SITE_PROJECT, self.name)
            return store.find_version(env.id, digest_prefix=content_digest("python", content))
        except NotFound:
            return None
