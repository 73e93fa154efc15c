"""Retention on the real cluster: a sweep after a clock jump deletes exactly what its rules allow and
nothing a release needs; a hold stops it; a kill -9 mid-sweep loses no record; a member who leaves;
the space limit's warning on submit and on the project page (docs/retention.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.core.access.values import Principal
from gateway.core.clock import utcnow
from gateway.core.spec.run_spec import build_spec
from gateway.errors import Forbidden
from tests.conftest import JOB_ROOT
from tests.service.conftest import drain_accounts, fresh_database, refresh_until
from tests.service.gw_serve import GW, gw_serve
from tests.service.retention_world import PROJECT, build, new_account, site
from tests.service.web_client import web_client

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]
OPERATOR = Principal.operator()


@pytest.fixture(scope="module")
def world(backend, slurm, tmp_path_factory):
    with ExitStack() as stack:
        url = stack.enter_context(fresh_database(backend, tmp_path_factory.mktemp("retention-db")))
        runs_dir = JOB_ROOT / f"retention-{uuid.uuid4().hex[:8]}"
        runs_dir.mkdir(parents=True)
        services = build(url, runs_dir, refresh_interval_s=1, submit_grace_s=5, slurm_submit_timeout_s=4)
        account = new_account()
        services.site.apply(OPERATOR, site(account))

        def down() -> None:
            drain_accounts([account])
            services.site.apply(
                OPERATOR,
                site(account).model_copy(update={"projects": []}),
                prune=True,
            )
            services.close()

        stack.callback(down)
        outside = tmp_path_factory.mktemp("outside")
        (outside / "keep.txt").write_text("not the gateway's to delete\n")
        yield {"services": services, "url": url, "runs_dir": runs_dir, "account": account, "outside": outside}


def submit(services, who: str, name: str, command: str, outputs: list[str] | None = None):
    spec = {"name": name, "project": PROJECT, "queue": "cpu", "command": command, "workdir": "/tmp"}
    if outputs:
        spec["outputs"] = outputs
    principal = services.access.principal(who, source="pytest")
    return services.runs.submit_keyed(build_spec(spec), principal=principal)


def sweep_at(services, days: float, **kwargs):
    services.retention.clock = lambda: utcnow() + timedelta(days=days)
    try:
        return services.retention.sweep(OPERATOR, project=PROJECT, **kwargs)
    finally:
        services.retention.clock = utcnow


def events(services, action: str, run_id: str) -> list:
    return [
        e for e in services.audit.events(OPERATOR, action=action, limit=1000).items if e.target_id == run_id
    ]


def test_a_sweep_after_a_clock_jump_deletes_what_the_rules_allow_and_a_hold_stops_it(world):
    services, outside = world["services"], world["outside"]
    lead = services.access.principal("lead", source="pytest")
    ok = submit(
        services, "lead", "ok", 'cd "$GW_RUN_DIR" && echo weights > model.bin && echo hello', ["*.bin"]
    )
    failed = submit(
        services, "lead", "bad", f'cd "$GW_RUN_DIR" && ln -s {outside} escape && echo boom >&2; exit 3'
    )
    released = submit(
        services,
        "lead",
        "rel",
        'cd "$GW_RUN_DIR" && echo released > model.bin && head -c 4096 /dev/zero > big.dat',
        ["*.bin"],
    )
    runs = {
        k: refresh_until(services, s.run.id) for k, s in (("ok", ok), ("failed", failed), ("rel", released))
    }
    world["failed_id"] = runs["failed"].id
    assert [runs[k].state.value for k in ("ok", "failed", "rel")] == ["succeeded", "failed", "succeeded"]
    for _ in range(5):
        services.harvester.harvest_due()
    shas = {a.path: a.sha256 for a in services.lineage.store.artifacts(runs["rel"].id)}
    services.releases.register_model(PROJECT, "m", principal=lead)
    services.releases.create_release(PROJECT, "m", shas["model.bin"], principal=lead, run_id=runs["rel"].id)

    # +10 days: only the failed run's directory (failed_run_days 7); logs (30) and outputs (60) wait
    preview = services.retention.sweep(
        OPERATOR, dry_run=True, project=PROJECT, as_of=utcnow() + timedelta(days=10)
    )
    assert [(i.run_id, i.path, i.rule, i.outcome) for i in preview.items] == [
        (runs["failed"].id, ".", "failed-runs", "would delete")
    ]
    assert Path(runs["failed"].run_dir).is_dir(), "a dry run deletes nothing"
    done = sweep_at(services, 10)
    assert [(i.run_id, i.path, i.outcome) for i in done.items] == [(runs["failed"].id, ".", "deleted")]
    assert not Path(runs["failed"].run_dir).exists()
    assert (outside / "keep.txt").exists(), "the symlink out of the run directory was not followed"
    [event] = events(services, "retention.delete", runs["failed"].id)
    assert event.after["rule"] == "failed-runs" and event.after["size_bytes"] > 0
    assert len(event.after["sha256"]) == 64
    assert services.runs.store.get_run(runs["failed"].id).state.value == "failed", "the record stays"
    chunk = services.logs.read(runs["failed"].id, principal=lead, stream="stderr")
    assert chunk.expired is not None and chunk.expired.endswith("by rule failed-runs")
    assert chunk.expired.startswith(f"files expired on {(utcnow() + timedelta(days=10)).date()}")

    # +100 days under a hold on the ok run: nothing of it goes; the released run is never touched
    mia = services.access.principal("mia", source="pytest")
    with pytest.raises(Forbidden):
        services.holds.place(mia, "run", runs["ok"].id, "members may not hold")
    hold = services.holds.place(lead, "run", runs["ok"].id, "under review")
    held = sweep_at(services, 100)
    assert held.items == []
    kept = {k.run_id: k.reason for k in held.kept}
    assert hold.id in kept[runs["ok"].id] and "release ret/m v1" in kept[runs["rel"].id]
    assert (Path(runs["ok"].run_dir) / "model.bin").exists()

    # lifted: the ok run's logs and its unreleased output go, one by one, each audited
    services.holds.lift(lead, hold.id, "review over")
    lifted = sweep_at(services, 100)
    got = sorted((i.run_id, i.path, i.rule, i.outcome) for i in lifted.items if i.outcome != "absent")
    job = runs["ok"].latest.job_id
    assert got == [
        (runs["ok"].id, "model.bin", "outputs", "deleted"),
        (runs["ok"].id, f"stderr-{job}.log", "logs", "deleted"),
        (runs["ok"].id, f"stdout-{job}.log", "logs", "deleted"),
    ]
    assert not (Path(runs["ok"].run_dir) / "model.bin").exists()
    assert Path(runs["ok"].run_dir).is_dir(), "only the files the rules name go"
    assert (Path(runs["rel"].run_dir) / "model.bin").read_text() == "released\n"
    assert len(events(services, "retention.delete", runs["ok"].id)) == 3
    assert services.logs.read(runs["ok"].id, principal=lead).expired.endswith("by rule logs")

    # storage was measured after the real passes; the tiny limit gives the warning on submit
    report = services.storage.report(lead, by="run", project=PROJECT)
    assert {r.run_id for r in report.rows} >= {runs["ok"].id, runs["rel"].id}
    assert runs["failed"].id not in {r.run_id for r in report.rows}
    [space] = report.projects
    assert space.status == "over" and space.size_bytes > space.limit_bytes
    warned = submit(services, "lead", "after", "true")
    assert warned.warnings and "over the limit" in warned.warnings[0]


def test_a_kill_9_in_the_middle_of_a_sweep_loses_no_record(world):
    services = world["services"]
    for when in ("after", "before"):
        failed = submit(services, "lead", f"k{when}", 'cd "$GW_RUN_DIR" && echo x > f.txt; exit 1').run
        run = refresh_until(services, failed.id)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.service.retention_world",
                world["url"],
                str(world["runs_dir"]),
                "10",
                when,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        [intent] = services.retention.store.pending([PROJECT])
        assert intent.run_id == run.id and intent.size_bytes > 0 and intent.sha256
        assert Path(run.run_dir).exists() is (when == "before")
        assert events(services, "retention.delete", run.id) == []
        preview = services.retention.sweep(OPERATOR, dry_run=True, project=PROJECT)
        assert [(i.run_id, i.outcome) for i in preview.items] == [(run.id, "pending")], "reported, not redone"
        after = sweep_at(services, 10)
        [item] = [i for i in after.items if i.run_id == run.id]
        assert item.outcome == "finished", item
        assert not Path(run.run_dir).exists()
        assert services.retention.store.pending([PROJECT]) == []
        [event] = events(services, "retention.delete", run.id)
        assert event.after["sha256"] == intent.sha256 and "later pass" in event.after["note"]


def test_a_member_who_leaves_has_their_run_directories_expire_by_rule(world):
    services = world["services"]
    mine = refresh_until(
        services, submit(services, "mia", "mine", 'cd "$GW_RUN_DIR" && echo m > m.txt').run.id
    )
    changes = services.site.apply(OPERATOR, site(world["account"], drop=("mia",)), sync_slurm=False)
    assert any(
        "member mia leaves project ret: their runs' files expire by rule member-left" in c
        for c in changes.changes
    )
    [departure] = services.retention.store.departures()
    assert (departure.user, departure.action) == ("mia", "expire")
    assert sweep_at(services, 1).items == [] or all(i.run_id != mine.id for i in sweep_at(services, 1).items)
    later = sweep_at(services, 4)
    assert [(i.path, i.rule, i.outcome) for i in later.items if i.run_id == mine.id] == [
        (".", "member-left", "deleted")
    ]
    back = services.site.apply(OPERATOR, site(world["account"]), sync_slurm=False)
    assert any("member mia is back in project ret" in c for c in back.changes)
    assert services.retention.store.departures() == []
    handed = services.site.apply(
        OPERATOR, site(world["account"], on_leave="lead", drop=("walt",)), sync_slurm=False
    )
    assert any(
        "member walt leaves project ret: their runs' files are handed to lead lead" in c
        for c in handed.changes
    )
    [departure] = services.storage.report(OPERATOR, project=PROJECT).departures
    assert (departure.user, departure.action, departure.steward) == ("walt", "lead", "lead")
    assert [e.after["steward"] for e in services.audit.events(OPERATOR, action="retention.departure").items][
        -1
    ] == "lead"
    services.site.apply(OPERATOR, site(world["account"]), sync_slurm=False)


def test_the_api_and_the_project_page_show_storage_and_the_warning(world):
    from gateway.api import create_app

    services = world["services"]
    token = services.auth.issue_token(OPERATOR, "lead", name="pytest")[0]
    scraper = services.auth.issue_token(OPERATOR, "walt", name="prometheus", scope="metrics")[0]
    with TestClient(create_app(services=services)) as client:
        _api(client, token)
        metrics = client.get("/metrics", headers={"Authorization": f"Bearer {scraper}"})
        assert metrics.status_code == 200, metrics.text
        lines = metrics.text.splitlines()
        assert any(line.startswith('gateway_project_storage_bytes{project="ret"}') for line in lines)
        limit = next(
            line for line in lines if line.startswith('gateway_project_storage_limit_bytes{project="ret"}')
        )
        assert float(limit.split()[-1]) == int(1.0e-6 * 1024**3)
    with web_client(services, token) as web:
        page = web.get(f"/ui/projects/{PROJECT}")
        assert page.status_code == 200, page.text
        assert 'id="storage-warning"' in page.text and "over the limit" in page.text
        assert 'id="storage-plots"' in page.text and "<svg" in page.text


def _api(client, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    storage = client.get("/retention/storage", params={"by": "user", "project": PROJECT}, headers=headers)
    assert storage.status_code == 200, storage.text
    assert storage.json()["projects"][0]["status"] == "over"
    bad = client.get("/retention/storage", params={"by": "queue"}, headers=headers)
    assert bad.status_code == 422
    hold = client.post(
        "/retention/holds",
        json={"target_type": "project", "target_id": PROJECT, "reason": "audit"},
        headers=headers,
    )
    assert hold.status_code == 201, hold.text
    assert (
        client.post(
            f"/retention/holds/{hold.json()['id']}/lift", json={"reason": "done"}, headers=headers
        ).status_code
        == 200
    )
    assert (
        client.post(
            f"/retention/holds/{hold.json()['id']}/lift", json={"reason": "again"}, headers=headers
        ).status_code
        == 409
    )
    assert client.post("/retention/sweep", headers=headers).status_code == 403, "sweeps are for admins"


def test_gw_shows_storage_holds_and_what_expired_and_runs_a_sweep(world, tmp_path):
    """gw over a real `gw serve` on this world's database, and gw admin on the gateway host."""
    services = world["services"]
    failed_id = world["failed_id"]
    with gw_serve(
        tmp_path, prefix="ret", users=("lead",), database_url=world["url"], sync_slurm=False
    ) as serve:
        env = {**os.environ, "GW_URL": serve.url, "GW_TOKEN": serve.tokens["lead"], "GW_CONFIG": serve.config}

        def gw(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [*GW, *args],
                env={**env, "COLUMNS": "200"},
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )

        report = gw("report", "storage", "--by", "user", "--project", PROJECT)
        assert report.returncode == 0, report.stderr
        assert "[over]" in report.stdout and "warning: project ret's run directories use" in report.stdout
        as_csv = gw("report", "storage", "--by", "run", "--format", "csv")
        assert as_csv.stdout.splitlines()[0].startswith("key,project,size_bytes")
        assert gw("report", "storage", "--by", "queue").returncode == 2
        held = gw("retention", "hold", "project", PROJECT, "--reason", "cli check")
        assert held.returncode == 0, held.stderr
        hold_id = held.stdout.split(":")[0]
        assert hold_id in gw("retention", "holds", "--project", PROJECT).stdout
        assert gw("retention", "lift", hold_id, "--reason", "done").returncode == 0
        assert gw("retention", "lift", hold_id, "--reason", "again").returncode == 5, "lifted already"
        expired = gw("retention", "expired", failed_id)
        assert expired.returncode == 0 and "by rule failed-runs" in expired.stdout
        logs = gw("logs", failed_id, "--stderr")
        assert "files expired on" in logs.stderr and "does not exist" not in logs.stderr
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps({"name": "w", "project": PROJECT, "queue": "cpu", "command": "true"}))
        submitted = gw("submit", str(spec))
        assert submitted.returncode == 0, submitted.stderr
        assert "warning: project ret's run directories use" in submitted.stderr

        admin_env = {
            **os.environ,
            "GATEWAY_DATABASE_URL": world["url"],
            "GATEWAY_RUNS_DIR": str(world["runs_dir"]),
        }

        def admin(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [*GW, "admin", "retention", "run", *args],
                env=admin_env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )

        assert admin("--as-of", "2099-01-01").returncode == 2, "--as-of goes with --dry-run only"
        preview = admin("--dry-run", "--project", PROJECT, "--as-of", "2099-01-01", "--json")
        assert preview.returncode == 0, preview.stderr
        planned = json.loads(preview.stdout)
        assert planned["dry_run"] and planned["items"], "by 2099 the logs are due"
        assert all(i["outcome"] in ("would delete", "absent") for i in planned["items"])
        assert any("release ret/m" in k["reason"] for k in planned["kept"])
        assert services.retention.store.pending([PROJECT]) == [], "a dry run records nothing"
