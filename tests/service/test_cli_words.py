"""The words a new user meets first (issue 28, item 9), each mistake with the message it now gets:
`gw health` says healthy and what it checked; a GW_CONFIG that names a missing file is named; a bad
token points at `gw admin token`; `gw report --period` takes today, yesterday, this-week,
this-month, a day and a range; `gw runs` in a pipe prints whole values and has --format;
`gw sbatch missing.sh` names the script."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.service.gw_serve import GW, Serve, gw_serve

pytestmark = pytest.mark.slurm
LONG_NAME = "a-run-name-long-enough-that-an-80-column-table-cuts-it-x"


@pytest.fixture(scope="module")
def serve(tmp_path_factory, slurm) -> Iterator[Serve]:
    with gw_serve(tmp_path_factory.mktemp("words"), prefix="words") as s:
        yield s


def gw(env: dict[str, str], *args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    """gw as a user runs it in a pipe: stdout is not a terminal and COLUMNS is unset."""
    plain = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "GW_TOKEN", "GW_URL", "GW_CONFIG")}
    return subprocess.run(
        [*GW, *args], env={**plain, **env}, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def as_tester(serve: Serve) -> dict[str, str]:
    return {"GW_URL": serve.url, "GW_TOKEN": serve.tokens["tester"], "GW_CONFIG": serve.config}


def test_health_says_healthy_and_what_it_checked(serve):
    done = gw(as_tester(serve), "health")
    assert done.returncode == 0, done.stderr
    first, *checks = done.stdout.splitlines()
    assert first == (
        f"gateway at {serve.url}: healthy (checked: it answers, its database takes a query, "
        "Slurm lists its partitions)"
    )
    assert checks[0].startswith("  database: ok in ") and checks[1].startswith("  slurm: ok in ")
    assert "succeeded" not in done.stdout


def test_a_missing_config_file_is_named(serve, tmp_path):
    missing = tmp_path / "alice.toml"
    done = gw({"GW_URL": serve.url, "GW_CONFIG": str(missing)}, "runs")
    assert done.returncode == 77
    assert f"GW_CONFIG names {missing}, which does not exist (and GW_TOKEN is unset)" in done.stderr
    assert "gw admin token USER" in done.stderr


def test_a_config_file_without_a_token_is_named(serve, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'url = "{serve.url}"\n')
    done = gw({"GW_CONFIG": str(config)}, "runs")
    assert done.returncode == 77 and f"{config} holds no token" in done.stderr


def test_a_bad_token_points_at_gw_admin_token(serve):
    done = gw({"GW_URL": serve.url, "GW_TOKEN": "gwt_notatoken", "GW_CONFIG": serve.config}, "runs")
    assert done.returncode == 77
    assert "unknown token: an admin issues one on the gateway host (`gw admin token USER`)" in done.stderr
    assert "the token came from GW_TOKEN" in done.stderr
    assert "get one with `gw token issue`" not in done.stderr


@pytest.mark.parametrize(
    ("period", "label"),
    [
        ("today", r"\d{4}-\d{2}-\d{2}\.\.\d{4}-\d{2}-\d{2}"),
        ("yesterday", r"\d{4}-\d{2}-\d{2}\.\.\d{4}-\d{2}-\d{2}"),
        ("this-week", r"\d{4}-W\d{2}"),
        ("this-month", r"\d{4}-\d{2}"),
        ("2026-12-02", r"2026-12-02\.\.2026-12-02"),
        ("2026-11-01..2026-11-15", r"2026-11-01\.\.2026-11-15"),
    ],
)
def test_report_periods_people_say(serve, period, label):
    import re

    done = gw(as_tester(serve), "report", "usage", "--period", period, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(label, json.loads(done.stdout)["period"]["label"])


def test_a_period_nobody_says_lists_the_ones_taken(serve):
    done = gw(as_tester(serve), "report", "usage", "--period", "tomorrow")
    assert done.returncode == 2
    assert "'tomorrow' is not a period; use today, yesterday, this-week, last-week, this-month" in done.stderr


def test_runs_in_a_pipe_print_whole_values_and_offer_formats(serve, tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "name": LONG_NAME,
                "project": "test",
                "queue": "cpu",
                "command": "true",
                "resources": {"mem_gb": 0.25},
            }
        )
    )
    submitted = gw(as_tester(serve), "submit", str(spec), cwd=str(tmp_path))
    assert submitted.returncode == 0, submitted.stderr
    table = gw(as_tester(serve), "runs")
    assert table.returncode == 0
    (row,) = [line for line in table.stdout.splitlines() if LONG_NAME in line]
    assert "…" not in table.stdout and " test " in row  # the project column whole too
    tsv = gw(as_tester(serve), "runs", "--format", "tsv").stdout.splitlines()
    assert tsv[0].split("\t") == ["RUN", "NAME", "PROJECT", "QUEUE", "STATE", "JOB", "SUBMITTER", "CREATED"]
    fields = next(line.split("\t") for line in tsv[1:] if LONG_NAME in line)
    assert fields[1:4] == [LONG_NAME, "test", "cpu"] and fields[6] == "tester"
    as_json = json.loads(gw(as_tester(serve), "runs", "--format", "json").stdout)
    assert LONG_NAME in [item["name"] for item in as_json["items"]]
    bad = gw(as_tester(serve), "runs", "--format", "xml")
    assert bad.returncode == 2 and "table" in bad.stderr and "tsv" in bad.stderr


def test_sbatch_of_a_missing_script_names_it(tmp_path):
    done = gw(
        {"GW_CONFIG": str(tmp_path / "none.toml")}, "sbatch", "-p", "cpu", "missing.sh", cwd=str(tmp_path)
    )
    assert done.returncode == 2
    assert "missing.sh: cannot read it: No such file or directory" in done.stderr
    assert "(spec)" not in done.stderr
