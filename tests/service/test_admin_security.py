"""The governance surface under attack: forged proxy headers, token files, calls without a caller,
and site files that would remove everything. Real `gw serve`, real `gw admin`, on both databases."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.core.access.values import Principal
from gateway.core.site.schema import parse_site
from gateway.errors import Forbidden, Unauthorized
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.conftest import BACKENDS, OPERATOR, fresh_database
from tests.service.gw_serve import GW, Serve, gw_serve

pytestmark = pytest.mark.slurm
PROXY = "127.0.0.2"  # the one trusted front end; the server listens on 127.0.0.1


def gw_admin(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*GW, "admin", *args], env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=120
    )


# -- trusted-proxy mode: only the allowed proxies may name the user --------------------------------


def test_trusted_proxy_mode_refuses_to_start_without_an_allow_list(tmp_path):
    with pytest.raises(ValueError, match="trusted_proxy needs trusted_proxies"):
        Settings(auth_mode="trusted_proxy")
    with pytest.raises(ValueError, match="not an IP address or network"):
        Settings(auth_mode="trusted_proxy", trusted_proxies="10.0.0.1/8")
    env = {
        **os.environ,
        "GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/gateway.db",
        "GATEWAY_AUTH_MODE": "trusted_proxy",
    }
    served = subprocess.run(
        [*GW, "serve", "--port", "1"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert served.returncode == 2, served.stderr
    assert "trusted_proxies" in served.stderr and "GATEWAY_TRUSTED_PROXIES" in served.stderr
    operator = gw_admin(env, "export")
    assert operator.returncode == 2 and "trusted_proxies" in operator.stderr


@pytest.fixture(scope="module", params=BACKENDS)
def proxied(request, tmp_path_factory) -> Iterator[Serve]:
    """`gw serve` in trusted-proxy mode on 127.0.0.1, trusting only the front end at 127.0.0.2."""
    state = tmp_path_factory.mktemp("proxied")
    settings = {"GATEWAY_AUTH_MODE": "trusted_proxy", "GATEWAY_TRUSTED_PROXIES": f"{PROXY},10.99.0.0/16"}
    with (
        fresh_database(request.param, state) as url,
        gw_serve(state, prefix="tp", database_url=url, settings=settings, sync_slurm=False) as serve,
    ):
        yield serve


def test_forged_trusted_header_from_elsewhere_gets_401(proxied):
    forged = {"X-Remote-User": "admin"}
    with httpx.Client(base_url=proxied.url, timeout=30) as direct:  # from 127.0.0.1: not a proxy
        response = direct.get("/admin/site", headers=forged)
        assert response.status_code == 401, response.text
        assert "trusted proxies" in response.json()["detail"]
        # uvicorn would take the client address from X-Forwarded-For sent through 127.0.0.1
        spoofed = direct.get("/admin/site", headers={**forged, "X-Forwarded-For": PROXY})
        assert spoofed.status_code == 401, spoofed.text
        assert direct.get("/runs").status_code == 401


def test_the_trusted_proxy_gets_through(proxied):
    transport = httpx.HTTPTransport(local_address=PROXY)
    with httpx.Client(base_url=proxied.url, transport=transport, timeout=30) as front_end:
        assert front_end.get("/runs", headers={"X-Remote-User": "tester"}).status_code == 200
        assert front_end.get("/admin/site", headers={"X-Remote-User": "admin"}).status_code == 200
        assert front_end.get("/admin/site", headers={"X-Remote-User": "tester"}).status_code == 403
        assert front_end.get("/runs", headers={"X-Remote-User": "stranger"}).status_code == 401
        assert front_end.get("/runs", headers={"X-Remote-User": "a b"}).status_code == 401
        assert front_end.get("/runs").status_code == 401
        issued = front_end.post("/tokens", json={"name": "via-proxy"}, headers={"X-Remote-User": "tester"})
        assert issued.status_code == 201, issued.text
        events = front_end.get("/audit", headers={"X-Remote-User": "admin"}, params={"action": "token.issue"})
    (event,) = [e for e in events.json()["items"] if e["after"]["name"] == "via-proxy"]
    assert event["actor"] == "tester" and event["source"] == PROXY


def test_a_submission_through_the_trusted_proxy_is_authenticated_as_any_request(proxied):
    """POST /runs (a lean route, gateway/api/lean.py) takes the trusted header only from the proxy."""
    spec = {"name": "tp", "project": "nosuch", "queue": "cpu", "command": "true", "workdir": "/tmp"}
    with httpx.Client(base_url=proxied.url, timeout=30) as direct:
        forged = direct.post("/runs", json=spec, headers={"X-Remote-User": "tester"})
    assert forged.status_code == 401 and "trusted proxies" in forged.json()["detail"], forged.text
    transport = httpx.HTTPTransport(local_address=PROXY)
    with httpx.Client(base_url=proxied.url, transport=transport, timeout=30) as front_end:
        assert front_end.post("/runs", json=spec, headers={"X-Remote-User": "stranger"}).status_code == 401
        assert front_end.post("/runs", json=spec).status_code == 401
        known = front_end.post("/runs", json=spec, headers={"X-Remote-User": "tester"})
        assert known.status_code == 404 and "no project 'nosuch'" in known.json()["detail"], known.text
        tester = {"X-Remote-User": "tester"}
        batch = front_end.post("/runs/batch", json={"items": [{"spec": spec}]}, headers=tester)
    refused = batch.json()
    assert batch.status_code == 422 and refused["error"] == "batch_rejected", batch.text
    assert [(i["index"], i["status"]) for i in refused["items"]] == [(0, 404)], batch.text


# -- gw admin token --write-config: never readable by anyone else ---------------------------------


@pytest.fixture(params=BACKENDS)
def operator_env(request, tmp_path) -> Iterator[dict[str, str]]:
    """GATEWAY_* settings of a fresh gateway with one user, mia (no Slurm accounts)."""
    with fresh_database(request.param, tmp_path) as url:
        env = {**os.environ, "GATEWAY_DATABASE_URL": url, "GATEWAY_RUNS_DIR": str(tmp_path / "runs")}
        site = tmp_path / "site.yaml"
        site.write_text("users: [{name: mia}]\n")
        made = gw_admin(env, "db", "upgrade")  # gw admin never creates a database: this does
        assert made.returncode == 0, made.stderr
        applied = gw_admin(env, "apply", "--no-slurm", str(site))
        assert applied.returncode == 0, applied.stderr
        yield env


def write_config(env: dict[str, str], path: Path) -> str:
    """`gw admin token mia --write-config PATH` under umask 022; returns the secret it printed."""
    made = subprocess.run(
        [*GW, "admin", "token", "mia", "--write-config", str(path), "--url", 'http://h:1/"x'],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        umask=0o022,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


def test_token_config_is_created_private(operator_env, tmp_path):
    path = tmp_path / "new-dir" / "config.toml"
    secret = write_config(operator_env, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert tomllib.loads(path.read_text()) == {"url": 'http://h:1/"x', "token": secret}
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temporary file left


def test_token_config_never_reaches_an_old_reader_or_a_symlink(operator_env, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('url = "old"\n')
    path.chmod(0o644)
    with path.open() as old_reader:  # opened while the file was readable by everyone
        secret = write_config(operator_env, path)
        assert secret not in old_reader.read()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and secret in path.read_text()
    elsewhere = tmp_path / "public.toml"
    elsewhere.write_text("")
    elsewhere.chmod(0o644)
    path.unlink()
    path.symlink_to(elsewhere)
    secret = write_config(operator_env, path)
    assert elsewhere.read_text() == ""  # the link was replaced, not followed
    assert not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) == 0o600


# -- no call without a caller ----------------------------------------------------------------------


def test_a_call_without_a_caller_is_refused(services):
    config = services.site.export(OPERATOR)
    calls = {
        "site.apply": lambda who: services.site.apply(who, config, dry_run=True),
        "site.export": lambda who: services.site.export(who),
        "slurm_sync.sync": lambda who: services.slurm_sync.sync(who, dry_run=True),
        "auth.issue_token": lambda who: services.auth.issue_token(who, "mia", name="nobody"),
        "audit.verify": lambda who: services.audit.verify(who),
    }
    member = services.access.principal("mia")
    for name, call in calls.items():
        with pytest.raises(Unauthorized, match="without a caller"):
            call(None)
        if name != "auth.issue_token":  # mia may issue her own
            with pytest.raises(Forbidden):
                call(member)
    outcome = services.site.apply(Principal.operator(), config, dry_run=True)
    # An export applied again changes nothing: users, projects, the rate table another file of the
    # worker left (test_accounting_store's, once stored with a digest that was not its table's)
    assert (outcome.changes, outcome.kept) == ([], [])
    assert services.auth.issue_token(member, "mia", name="own")[1].user == "mia"


def test_operator_commands_are_audited_as_the_operator(operator_env):
    assert gw_admin(operator_env, "token", "mia", "--name", "op").returncode == 0
    site = gw_admin(operator_env, "export").stdout
    assert parse_site(site).users[0].name == "mia"
    url = operator_env["GATEWAY_DATABASE_URL"]
    services = build_services(Settings(database_url=url, runs_dir=operator_env["GATEWAY_RUNS_DIR"]))
    try:
        events = services.audit.events(OPERATOR, action="token.issue").items
    finally:
        services.close()
    assert [(e.actor, e.source) for e in events] == [("operator", "gateway host")]


# -- site apply: removals only with prune, never the caller nor the last admin ---------------------


@pytest.fixture(scope="module", params=BACKENDS)
def server(request, tmp_path_factory, slurm) -> Iterator[Serve]:
    state = tmp_path_factory.mktemp("site-admin")
    with (
        fresh_database(request.param, state) as url,
        gw_serve(state, prefix="sa", users=("admin", "tester"), database_url=url) as serve,
    ):
        yield serve


@pytest.fixture
def admin(server) -> Iterator[httpx.Client]:
    """The API as admin; the site is exported before the test and put back after it."""
    headers = {"Authorization": f"Bearer {server.tokens['admin']}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
        site = client.get("/admin/site").json()
        yield client
        restored = client.post("/admin/site", json=site, params={"prune": "true"})
        assert restored.status_code == 200, restored.text
        assert client.get("/admin/site").json() == site


def names_in(site: dict) -> tuple[list[str], list[str]]:
    return sorted(u["name"] for u in site["users"]), sorted(p["name"] for p in site["projects"])


def test_an_empty_apply_removes_nothing_without_prune(server, admin, tmp_path):
    before = admin.get("/admin/site").json()
    users, projects = names_in(before)
    # {} also turns allow_root_mapping off, which the kept users mapped to root forbid: refused whole
    response = admin.post("/admin/site", json={})
    assert response.status_code == 422, response.text
    assert "maps to root" in str(response.json()["detail"]) and "pass prune" in str(response.json()["detail"])
    assert admin.get("/admin/site").json() == before
    response = admin.post("/admin/site", json={"allow_root_mapping": True})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["changes"] == [] and body["slurm"] == [], body
    assert body["kept"] == [f"would remove project {p} (pass prune to remove)" for p in projects] + [
        f"would remove user {u} (pass prune to remove)" for u in users
    ]
    assert admin.get("/admin/site").json() == before
    empty = tmp_path / "empty.yaml"
    empty.write_text("allow_root_mapping: true\n")
    applied = gw_admin(server.env, "apply", str(empty))
    assert applied.returncode == 0, applied.stderr
    assert "nothing to change" in applied.stdout
    assert "would remove user tester (pass --prune to remove)" in applied.stdout
    assert admin.get("/admin/site").json() == before


def test_an_empty_site_file_removes_nothing_without_prune(operator_env, tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    applied = gw_admin(operator_env, "apply", str(empty))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.splitlines() == [
        "nothing to change",
        "would remove user mia (pass --prune to remove)",
    ]
    assert parse_site(gw_admin(operator_env, "export").stdout).users[0].name == "mia"
    pruned = gw_admin(operator_env, "apply", "--prune", "--no-slurm", str(empty))
    assert pruned.returncode == 0 and pruned.stdout.splitlines() == ["remove user mia"], pruned.stdout


def test_prune_never_removes_the_caller_or_the_last_admin(server, admin, tmp_path):
    before = admin.get("/admin/site").json()
    for dry_run in ("true", "false"):
        response = admin.post("/admin/site", json={}, params={"prune": "true", "dry_run": dry_run})
        assert response.status_code == 409, response.text
        assert "admin, who is applying it" in response.json()["detail"]
    assert admin.get("/admin/site").json() == before  # checked before anything was applied
    others = {**before, "users": [u for u in before["users"] if u["name"] != "admin"]}
    site = tmp_path / "no-admin.yaml"
    site.write_text(json.dumps(others))
    applied = gw_admin(server.env, "apply", "--prune", str(site))
    assert applied.returncode == 5, applied.stdout  # exits.CONFLICT
    assert "would leave no enabled admin (now: admin)" in applied.stderr
    demoted = {**before, "users": [{**u, "admin": False} for u in before["users"]]}
    response = admin.post("/admin/site", json=demoted)
    assert response.status_code == 409 and "no enabled admin" in response.json()["detail"]
    assert admin.get("/admin/site").json() == before


def test_prune_removes_what_the_file_leaves_out(server, admin):
    before = admin.get("/admin/site").json()
    without_bob = {
        **before,
        "users": [u for u in before["users"] if u["name"] != "bob"],
        "projects": [p for p in before["projects"] if p["name"] != "pb"],
    }
    dry = admin.post("/admin/site", json=without_bob, params={"prune": "true", "dry_run": "true"})
    assert dry.status_code == 200 and admin.get("/admin/site").json() == before
    response = admin.post("/admin/site", json=without_bob, params={"prune": "true"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body == dry.json() and body["kept"] == []
    assert body["changes"] == ["remove project pb", "remove user bob"]
    assert f"remove account {server.account}b" in " ".join(body["slurm"])
    assert names_in(admin.get("/admin/site").json()) == names_in(without_bob)


def test_gw_admin_token_issues_a_metrics_scope_token(operator_env):
    issued = gw_admin(operator_env, "token", "mia", "--name", "prometheus", "--scope", "metrics")
    assert issued.returncode == 0, issued.stderr
    assert "metrics token gwt_" in issued.stderr
    services = build_services(
        Settings(database_url=operator_env["GATEWAY_DATABASE_URL"], runs_dir=operator_env["GATEWAY_RUNS_DIR"])
    )
    try:
        assert services.metrics.allowed(source="127.0.0.1", token=issued.stdout.strip())
        with pytest.raises(Unauthorized, match="metrics token"):
            services.auth.authenticate(issued.stdout.strip())
    finally:
        services.close()
    wrong = gw_admin(operator_env, "token", "mia", "--scope", "root")
    assert wrong.returncode != 0 and "valid: api, metrics" in wrong.stderr + wrong.stdout
