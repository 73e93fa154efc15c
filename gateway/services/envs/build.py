"""The Slurm job that builds a locked Python environment: an ordinary run of a project.

It makes ``python -m venv`` (``Settings.env_build_python``) at the version's location on the shared
file system, installs the lock with its hashes checked (``pip install --require-hashes --no-deps``,
wheels only unless the version allows source archives: the site's built-in eval environment, some
of whose pins publish none), and writes the installed set beside the venv (``INSTALLED_FILE``).

``Builds`` submits a version's build job (tagged ``EnvVersion.build_tag``) and builds a failed one
again (``rebuild``: a site environment's, on its next need, ``MAX_BUILDS`` in all).
"""

from __future__ import annotations

import uuid

from gateway.core import names
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.envs.lockfile import HEREDOC_END
from gateway.core.envs.record import EnvVersion
from gateway.core.spec.run_spec import RunSpec, build_spec
from gateway.errors import Conflict, GatewayError, SpecError, SpecIssue
from gateway.services.envs.settle import INSTALLED_FILE
from gateway.services.runs.run_service import RunService
from gateway.settings import Settings
from gateway.store.envs.envs import EnvStore

MAX_BUILDS = 3  # a failed build of a site environment is tried again until it has had this many


def build_run_spec(
    settings: Settings,
    *,
    project: str,
    name: str,
    location: str,
    lock: str,
    queue: str,
    env_project: str | None = None,
    sources: bool = False,
) -> RunSpec:
    """The run of ``project`` in ``queue`` that builds environment ``env_project/name`` (default the
    run's project) as a venv at ``location`` from ``lock``.

    ``sources``: pip may build a pinned source archive (its hash checked like a wheel's); else wheels
    only (``--only-binary=:all:``).
    """
    pip = ["--no-input", "--disable-pip-version-check", "--require-hashes", "--no-deps"]
    if not sources:
        pip.append("--only-binary=:all:")
    if settings.env_pip_find_links:
        pip += ["--no-index", "--find-links", str(settings.env_pip_find_links)]
    elif settings.env_pip_index_url:
        pip += ["--index-url", settings.env_pip_index_url]
    assert HEREDOC_END not in lock
    script = BUILD_SCRIPT.format(
        location=location,
        python=settings.env_build_python,
        pip=" ".join(_shq(a) for a in pip),
        installed=INSTALLED_FILE,
        end=HEREDOC_END,
        lock=lock if lock.endswith("\n") else lock + "\n",
    )
    return build_spec(
        {
            "name": f"env-build-{name}"[:63],
            "project": project,
            "queue": queue,
            "script": script,
            "tags": ["env-build"],
            "resources": {"walltime_min": 60},
            "requeue": False,
        },
        source=f"build of environment {env_project or project}/{name}",
    )


class Builds:
    """Submitting a version's build job, and building a failed one again."""

    def __init__(self, store: EnvStore, runs: RunService, settings: Settings) -> None:
        self.store = store
        self.runs = runs
        self.settings = settings

    def location(self, project: str, name: str) -> str:
        """A new directory for a build of ``project/name`` under ``environments_dir``."""
        location = f"{self.settings.environments_dir}/{project}/{name}/{uuid.uuid4().hex[:12]}"
        if not names.SAFE_PATH.fullmatch(location):
            raise SpecError([SpecIssue("envs_dir", names.SAFE_PATH_HELP, location)])
        return location

    def rebuild(
        self,
        version: EnvVersion,
        *,
        build_queue: str,
        build_project: str,
        principal: Principal,
        max_builds: int = MAX_BUILDS,
    ) -> EnvVersion:
        """Build a failed python version again (``max_builds`` in all), at a new location: its build
        job admitted first (a refusal writes nothing), the failure kept in ``build_failures`` and the
        restart audited (``env.rebuild``). When another request restarted it first, the version as
        that one left it (its build job may not be linked yet: the caller waits for it).

        Conflict when it is not failed, or has had its builds."""
        if version.kind != "python" or version.status != "failed":
            raise Conflict(
                f"environment {version.ref} is {version.status}; only a failed build is tried again"
            )
        if version.build_attempts >= max_builds:
            raise Conflict(
                f"environment {version.ref} failed to build {version.build_attempts} times, the most the "
                f"gateway tries; the last: {version.failure}"
            )
        location = self.location(version.project, version.name)
        build = build_run_spec(
            self.settings,
            project=build_project,
            name=version.name,
            location=location,
            lock=version.content["lock"],
            queue=build_queue,
            env_project=version.project,
            sources=bool(version.content.get("pip_sources")),
        )
        self.runs.admission.admit(build, principal)
        restarted = self.store.restart_build(
            version.id,
            attempts=version.build_attempts,
            location=location,
            audit=AuditEntry(
                actor=principal.user,
                action="env.rebuild",
                target_type="environment_version",
                target_id=version.id,
                project=version.project,
                source=principal.source,
                after={
                    "environment": version.ref,
                    "build": version.build_attempts + 1,
                    "previous_failure": version.failure,
                    "location": location,
                },
            ),
        )
        if not restarted:
            return self.store.version(version.id)
        return self.submit(self.store.version(version.id), build, principal)

    def submit(self, version: EnvVersion, build: RunSpec, principal: Principal) -> EnvVersion:
        """Submit ``version``'s build job (tagged ``build_tag``, so that a crash before it is linked
        leaves it findable) and record it; a refusal marks the version failed, and raises."""
        build = build.model_copy(update={"tags": [*build.tags, version.build_tag]})
        try:
            run = self.runs.submit(build, principal=principal)
        except GatewayError as exc:  # Slurm refused it: the version says so, and the caller hears it
            self.store.finish_build(
                version.id,
                status="failed",
                failure=f"the build job was not submitted: {exc}",
                audit=AuditEntry(
                    actor=principal.user,
                    action="env.build",
                    target_type="environment_version",
                    target_id=version.id,
                    project=version.project,
                    source=principal.source,
                    after={"environment": version.ref, "status": "failed", "failure": str(exc)},
                ),
            )
            raise
        self.store.set_build_run(version.id, run.id)
        return self.store.version(version.id)


def _shq(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


# The build job: make the venv, install the lock with its hashes checked, record the installed set.
BUILD_SCRIPT = """#!/bin/bash
set -euo pipefail
dir='{location}'
if [ -e "$dir" ]; then
  echo "gw: environment directory $dir exists already; a build never reuses one" >&2
  exit 1
fi
mkdir -p -- "$(dirname -- "$dir")"
cat > "$GW_RUN_DIR/requirements.lock" <<'{end}'
{lock}{end}
'{python}' -m venv -- "$dir"
"$dir/bin/python" -m pip install {pip} -r "$GW_RUN_DIR/requirements.lock"
"$dir/bin/python" -I -c 'import importlib.metadata as m, json, re, sys
names = {{re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version
         for d in m.distributions() if d.metadata["Name"]}}
print(json.dumps({{"python": sys.version.split()[0], "packages": names}}, sort_keys=True))' \\
  > "$dir/{installed}.tmp"
mv -- "$dir/{installed}.tmp" "$dir/{installed}"
chmod -R go-w -- "$dir"
echo "gw: built $dir"
"""
