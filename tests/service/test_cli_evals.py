"""`gw eval` and `gw trace` of evaluations, as a user types them, against a real API on the eval world.

The API is the gateway's own app served by uvicorn on a free port, over this session's services (the
same database, Slurm and eval world as the service tests); `gw` runs as a separate process.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gateway.api import create_app
from tests.service.conftest import PROJECT
from tests.service.eval_world import EVAL, TASKS
from tests.service.gw_serve import GW, serve_in_thread

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def url(services) -> Iterator[str]:
    with serve_in_thread(create_app(services=services)) as url:
        yield url


@pytest.fixture(scope="module")
def gw(url, tokens, tmp_path_factory):
    config = str(tmp_path_factory.mktemp("gwconfig") / "none.toml")

    def run(*args: str, user: str = "tester", cwd: str | None = None) -> subprocess.CompletedProcess:
        env = {**os.environ, "GW_URL": url, "GW_TOKEN": tokens[user], "GW_CONFIG": config, "COLUMNS": "220"}
        return subprocess.run(
            [*GW, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
        )

    return run


def ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return done.stdout


def test_suite_register_reads_the_prompt_file_and_gives_the_same_version_again(gw, eval_world, tmp_path):
    site = tmp_path / "eval"
    shutil.copytree(EVAL / "prompts", site / "prompts")
    (site / "suites").mkdir()
    data = yaml.safe_load((EVAL / "suites" / "tiny_lm.yaml").read_text())
    data.update(project=PROJECT, name=eval_world.suites["v1"].name, datasets=[f"{eval_world.dataset}@latest"])
    suite_file = site / "suites" / "mine.yaml"
    suite_file.write_text(yaml.safe_dump(data))
    out = ok(gw("eval", "suite", "register", str(suite_file)))  # prompts/ found above the suite file
    assert f"unchanged: the same content is {eval_world.suites['v1'].ref}" in out
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(yaml.safe_dump(data))
    missing = gw("eval", "suite", "register", str(elsewhere))
    assert (
        missing.returncode == 2
        and "prompt_template_file" in missing.stderr
        and "--eval-dir" in missing.stderr
    )
    again = json.loads(ok(gw("eval", "suite", "register", str(elsewhere), "--eval-dir", str(EVAL), "--json")))
    assert again["id"] == eval_world.suites["v1"].id and again["created"] is False
    listed = ok(gw("eval", "suite", "list", "--project", PROJECT))
    assert eval_world.suites["v1"].name in listed
    shown = ok(gw("eval", "suite", "show", eval_world.suites["v2"].ref))
    assert eval_world.suites["v2"].content_hash[:12] in shown and "tiny_lm_spelling" in shown


def test_show_gate_and_compare(gw, eval_world, tmp_path):
    weak, strong, changed = (eval_world.results[k] for k in ("weak", "strong", "strong-v2"))
    shown = ok(gw("eval", "show", strong))
    assert all(task in shown for task in TASKS) and "300/300" in shown and "lm-eval 0.4.13" in shown
    run_view = ok(gw("eval", "show", eval_world.evals["bad-format"].id))
    assert "refused" in run_view and "not lm-eval's results format" in run_view
    failed = gw("eval", "gate", weak, "--baseline", eval_world.evals["strong"].id)  # an eval run id works too
    assert failed.returncode == 1, failed.stderr
    assert "fail" in failed.stdout and "regressed" in failed.stdout
    assert gw("eval", "gate", changed, "--baseline", strong).returncode == 3
    ok(gw("eval", "review", "add", strong, "--verdict", "approve", "--sample", f"{TASKS[0]}:0", user="rita"))
    passed = gw("eval", "gate", strong, "--baseline", strong, "--json")
    assert passed.returncode == 0, passed.stdout
    assert json.loads(passed.stdout)["verdict"] == "pass"
    page = tmp_path / "compare.html"
    table = ok(gw("eval", "compare", weak, strong, "--html", str(page)))
    rows = [line for line in table.splitlines() if line.strip().startswith(TASKS)]
    assert len(rows) == len(TASKS) and all("regressed" in row for row in rows), table
    text = page.read_text()
    svg = base64.b64decode(re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', text).group(1))
    assert svg.lstrip().startswith(b"<?xml") and b"<svg" in svg and b"<script" not in svg
    assert text.count("<tr>") == 1 + len(TASKS) and "regressed" in text


def test_reviews_through_gw(gw, eval_world):
    weak = eval_world.results["weak"]
    refused = gw("eval", "review", "add", weak, "--verdict", "approve", user="mia")
    assert refused.returncode == 77 and "reviewer" in refused.stderr
    bad = gw("eval", "review", "add", weak, "--verdict", "approve", "--sample", "no-colon", user="rita")
    assert bad.returncode == 2 and "TASK:ID" in bad.stderr
    ok(
        gw(
            "eval",
            "review",
            "add",
            weak,
            "--verdict",
            "reject",
            "--label",
            f"{TASKS[1]}:7=garbled",
            user="rita",
        )
    )
    listed = ok(gw("eval", "review", "list", weak))
    assert "reject" in listed and "rita" in listed


def test_eval_run_refuses_what_it_cannot_run(gw, eval_world):
    ref = eval_world.suites["v1"].ref
    ambiguous = gw("eval", "run", ref, "--artifact", eval_world.training["weak"])
    assert ambiguous.returncode == 2 and "outputs/model.json" in ambiguous.stderr
    assert gw("eval", "run", ref, "--artifact", "nonsense").returncode == 2
    assert gw("eval", "run", "test/no-such@1", "--artifact", eval_world.artifacts["weak"]).returncode == 4
    assert gw("eval", "run", "no-project@1", "--artifact", eval_world.artifacts["weak"]).returncode == 2


def test_trace_shows_evaluations(gw, eval_world, services):
    result = eval_world.results["strong"]
    trace = ok(gw("trace", result))
    version = eval_world.suites["v1"]
    assert version.ref in trace and version.suite.prompt_sha256[:12] in trace
    assert version.datasets[0].digest[:12] in trace and "lm-eval 0.4.13" in trace
    eval_run = services.runs.store.get_run(eval_world.evals["strong"].run_id)
    assert f"Slurm job {eval_run.latest.job_id}" in trace and eval_world.training["strong"] in trace
    model = (
        Path(services.runs.store.get_run(eval_world.training["strong"]).run_dir) / "outputs" / "model.json"
    )
    of_file = ok(gw("trace", str(model)))
    assert "evaluations" in of_file and result in of_file and eval_world.evals["strong"].id in of_file
