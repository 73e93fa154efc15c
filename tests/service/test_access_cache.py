"""The access cache (tokens -> principals, projects, options): fewer reads, and no stale answer.

Two ``Services`` on one database stand for the two processes of a real site:
``gw serve`` (which caches) and ``gw admin`` (which applies the site file or
revokes a token). What one writes, the other sees on its very next call.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import event

from gateway.core.site.schema import parse_site
from gateway.core.spec.run_spec import build_spec
from gateway.errors import NotFound, SpecError, Unauthorized
from gateway.services import Services
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.conftest import JOB_ROOT
from tests.service.conftest import OPERATOR, fresh_database

SITE = """
allow_root_mapping: true
users: [{{name: ana, os_user: root}}]
projects:
  - name: pc
    slurm_account: gwtcache
    members: [{{user: ana, role: member}}]
    queues: [{{name: cpu, partition: cpu, max_walltime_min: {limit}}}]
"""
SPEC = {"name": "c", "project": "pc", "queue": "cpu", "command": "true", "resources": {"walltime_min": 60}}


@pytest.fixture
def pair(backend, tmp_path) -> Iterator[tuple[Services, Services]]:
    """The server's services and an admin's, built separately on one fresh database."""
    with fresh_database(backend, tmp_path) as url:
        runs_dir, anchor = JOB_ROOT / "runs-cache", tmp_path / "anchor.jsonl"
        settings = Settings(database_url=url, runs_dir=runs_dir, audit_anchor_path=anchor)
        server = build_services(settings)
        admin = build_services(settings, upgrade=False)
        admin.site.apply(OPERATOR, parse_site(SITE.format(limit=120)), sync_slurm=False)
        try:
            yield server, admin
        finally:
            server.close()
            admin.close()


class Statements:
    """Counts the SQL statements an engine sends."""

    def __init__(self, services: Services) -> None:
        self.count = 0
        event.listen(services.db.engine, "before_cursor_execute", self._one)

    def _one(self, *_args) -> None:
        self.count += 1


def test_a_cached_token_costs_one_read_and_a_revoke_refuses_it_at_once(pair):
    server, admin = pair
    secret, token = admin.auth.issue_token(OPERATOR, "ana", name="t1")
    assert server.auth.authenticate(secret).user == "ana"  # loaded (and its first use recorded)
    assert server.auth.authenticate(secret).user == "ana"  # loaded again: the use changed it
    statements = Statements(server)
    hits = server.access.cache.hits
    for _ in range(3):
        assert server.auth.authenticate(secret).roles == {"pc": "member"}
    assert server.access.cache.hits == hits + 3
    assert statements.count == 3  # one generation read each, instead of token + user + roles

    admin.auth.revoke(OPERATOR, token.id)  # another process: only the database tells the server
    with pytest.raises(Unauthorized, match="revoked"):
        server.auth.authenticate(secret)


def test_a_disabled_user_is_refused_at_once(pair):
    server, admin = pair
    secret, _ = admin.auth.issue_token(OPERATOR, "ana", name="t2")
    server.auth.authenticate(secret)
    admin.site.apply(
        OPERATOR,
        parse_site(SITE.format(limit=120).replace("os_user: root}", "os_user: root, disabled: true}")),
        sync_slurm=False,
    )
    with pytest.raises(Unauthorized, match="disabled"):
        server.auth.authenticate(secret)


def test_a_changed_queue_limit_applies_at_once_after_apply(pair):
    server, admin = pair
    spec = build_spec(SPEC)
    principal = server.access.principal("ana")
    assert server.runs.admission.admit(spec, principal).target.partition == "cpu"
    statements = Statements(server)
    server.runs.admission.admit(spec, principal)
    assert statements.count == 1  # the project and the site options, in one snapshot: one generation read

    admin.site.apply(OPERATOR, parse_site(SITE.format(limit=30)), sync_slurm=False)
    with pytest.raises(SpecError, match="at most 30 minutes"):
        server.runs.admission.admit(spec, principal)

    admin.site.apply(OPERATOR, parse_site(SITE.format(limit=120)), sync_slurm=False)
    assert server.runs.admission.admit(spec, principal).target.partition == "cpu"


def test_a_pruned_project_and_user_are_gone_at_once(pair):
    server, admin = pair
    assert server.access.project("pc").queues[0].max_walltime_min == 120
    assert server.access.principal("ana").os_user == "root"
    admin.site.apply(OPERATOR, parse_site("users: []\nprojects: []\n"), sync_slurm=False, prune=True)
    with pytest.raises(NotFound):
        server.access.project("pc")
    with pytest.raises(NotFound):
        server.access.principal("ana")
    assert server.access.option("allow_root_mapping", False) is False


def test_a_snapshot_reads_the_generation_once_and_the_next_one_sees_a_change(pair):
    server, admin = pair
    assert server.access.project("pc").queues[0].max_walltime_min == 120  # cached
    assert server.access.option("allow_root_mapping", False) is True  # cached
    statements = Statements(server)
    with server.access.snapshot():
        server.access.project("pc")
        admin.site.apply(OPERATOR, parse_site(SITE.format(limit=30)), sync_slurm=False)
        # inside the block: the data as of its first read, the project and the options alike
        assert server.access.project("pc").queues[0].max_walltime_min == 120
        assert server.access.option("allow_root_mapping", False) is True
        with server.access.snapshot():  # a nested block shares the outer one's moment
            assert server.access.project("pc").queues[0].max_walltime_min == 120
    assert statements.count == 1
    assert server.access.project("pc").queues[0].max_walltime_min == 30  # the next read sees the change
