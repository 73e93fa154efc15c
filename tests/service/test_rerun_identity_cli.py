"""``gw rerun`` and the run page's rerun form say whose identity a rerun of someone else's run takes
(issue 26, item 2): a real `gw serve`, real jobs. The identity rules themselves, with other OS users:
tests/service/test_rerun_identity.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator

import pytest

from tests.service.conftest import PROJECT, refresh_until, unique_tag
from tests.service.gw_serve import GW, gw_serve
from tests.service.web_client import web_client

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def serve(tmp_path_factory, slurm) -> Iterator[object]:
    with gw_serve(tmp_path_factory.mktemp("serve"), prefix="rri", users=("tester", "mia")) as served:
        yield served


def gw(serve, user: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GW_URL": serve.url, "GW_TOKEN": serve.tokens[user], "GW_CONFIG": serve.config}
    env["COLUMNS"] = "200"
    return subprocess.run([*GW, *args], env=env, input=stdin, capture_output=True, text=True, timeout=120)


def mias_run(serve, tmp_path) -> str:
    spec = {
        "name": "mine",
        "project": PROJECT,
        "queue": "cpu",
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "command": "echo from-mia",
        "resources": {"mem_gb": 0.1, "walltime_min": 5},
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    done = gw(serve, "mia", "submit", str(path), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["id"]


def test_gw_rerun_of_a_members_run_says_it_runs_as_the_member(serve, tmp_path):
    parent = mias_run(serve, tmp_path)
    done = gw(serve, "tester", "rerun", parent, "--set", "resources.mem_gb=0.2")
    assert done.returncode == 0, done.stderr
    assert "runs as its owner mia (OS user root); requested by tester" in done.stdout


def test_gw_rerun_as_me_shows_the_command_and_asks_first(serve, tmp_path):
    parent = mias_run(serve, tmp_path)
    declined = gw(serve, "tester", "rerun", parent, "--as-me", stdin="n\n")
    assert declined.returncode == 1, declined.stderr
    assert f"run {parent} is mia's; --as-me runs this under your own OS user:" in declined.stdout
    assert "echo from-mia" in declined.stdout and "not rerun" in declined.stdout
    shown = json.loads(gw(serve, "tester", "show", parent, "--json").stdout)
    assert shown["children"] == []
    done = gw(serve, "tester", "rerun", parent, "--as-me", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    child = json.loads(done.stdout[done.stdout.index("{") :])
    assert (child["submitter"], child["requested_by"]) == ("tester", None)


def test_the_rerun_form_of_someone_elses_run_shows_the_command_and_asks_whose_identity(services, tokens):
    """In-process pages on the session's services: mia (a member) looks at tester's run."""
    spec = {
        "name": "theirs",
        "project": PROJECT,
        "queue": "cpu",
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "command": "echo from-tester",
        "resources": {"mem_gb": 0.1, "walltime_min": 5},
        "hold": True,
    }
    from gateway.core.spec.run_spec import build_spec

    run = services.runs.submit(build_spec(spec), principal=services.access.principal("tester"))
    services.runs.cancel(run.id, principal=services.access.principal("tester"))
    refresh_until(services, run.id)  # the form is offered on an ended run
    with web_client(services, tokens["mia"]) as client:
        page = client.get(f"/ui/runs/{run.id}").text
        assert "This is tester's run." in page and "A rerun by you runs only as" in page
        assert '<pre id="rerun-command">echo from-tester</pre>' in page and 'name="as_me"' in page
        csrf = re.search(r'name="(csrf[^"]*)" value="([^"]+)"', page)
        assert csrf, page
        refused = client.post(
            f"/ui/runs/{run.id}/rerun",
            data={csrf.group(1): csrf.group(2), "changes": ""},
            follow_redirects=False,
        )
        assert refused.status_code == 403 and "which needs lead" in refused.text
        done = client.post(
            f"/ui/runs/{run.id}/rerun",
            data={csrf.group(1): csrf.group(2), "changes": "hold=true", "as_me": "yes"},
            follow_redirects=False,
        )
        assert done.status_code == 303, done.text
        child = services.runs.store.get_run(done.headers["location"].rsplit("/", 1)[1])
    assert (child.submitter, child.parent_run_id, child.requested_by) == ("mia", run.id, None)
    services.runs.cancel(child.id, principal=services.access.principal("mia"))
