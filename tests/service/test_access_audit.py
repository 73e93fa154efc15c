"""What the site file and every change leave: an idempotent apply that removes a member's Slurm
association, an audit event per change, and a verify that finds edits and deletions
(tests/service/test_access.py: the permission matrix)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from gateway.core.audit.entry import AuditEntry
from gateway.core.site.schema import parse_site
from gateway.services.site.apply import SiteChanges
from gateway.store import Database
from gateway.store.audit.audit import AuditStore
from tests.service.access_setup import call
from tests.service.conftest import OPERATOR, SITE

ROOT = Path(__file__).resolve().parents[2]


def test_apply_is_idempotent_and_removing_a_member_removes_the_association(services, slurm):
    account = f"gwtap{os.getpid()}"
    site = SITE.format(account=account)
    config = parse_site(site)
    first = services.site.apply(OPERATOR, config)
    # the second apply changes nothing; what it keeps (projects other test files of this process
    # made, which the file leaves out) is what the first kept
    again = services.site.apply(OPERATOR, config)
    assert again == SiteChanges(changes=[], slurm=[], kept=first.kept)
    assert services.slurm_sync.sync(OPERATOR) == []
    assocs = _assocs(f"{account}b")
    assert "gwtbob" in assocs
    without_bob = parse_site(site.replace("    members: [{user: bob, role: member}]\n", "    members: []\n"))
    dry = services.site.apply(OPERATOR, without_bob, dry_run=True)
    assert any("remove user gwtbob" in c for c in dry.slurm), dry  # planned against the new site
    assert "gwtbob" in _assocs(f"{account}b")
    result = services.site.apply(OPERATOR, without_bob)
    assert result.changes and "change project pb" in result.changes[0]
    assert result.slurm == dry.slurm
    assert "gwtbob" not in _assocs(f"{account}b")
    services.site.apply(OPERATOR, config)  # back to the session's site for the tests after this one


def _assocs(account: str) -> str:
    return subprocess.run(
        ["sacctmgr", "-nP", "show", "assoc", f"account={account}", "format=user"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_every_change_is_audited(app, services, tokens, ended_run):
    events = services.audit.events(OPERATOR, target=ended_run).items
    assert [e.action for e in events] == ["run.submit"] and events[0].actor == "tester"
    assert events[0].after["os_user"] == "root" and events[0].source == "pytest"
    actions = {e.action for e in services.audit.events(OPERATOR, limit=10_000).items}
    assert {"user.add", "project.add", "token.issue", "slurm.add_account", "run.submit"} <= actions
    lead = call(app, tokens, "lead", "GET", "/audit").json()["items"]
    assert lead and {e["project"] for e in lead} <= {"test", "capped"}


def test_audit_verify_detects_edits_and_deletions(tmp_path):
    url = f"sqlite:///{tmp_path}/audit.db"
    db = Database(url)
    db.upgrade()
    audit = AuditStore(db)
    for n in range(5):
        audit.record(AuditEntry("alice", "run.submit", "run", f"r-{n}", "p", None, None, {"n": n}))
    assert audit.verify() == []
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE audit_events SET actor = 'mallory' WHERE seq = 3"))
    assert [str(p) for p in audit.verify()] == ["event 3: was edited: its hash does not match its content"]
    cli = subprocess.run(
        [sys.executable, "-m", "gateway.cli.main", "admin", "audit", "verify"],
        env={**os.environ, "GATEWAY_DATABASE_URL": url},
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert cli.returncode == 1 and "event 3" in cli.stderr
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE audit_events SET actor = 'alice' WHERE seq = 3"))
        conn.execute(text("DELETE FROM audit_events WHERE seq = 4"))
    problems = [str(p) for p in audit.verify()]
    assert "event 4: missing (deleted?)" in problems and any(p.startswith("event 5") for p in problems)
    db.dispose()
