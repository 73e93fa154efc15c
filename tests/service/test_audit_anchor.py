"""The audit chain checked against checkpoints kept outside the database, on both databases.

Each test gets a database of its own (SQLite file, or a fresh PostgreSQL
database) and an anchor file of its own, and tampers with them the way the
issue describes: with SQL on the real database, and by hand on the file.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from gateway.api import create_app
from gateway.core.audit.entry import event_hash
from gateway.core.site.schema import parse_site
from gateway.errors import Conflict
from gateway.services import Services
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.conftest import OPERATOR, POSTGRES_ADMIN_URL

ROOT = Path(__file__).resolve().parents[2]
SITE = "allow_root_mapping: true\nusers: [{name: admin, os_user: root, admin: true}]\nprojects: []\n"


@pytest.fixture
def fresh_url(database_url, tmp_path) -> Iterator[str]:
    """A database of this test's own, on the session's backend."""
    if database_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path}/gateway.db"
        return
    name = f"gwaudit_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def gateway(fresh_url, tmp_path, slurm) -> Iterator[tuple[Services, str]]:
    """The services over that database, with an admin (a few audited events), and the admin's token."""
    settings = Settings(
        database_url=fresh_url,
        runs_dir=tmp_path / "runs",
        audit_anchor_path=tmp_path / "anchor" / "audit-anchors.jsonl",
    )
    services = build_services(settings, slurm=slurm)
    services.site.apply(OPERATOR, parse_site(SITE))
    token = services.auth.issue_token(OPERATOR, "admin", name="pytest")[0]
    yield services, token
    services.close()


def more_events(services: Services, n: int) -> int:
    """``n`` more audited actions (token issues); returns the log's last sequence number."""
    for i in range(n):
        services.auth.issue_token(OPERATOR, "admin", name=f"t{i}")
    return services.audit.events(OPERATOR, limit=10_000).items[-1].seq


def anchor(services: Services) -> Path:
    return Path(services.audit.anchors.path)


def cut_last_event(services: Services) -> int:
    """The issue's attack: delete the last event and point the head at the one before; returns its seq."""
    with services.db.engine.begin() as conn:
        last = conn.execute(text("SELECT max(seq) FROM audit_events")).scalar_one()
        conn.execute(text("DELETE FROM audit_events WHERE seq = :s"), {"s": last})
        prev = conn.execute(
            text("SELECT hash FROM audit_events WHERE seq = :s"), {"s": last - 1}
        ).scalar_one()
        conn.execute(
            text("UPDATE audit_head SET seq = :s, hash = :h WHERE id = 1"), {"s": last - 1, "h": prev}
        )
    return last


def rewrite_from(services: Services, seq: int, actor: str) -> None:
    """A careful forger: change event ``seq``'s actor, then recompute every later hash and the head."""
    events = services.audit.events(OPERATOR, limit=10_000).items
    prev = events[seq - 2].hash if seq > 1 else "0" * 64
    with services.db.engine.begin() as conn:
        for event in events[seq - 1 :]:
            if event.seq == seq:
                event = dataclasses.replace(event, actor=actor)
            digest = event_hash(prev, event.seq, event.at, event)
            conn.execute(
                text("UPDATE audit_events SET actor = :a, prev_hash = :p, hash = :h WHERE seq = :s"),
                {"a": event.actor, "p": prev, "h": digest, "s": event.seq},
            )
            prev = digest
        conn.execute(text("UPDATE audit_head SET hash = :h WHERE id = 1"), {"h": prev})


def gw(services: Services, *args: str) -> subprocess.CompletedProcess:
    """``gw admin audit ...`` on this gateway's database and anchor file, as an operator runs it."""
    settings = services.settings
    env = {
        **os.environ,
        "GATEWAY_DATABASE_URL": settings.database_url,
        "GATEWAY_RUNS_DIR": str(settings.runs_dir),
        "GATEWAY_AUDIT_ANCHOR_PATH": str(settings.anchor_path),
    }
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli.main", "admin", "audit", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )


