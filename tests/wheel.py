"""Build the gateway's wheel and install it into a folder of its own, for tests of the installed package.

``build_wheel`` copies what the build reads (pyproject.toml, setup.py, README.md, gateway/ and the
three folders the wheel carries) to a scratch folder first, so that a build never writes
``build/`` or ``*.egg-info`` into the checkout while another test reads it, and runs
``pip wheel --no-deps --no-build-isolation`` there. ``install`` puts the wheel into a target folder
(``pip install --no-deps --target``), never into the shared virtual environment; a Python started
with ``PYTHONPATH=<target>`` (``installed_env``) imports that copy of ``gateway``, not the
checkout's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "gateway", "templates", "eval", "accounting")


def copy_source(source: Path) -> Path:
    """What the build reads, copied from this checkout to ``source`` (made); ``source``."""
    source.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    return source


def build_wheel(scratch: Path) -> Path:
    """The wheel built from a copy of this checkout in ``scratch``; its path."""
    source = copy_source(scratch / "source")
    out = scratch / "wheel"
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out)]
    done = subprocess.run([*argv, str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"pip wheel failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    (wheel,) = out.glob("gateway-*.whl")
    return wheel


def install(wheel: Path, target: Path) -> Path:
    """``wheel`` installed into ``target`` (a plain folder, not an environment); ``target``."""
    argv = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-compile",
        "-q",
        "--target",
        str(target),
    ]
    done = subprocess.run([*argv, str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"pip install --target failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return target


def installed_env(target: Path) -> dict[str, str]:
    """The environment of a Python that imports the gateway installed in ``target`` (not the checkout)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    env["PYTHONPATH"] = str(target)
    return env


def run_installed(target: Path, code: str, *, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``code`` with this test's Python, importing the gateway from ``target``, in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-c", code],
        env=installed_env(target),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
