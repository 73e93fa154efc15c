"""The Slurm job that builds a locked Python environment: an ordinary run of a project.

It makes ``python -m venv`` (``Settings.env_build_python``) at the version's location on the shared
file system, installs the lock with its hashes checked (``pip install --require-hashes --no-deps``,
wheels only unless the version allows source archives: the site's built-in eval environment, some
of whose pins publish none), and writes the installed set beside the venv (``INSTALLED_FILE``).
"""

from __future__ import annotations

from gateway.core.envs.lockfile import HEREDOC_END
from gateway.core.spec.run_spec import RunSpec, build_spec
from gateway.services.envs.catalog import INSTALLED_FILE
from gateway.settings import Settings


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