def api_verify(services: Services, token: str) -> dict:
    with TestClient(create_app(services=services)) as client:
        response = client.get("/audit/verify", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_log_cut_at_its_end_fails_verify_once_a_checkpoint_was_taken(gateway):
    services, token = gateway
    more_events(services, 2)
    started = gw(services, "checkpoint")
    assert started.returncode == 0 and f"started {anchor(services)}" in started.stdout, started.stderr
    last = more_events(services, 2)
    assert services.audit.checkpoint().written.seq == last

    cut = cut_last_event(services)
    assert cut == last
    # The chain alone cannot see it: this is what the issue reported.
    assert services.audit.store.verify() == []

    verdict = services.audit.verify(OPERATOR)
    (problem,) = verdict.problems
    assert problem.startswith(f"the log ends at event {last - 1} but the checkpoint of ")
    assert f"recorded event {last} with hash " in problem and problem.endswith(
        "events were removed from the end"
    )
    assert verdict.events == last - 1 and verdict.last_checkpoint.seq == last

    cli = gw(services, "verify")
    assert cli.returncode == 1 and f"problem: {problem}" in " ".join(cli.stderr.split()), cli.stderr
    body = api_verify(services, token)
    assert body["ok"] is False and body["problems"] == [problem]
    assert body["events"] == last - 1 and body["checkpoints"] == 2 and body["last_checkpoint"]["seq"] == last

    # The scheduler's checkpoint refuses to write over the evidence, and says why.
    with pytest.raises(Conflict, match="events were removed from the end"):
        services.audit.checkpoint()


def test_an_intact_log_checkpointed_by_the_scheduler_verifies(gateway):
    services, token = gateway
    services.background.cycle()  # one cycle of gw serve: starts the anchor file
    more_events(services, 3)
    services.background.cycle()
    services.background.cycle()  # nothing new: no line
    lines = anchor(services).read_text().splitlines()
    assert len(lines) == 2

    verdict = services.audit.verify(OPERATOR)
    head = services.audit.events(OPERATOR, limit=10_000).items[-1].seq
    assert verdict.ok and verdict.events == head and verdict.checkpoints == 2
    assert verdict.last_checkpoint.seq == head
    (started,) = services.audit.events(OPERATOR, action="audit.anchor").items
    assert started.actor == "gateway" and started.after == {
        "path": str(anchor(services)),
        "previous_file": None,
    }

    cli = gw(services, "verify")
    assert cli.returncode == 0, cli.stderr
    said = " ".join(cli.stdout.split())
    assert said.startswith(f"audit log intact: {head} events; 2 checkpoints in {anchor(services)} agree")
    body = api_verify(services, token)
    assert body["ok"] is True and body["problems"] == [] and body["events"] == head
    assert body["checkpoints"] == 2 and body["last_checkpoint"]["seq"] == head


def test_before_any_checkpoint_verify_says_a_cut_cannot_be_seen_yet(gateway):
    services, _ = gateway
    cli = gw(services, "verify")
    assert cli.returncode == 0, cli.stderr
    assert "no checkpoint yet" in cli.stdout and "a cut at its end cannot be detected" in " ".join(
        cli.stdout.split()
    )


def test_edited_anchored_events_are_reported(gateway):
    services, _ = gateway
    services.audit.checkpoint()
    more_events(services, 3)
    anchored = services.audit.checkpoint().written.seq
    more_events(services, 2)

    # A careless edit: the chain shows it; the anchored hash itself is untouched.
    with services.db.engine.begin() as conn:
        conn.execute(text("UPDATE audit_events SET actor = 'mallory' WHERE seq = 2"))
    assert services.audit.verify(OPERATOR).problems == (
        "event 2: was edited: its hash does not match its content",
    )
    with services.db.engine.begin() as conn:
        conn.execute(text("UPDATE audit_events SET actor = 'operator' WHERE seq = 2"))
    assert services.audit.verify(OPERATOR).ok

    # A careful forger recomputes every later hash and the head: only the checkpoints show it.
    rewrite_from(services, 2, "mallory")
    assert services.audit.store.verify() == []
    problems = services.audit.verify(OPERATOR).problems
    assert problems and all("was rewritten" in p for p in problems), problems
    assert any(p.startswith(f"event {anchored} is not the one the checkpoint of ") for p in problems)


def test_a_malformed_anchor_file_is_reported_and_not_added_to(gateway):
    services, _ = gateway
    services.audit.checkpoint()
    with anchor(services).open("ab") as handle:
        handle.write(b"this is not a checkpoint\n")
    more_events(services, 1)

    (problem,) = services.audit.verify(OPERATOR).problems
    assert problem.startswith(f"the anchor file {anchor(services)}, line 2: it is not JSON")
    refused = gw(services, "checkpoint")
    assert refused.returncode == 5, refused.stderr
    assert "no checkpoint is added to a damaged file" in " ".join(refused.stderr.split())

    restarted = gw(services, "checkpoint", "--new-file")
    assert restarted.returncode == 0, restarted.stderr
    (kept,) = anchor(services).parent.glob("audit-anchors.jsonl.*")
    assert b"this is not a checkpoint" in kept.read_bytes()
    assert services.audit.verify(OPERATOR).ok
    first, second = services.audit.events(OPERATOR, action="audit.anchor").items
    assert second.actor == "operator" and second.after["previous_file"] == str(kept)


def test_an_unreadable_anchor_file_is_reported_not_a_crash(gateway):
    services, token = gateway
    anchor(services).mkdir(parents=True)  # a directory where the file should be: root can read any file
    (problem,) = services.audit.verify(OPERATOR).problems
    assert problem.startswith(f"cannot read the anchor file {anchor(services)}: ")
    assert api_verify(services, token)["problems"] == [problem]


def test_a_missing_anchor_file_is_reported_and_not_silently_started_again(gateway):
    services, _ = gateway
    services.audit.checkpoint()
    more_events(services, 1)
    services.audit.checkpoint()
    anchor(services).unlink()

    (started,) = services.audit.events(OPERATOR, action="audit.anchor").items
    (problem,) = services.audit.verify(OPERATOR).problems
    assert problem.startswith(
        f"the log says checkpoints have been written to {anchor(services)} since event {started.seq} "
    )
    assert problem.endswith("but it is missing")
    with pytest.raises(Conflict, match="not starting it again on my own"):
        services.audit.checkpoint()
    assert not anchor(services).exists()

    restarted = gw(services, "checkpoint", "--new-file")
    assert restarted.returncode == 0 and "started" in restarted.stdout, restarted.stderr
    assert services.audit.verify(OPERATOR).ok


def test_the_anchor_file_is_made_0600_whatever_the_umask(gateway):
    services, _ = gateway
    old = os.umask(0)
    try:
        services.audit.checkpoint()
        more_events(services, 1)
        services.audit.checkpoint()
    finally:
        os.umask(old)
    assert stat.S_IMODE(anchor(services).stat().st_mode) == 0o600
    assert len(anchor(services).read_text().splitlines()) == 2
