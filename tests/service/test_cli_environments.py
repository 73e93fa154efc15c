"""Environments through the real `gw` CLI against a real `gw serve`: register an image built here
and module lists, run `gw sbatch --environment` inside the image under podman, read the run's
environment back, and diff versions and runs."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import JOB_ROOT, wait_for
from tests.envs_world import WHEELHOUSE, busybox_image, lock_text, podman_rmi, wheel
from tests.service.gw_serve import GW, gw_serve

pytestmark = pytest.mark.slurm
OSV = Path(__file__).resolve().parents[1] / "data" / "osv"


@pytest.fixture(scope="module")
def server(tmp_path_factory, slurm) -> Iterator[dict[str, str]]:
    with gw_serve(
        tmp_path_factory.mktemp("serve-envs"),
        prefix="env",
        users=("tester", "outsider"),
        settings={
            "GATEWAY_ENV_PIP_FIND_LINKS": str(WHEELHOUSE),
            "GATEWAY_ADVISORY_DIR": str(OSV),  # the tests' three advisories
        },
    ) as serve:
        yield {
            "GW_URL": serve.url,
            "GW_CONFIG": serve.config,
            "GW_TOKEN": serve.tokens["tester"],
            "OUTSIDER": serve.tokens["outsider"],
        }


def gw(server, *args: str, cwd: Path | None = None, token: str | None = None) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "GW_URL": server["GW_URL"],
        "GW_CONFIG": server["GW_CONFIG"],
        "GW_TOKEN": token or server["GW_TOKEN"],
        "COLUMNS": "200",
    }
    return subprocess.run([*GW, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, (
        f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    )
    return result.stdout


def test_gw_env_image_runs_under_gw_sbatch_and_modules_diff(server):
    tag = uuid.uuid4().hex[:8]
    work = JOB_ROOT / f"envcli-{tag}"
    work.mkdir(parents=True)
    archive, image_id = busybox_image(f"localhost/gw-cli-{tag}:1", work / "image.tar")
    podman_rmi(image_id)
    out = ok(gw(server, "env", "register", f"test/img-{tag}", "--image", str(archive)))
    assert f"registered test/img-{tag}@1 (image)" in out and image_id in out
    again = json.loads(
        ok(gw(server, "env", "register", f"test/img-{tag}", "--image", str(archive), "--json"))
    )
    assert again["created"] is False and again["image_id"] == image_id

    script = work / "job.sh"
    script.write_text('#!/bin/sh\ntest ! -e /etc/debian_version && echo "in image" > inside.txt\n')
    sub = gw(
        server,
        "sbatch",
        "-A",
        "test",
        "-p",
        "cpu",
        "--environment",
        f"img-{tag}@latest",
        str(script),
        cwd=work,
    )
    ok(sub)
    assert sub.stdout.startswith("Submitted batch job ")
    run_id = sub.stderr.split()[1]

    def ended() -> str | None:
        state = json.loads(ok(gw(server, "show", run_id, "--json")))["state"]
        return state if state in ("succeeded", "failed", "cancelled") else None

    state = wait_for(ended, timeout_s=120, what=f"run {run_id} to end")
    assert state == "succeeded", ok(gw(server, "logs", run_id))
    assert (work / "inside.txt").read_text() == "in image\n"
    seen = json.loads(ok(gw(server, "env", "run", run_id, "--json")))
    assert seen["version"]["ref"] == f"test/img-{tag}@1" and seen["record"]["image_id"] == image_id
    assert [o["observed"]["image_id"] for o in seen["observations"]] == [image_id] and seen["warnings"] == []
    assert "(as recorded)" in ok(gw(server, "env", "run", run_id))
    assert f"environment test/img-{tag}@1" in ok(gw(server, "trace", run_id))
    compared = ok(gw(server, "compare", run_id, run_id))
    assert "Environment packages" in compared and "0 changed, 0 unchanged" in compared
    assert f"image {image_id}" not in ok(gw(server, "env", "diff", run_id, run_id))  # the same image

    ok(gw(server, "env", "register", f"test/mods-{tag}", "--module", "gcc/12.2", "--module", "cuda/12.1"))
    out = ok(
        gw(server, "env", "register", f"test/mods-{tag}", "--module", "gcc/12.2", "--module", "cuda/12.4")
    )
    assert "^ cuda 12.1 -> 12.4" in out
    diff = ok(gw(server, "env", "diff", f"test/mods-{tag}@1", f"test/mods-{tag}@2"))
    assert "^ cuda 12.1 -> 12.4" in diff and "1 changed, 1 unchanged" in diff
    listed = ok(gw(server, "env", "list", "--project", "test"))
    assert f"test/img-{tag}" in listed and f"test/mods-{tag}" in listed
    shown = ok(gw(server, "env", "show", f"test/mods-{tag}"))
    assert "modules gcc/12.2 cuda/12.4" in shown
    versions = ok(gw(server, "env", "versions", f"test/mods-{tag}"))
    assert " v1 " in versions and " v2 " in versions and "modules" in versions

    # bad input: a usage error or the server's clear refusal, never a traceback
    bad = gw(server, "env", "register", f"test/x-{tag}", "--module", "a", "--image", "/x.tar")
    assert bad.returncode == 2 and "exactly one of" in bad.stderr
    bad = gw(server, "env", "register", f"test/x-{tag}", "--image", str(script))
    assert bad.returncode != 0 and "image archive" in bad.stderr
    bad = gw(server, "sbatch", "-A", "test", "--environment", "no version", str(script), cwd=work)
    assert bad.returncode == 2 and "environment reference" in bad.stderr
    hidden = gw(server, "env", "show", f"test/mods-{tag}", token=server["OUTSIDER"])
    assert hidden.returncode != 0 and "no environment" in hidden.stderr
    podman_rmi(image_id)


def test_gw_env_locked_versions_diff_exactly_and_the_scan_finds_the_planted_advisory_only(server, tmp_path):
    tag = uuid.uuid4().hex[:8]
    env = f"test/py-{tag}"
    refs = []
    for version in ("1.0", "2.0"):
        lock = tmp_path / f"{version}.lock"
        lock.write_text(lock_text(wheel("gwtoy", version), wheel("gwdep", "0.3"), comment=tag))
        made = json.loads(
            ok(gw(server, "env", "register", env, "--lock", str(lock), "--build-queue", "cpu", "--json"))
        )
        assert made["status"] == "building" and made["locked"] == {"gwdep": "0.3", "gwtoy": version}

        def built(ref: str = made["ref"]) -> dict | None:
            shown = json.loads(ok(gw(server, "env", "show", ref, "--json")))
            return shown if shown["status"] != "building" else None

        shown = wait_for(built, timeout_s=150, what=f"the build of {made['ref']}")
        assert shown["status"] == "ready", shown
        refs.append(made["ref"])

    diff = ok(gw(server, "env", "diff", refs[0], refs[1]))
    assert "^ gwtoy 1.0 -> 2.0" in diff and "1 changed, " in diff and "gwdep" not in diff
    exact = json.loads(ok(gw(server, "env", "diff", refs[0], refs[1], "--json")))
    assert exact["upgraded"] == [{"name": "gwtoy", "from": "1.0", "to": "2.0"}]
    assert [exact[k] for k in ("added", "removed", "downgraded", "changed")] == [[], [], [], []]

    found = gw(server, "env", "scan", refs[0])
    assert found.returncode == 1, found.stderr  # something found
    assert "CRITICAL gwtoy 1.0: GHSA-gwt0-0000-0001" in " ".join(found.stdout.split())
    assert "GHSA-gwt0-0000-0002" not in found.stdout and "PYSEC-gwt-0003" not in found.stdout
    assert "3 advisories" in found.stdout
    clean = gw(server, "env", "scan", refs[1])
    assert clean.returncode == 0 and "GHSA" not in clean.stdout, clean.stdout
    via_api = httpx.get(
        f"{server['GW_URL']}/environments/test/py-{tag}/versions/1/advisories",
        headers={"Authorization": f"Bearer {server['GW_TOKEN']}"},
        timeout=30,
    ).json()
    assert [f["advisory"] for f in via_api["findings"]] == ["GHSA-gwt0-0000-0001"]
