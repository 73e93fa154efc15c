"""gw admin accounting ingest and gw cost end to end: a real `gw serve`, a real failed job, sacct."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from gateway.adapters.slurm.clusters import configured_cluster_name
from tests.service.gw_serve import GW, gw_serve

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def serve(tmp_path_factory, slurm) -> Iterator:
    with gw_serve(tmp_path_factory.mktemp("serve"), prefix="cost") as served:
        yield served


def gw(serve, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GW_URL": serve.url, "GW_TOKEN": serve.tokens["tester"], "GW_CONFIG": serve.config}
    return subprocess.run(
        [*GW, *args], env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=120
    )


def gw_admin(serve, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*GW, "admin", *args],
        env={**serve.env, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_ingest_then_a_failed_runs_cost(serve, tmp_path):
    since = (datetime.now(UTC) - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S")
    spec = tmp_path / "spec.json"
    body = {
        "name": "cost",
        "project": "test",
        "queue": "cpu",
        "command": "sleep 1; exit 2",
        "workdir": "/tmp",
    }
    spec.write_text(json.dumps({**body, "resources": {"mem_gb": 0.1}}))
    submitted = gw(serve, "submit", str(spec), "--wait", "--json")
    assert submitted.returncode == 1, submitted.stderr  # gw wait's status for a failed run
    run = json.loads(submitted.stdout)
    deadline = time.monotonic() + 90  # slurmdbd records the end a little after the job ended
    while True:
        ingested = gw_admin(serve, "accounting", "ingest", "--since", since, "--json")
        assert ingested.returncode == 0, ingested.stderr
        cost = json.loads(gw(serve, "cost", run["id"], "--json").stdout)
        if cost["attempts"] and cost["attempts"][0]["state"] == "FAILED":
            break
        assert time.monotonic() < deadline, (ingested.stdout, cost)
        time.sleep(2)
    counts = json.loads(ingested.stdout)
    assert counts["read"] >= 1 and set(counts) == {"read", "new", "updated", "linked", "priced", "clusters"}
    (attempt,) = cost["attempts"]
    assert attempt["attempt"] == 1 and attempt["failed"] and attempt["elapsed_s"] >= 1
    assert (
        attempt["cpu_hours"] == pytest.approx(attempt["elapsed_s"] / 3600 * 1, rel=1)
        and attempt["cpu_hours"] > 0
    )
    assert not cost["priced"] and "no rate table" in cost["note"]  # this site has none
    local = configured_cluster_name(None)  # sacct's Cluster of the one local cluster
    assert attempt["cluster"] == local and attempt["rates"] == []  # nothing priced it
    table = gw(serve, "cost", run["id"])
    assert table.returncode == 0 and "FAILED (failed)" in table.stdout and "not priced" in table.stdout
    assert "CLUSTER" in table.stdout and f" {local} " in table.stdout
    again = gw_admin(serve, "accounting", "ingest", "--since", since, "--json")
    assert again.returncode == 0 and json.loads(gw(serve, "cost", run["id"], "--json").stdout) == cost
    bad = gw_admin(serve, "accounting", "ingest", "--since", "yesterday")
    assert bad.returncode == 2 and "not a time" in bad.stderr
    assert gw(serve, "cost", "r-doesnotexist").returncode == 4
