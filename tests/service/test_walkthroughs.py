"""The README's First steps and the docs' walk-throughs, run as written against the real cluster.

A gateway is brought up the way `make up` does it (scripts/gw-up, with its own port, settings file,
database, gw config and a Slurm account of its own for project demo); then every command of each
marked block runs in the checkout, in order, through bash, with the ids each one printed put where
the docs show example ids (tests/walkthrough.py says how the blocks are read). The docs cannot drift
from the commands: a command that fails, exits otherwise than its comment says, or does not print
the id the next command takes fails this test, naming the doc's line.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.service.conftest import TEARDOWN_SITE, drain_accounts
from tests.service.gw_serve import GW, free_port
from tests.walkthrough import Ids, read, steps

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
# Which blocks, in the order a new user meets them; later ones use what earlier ones made.
WALKTHROUGHS = [
    ("README.md", "first-steps"),
    ("docs/datasets.md", "datasets"),
    ("docs/evaluation.md", "evaluation"),
    ("docs/releases.md", "releases"),
]
STEP_TIMEOUT_S = 300
DOCS_URL = "http://127.0.0.1:8000"  # the docs' gateway (make up's); this test's own is on another port
TRANSCRIPT = REPO / "test-artifacts" / "walkthroughs.txt"
LEFT_BEHIND = [
    "compare.html",
    "bundle.zip",
    "var/reviewer.toml",
]  # what the walk-throughs write in the checkout


@pytest.fixture(scope="module")
def made_up(tmp_path_factory):
    """A gateway as `make up` leaves it: what the walk-throughs' commands need in their environment."""
    state = tmp_path_factory.mktemp("walk")
    port = free_port()
    account = f"gwtwalk{port}"
    site = state / "site.yaml"
    text = read(REPO / "examples" / "site.yaml")
    site.write_text(re.sub(r"slurm_account: demo\b", f"slurm_account: {account}", text))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "GW_"))}
    env = {
        **base,
        "PYTHONPATH": str(REPO),  # this checkout's gateway, whatever .venv was installed from
        "COLUMNS": "200",
        "GW_PORT": str(port),
        "GW_SITE": str(site),
        "GW_UP_STATE": str(state),
        "GW_CONFIG": str(state / "config.toml"),
        "GATEWAY_SETTINGS_FILE": str(state / "gateway.env"),
        "GATEWAY_DATABASE_URL": f"sqlite:///{state}/gateway.db",
        "GATEWAY_EVAL_PYTHON": sys.executable,
        "GATEWAY_REFRESH_INTERVAL_S": "1",
    }
    up = subprocess.run(
        ["scripts/gw-up"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"gateway settings: {state}/gateway.env" in up.stdout
    assert "admin token written to" in up.stdout
    commands_env = {k: v for k, v in env.items() if not k.startswith("GATEWAY_")}
    commands_env["GATEWAY_SETTINGS_FILE"] = env["GATEWAY_SETTINGS_FILE"]  # gw admin, as on that host
    commands_env["GW_URL_OF_TEST"] = f"http://127.0.0.1:{port}"
    try:
        yield commands_env
    finally:
        pid = int((state / "gw-serve.pid").read_text())
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        drain_accounts([account])
        site.write_text(TEARDOWN_SITE)
        subprocess.run(
            [*GW, "admin", "apply", "--prune", str(site)], env=env, capture_output=True, check=False
        )


def run_walkthrough(
    doc: str, name: str, env: dict[str, str], ids: Ids, exports: list[str], transcript: list[str]
) -> None:
    """Run one walk-through, adding each command, its exit status, seconds and output to ``transcript``.

    ``exports``: the ``export`` lines met so far (the README's ``export PATH=...``), which hold, as in
    the reader's shell, for every later command and walk-through."""
    for step in steps(read(REPO / doc), name, source=doc):
        command = ids.substitute(step).replace(DOCS_URL, env["GW_URL_OF_TEST"])
        if command.startswith("export "):
            exports.append(command)
            continue
        started = time.monotonic()
        done = subprocess.run(
            ["bash", "-c", "; ".join([*exports, command])],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT_S,
            check=False,
        )
        output = done.stdout + done.stderr
        took = time.monotonic() - started
        transcript.append(f"$ {command}   # {step.source}, exit {done.returncode}, {took:.1f} s\n{output}")
        assert done.returncode == step.exit_code, (
            f"{step.source}: `{command}` exited {done.returncode}, the doc says {step.exit_code}:\n{output}"
        )
        ids.capture(step, output)


def test_the_walkthroughs_run_as_written(made_up):
    ids = Ids()
    exports: list[str] = []
    log = []
    try:
        for doc, name in WALKTHROUGHS:
            started = time.monotonic()
            run_walkthrough(doc, name, made_up, ids, exports, log)
            log.append(f"--- {doc} {name}: {time.monotonic() - started:.1f} s")
    finally:
        TRANSCRIPT.parent.mkdir(parents=True, exist_ok=True)
        TRANSCRIPT.write_text("\n".join(log))
        for name in LEFT_BEHIND:
            shutil.rmtree(REPO / name) if (REPO / name).is_dir() else (REPO / name).unlink(missing_ok=True)
