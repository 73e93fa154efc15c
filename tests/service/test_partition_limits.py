"""A partition's own limit (MaxNodes) set on the live cluster, read back from Slurm and refused in
the gateway's words on every interface: the API, ``gw submit``, ``gw sbatch`` and the web form's preview.

This cluster's partitions set no limit (UNLIMITED), so the test sets MaxNodes=1 on ``cpu`` with
``scontrol update`` for its own lifetime and puts back what was there before, whatever happens:
exclusive, since every other test of the session submits to ``cpu``. The other limits (MinNodes,
MaxCPUsPerNode, MaxMemPerNode, MaxMemPerCPU, DefMemPerCPU) are checked on recorded output in
tests/unit/test_fit.py.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm.cli import SlurmCLI
from gateway.core.slurm.parse import parse_kv_line
from tests.service.conftest import unique_tag
from tests.service.gw_serve import GW, gw_serve

pytestmark = [pytest.mark.slurm, pytest.mark.exclusive]

PARTITION = "cpu"
LIMITS = {"MaxNodes": "1"}  # put back as scontrol printed it: UNLIMITED
MAX_NODES = "partition cpu of queue cpu allows at most 1 node per job (its MaxNodes): ask for at most 1"


def _partition_line() -> dict[str, str]:
    out = subprocess.run(
        ["scontrol", "show", "partition", PARTITION, "--oneliner"], capture_output=True, text=True, check=True
    ).stdout
    return parse_kv_line(out.strip())


@contextmanager
def partition_limits(limits: dict[str, str]) -> Iterator[dict[str, str]]:
    """``limits`` set on the partition; what it had before put back on the way out."""
    before = _partition_line()
    try:
        subprocess.run(
            ["scontrol", "update", f"PartitionName={PARTITION}", *[f"{k}={v}" for k, v in limits.items()]],
            check=True,
        )
        yield _partition_line()
    finally:
        subprocess.run(
            ["scontrol", "update", f"PartitionName={PARTITION}", *[f"{k}={before[k]}" for k in limits]],
            check=False,
        )
        after = _partition_line()
        assert {k: after[k] for k in limits} == {k: before[k] for k in limits}, after


@pytest.fixture(scope="module")
def limited(tmp_path_factory) -> Iterator:
    # the gateway starts after the limits are set: its cached shape is the limited one
    with partition_limits(LIMITS) as line, gw_serve(tmp_path_factory.mktemp("limits"), prefix="lim") as serve:
        yield line, serve


def _gw(serve, cwd, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("GW_PROJECT",)}
    env.update(GW_URL=serve.url, GW_TOKEN=serve.tokens["tester"], GW_CONFIG=serve.config)
    return subprocess.run([*GW, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _jobs_of(serve) -> list[str]:
    return subprocess.run(
        ["squeue", "-h", f"--account={serve.account}", "-o", "%i"], capture_output=True, text=True
    ).stdout.split()


def test_the_limits_are_read_from_slurm_and_refused_on_every_interface(limited, tmp_path):
    line, serve = limited
    assert line["MaxNodes"] == "1"  # as scontrol prints it
    (cpu,) = [p for p in SlurmCLI(LocalRunner()).partitions() if p.name == PARTITION]
    assert cpu.max_nodes == 1

    # the API: the check and the submission, nothing recorded
    api = httpx.Client(base_url=serve.url, headers={"Authorization": f"Bearer {serve.tokens['tester']}"})
    tag = unique_tag()
    base = {
        "name": "limits",
        "project": "test",
        "queue": "cpu",
        "command": "true",
        "hold": True,
        "tags": [tag],
    }
    for path in ("/runs/check", "/runs"):
        answer = api.post(path, json={**base, "resources": {"nodes": 2, "mem_gb": 0.25, "walltime_min": 5}})
        assert answer.status_code == 422, answer.text
        (issue,) = answer.json()["detail"]
        assert issue["loc"] == ["body", "resources", "nodes"] and issue["msg"].startswith(MAX_NODES), issue
    assert api.get("/runs", params={"tag": tag}).json()["items"] == []

    # gw submit
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: limits\nproject: test\nqueue: cpu\ncommand: 'true'\nhold: true\n"
        "resources: {nodes: 2, mem_gb: 0.25, walltime_min: 5}\n"
    )
    done = _gw(serve, tmp_path, "submit", str(spec))
    assert done.returncode == 2 and MAX_NODES in " ".join(done.stderr.split()), done.stderr

    # gw sbatch, by the option that asked
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -A test -p cpu -t 5\ntrue\n")
    refused = _gw(serve, tmp_path, "sbatch", "--hold", "-N", "2", str(script))
    said = " ".join(refused.stderr.split())
    assert refused.returncode == 2 and f"option -N (resources.nodes): {MAX_NODES}" in said, refused.stderr
    assert _jobs_of(serve) == []

    _web_preview_refuses(serve)


def _web_preview_refuses(serve) -> None:
    """The web form's preview of 2 nodes on cpu: the limit next to the nodes field, no script."""
    from playwright.sync_api import expect, sync_playwright

    from tests.web.conftest import CHROMIUM, choose

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.set_default_timeout(20_000)
            page.goto(f"{serve.url}/ui/login")
            page.fill("#token", serve.tokens["tester"])
            page.click("#sign-in")
            page.wait_for_selector("#signed-in-as")
            page.goto(f"{serve.url}/ui/submit")
            choose(page, "#project", "test")
            choose(page, "#queue", "cpu")
            page.fill("#name", "limits-web")
            page.fill("#command", "true")
            page.fill("#nodes", "2")
            page.click("#preview")
            expect(page.locator(".field-error[data-field=nodes]")).to_contain_text(MAX_NODES)
            assert not page.locator("#preview-script").count()
        finally:
            browser.close()
