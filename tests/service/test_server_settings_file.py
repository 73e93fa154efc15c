"""One place says where the server's state is: the settings file (GATEWAY_SETTINGS_FILE, the one
`make up` writes) is read by `gw serve` and `gw admin` alike, and `gw admin` never creates a database."""

from __future__ import annotations

import os
import subprocess

import httpx
import pytest

from tests.service.conftest import SITE
from tests.service.gw_serve import GW, Process, free_port


def plain_env(**more: str) -> dict[str, str]:
    """The environment without any GATEWAY_* variable: only what ``more`` says (and the file) counts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
    return {**env, "COLUMNS": "200", **more}


def gw(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*GW, *args], env=env, capture_output=True, text=True, timeout=120)


def test_serve_and_admin_read_the_same_settings_file(tmp_path):
    database = tmp_path / "state" / "gateway.db"
    settings = tmp_path / "gateway.env"
    settings.write_text(
        "# a server's settings, as make up writes them\n"
        f"GATEWAY_DATABASE_URL=sqlite:///{database}\n"
        f"GATEWAY_RUNS_DIR={tmp_path}/runs\n"
    )
    env = plain_env(GATEWAY_SETTINGS_FILE=str(settings))
    site = tmp_path / "site.yaml"
    site.write_text(SITE.format(account=f"gwtfile{free_port()}"))

    made = gw(env, "admin", "db", "upgrade")
    assert made.returncode == 0, made.stderr
    assert f"{database}, GATEWAY_DATABASE_URL from {settings}" in made.stdout
    assert gw(env, "admin", "apply", "--no-slurm", str(site)).returncode == 0
    again = gw(env, "admin", "apply", "--dry-run", "--no-slurm", str(site))
    assert again.returncode == 0 and again.stdout.strip() == "nothing to change", again.stdout
    token = gw(env, "admin", "token", "tester", "--name", "file").stdout.strip()

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = Process([*GW, "serve", "--port", str(port)], env, tmp_path / "serve.log", url)
    server.start()
    try:  # the token gw admin wrote is in the database gw serve reads
        runs = httpx.get(f"{url}/runs", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert runs.status_code == 200, runs.text
    finally:
        server.stop()
    assert f"over {settings}; database {database}" in (tmp_path / "serve.log").read_text()

    # the environment wins over the file
    elsewhere = tmp_path / "other.db"
    override = gw({**env, "GATEWAY_DATABASE_URL": f"sqlite:///{elsewhere}"}, "admin", "export")
    assert override.returncode == 69 and f"no gateway database at {elsewhere}" in override.stderr
    assert "GATEWAY_DATABASE_URL from the environment" in override.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("apply", "--dry-run", "--no-slurm", "SITE"),
        ("apply", "--no-slurm", "SITE"),
        ("token", "admin"),
        ("export",),
        ("audit", "verify"),
    ],
)
def test_an_admin_command_on_a_missing_database_says_so_and_creates_nothing(tmp_path, args):
    database = tmp_path / "state" / "gateway.db"
    site = tmp_path / "site.yaml"
    site.write_text(SITE.format(account="gwtnodb"))
    env = plain_env(GATEWAY_SETTINGS_FILE="", GATEWAY_DATABASE_URL=f"sqlite:///{database}")
    done = gw(env, "admin", *[str(site) if a == "SITE" else a for a in args])
    assert done.returncode == 69, done.stdout + done.stderr
    assert f"there is no gateway database at {database}" in done.stderr
    assert "nothing was created" in done.stderr and "gw admin db upgrade" in done.stderr
    assert not database.exists() and not database.parent.exists()
    assert list(tmp_path.iterdir()) == [site]  # no database, no anchor file, no directory


def test_a_dry_run_on_a_schema_behind_the_code_upgrades_nothing(tmp_path):
    import sqlite3

    from sqlalchemy import create_engine

    from gateway.store.db import schema_behind

    database = tmp_path / "gateway.db"
    site = tmp_path / "site.yaml"
    site.write_text(SITE.format(account="gwtbehind"))
    env = plain_env(GATEWAY_SETTINGS_FILE="", GATEWAY_DATABASE_URL=f"sqlite:///{database}")
    assert gw(env, "admin", "db", "upgrade").returncode == 0
    engine = create_engine(f"sqlite:///{database}")
    assert schema_behind(engine) is None

    def dump() -> list[str]:  # the database's content, schema and rows (its file may differ by WAL)
        conn = sqlite3.connect(database)
        try:
            return list(conn.iterdump())
        finally:
            conn.close()

    conn = sqlite3.connect(database)  # the schema as an older gateway left it
    with conn:
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
    conn.close()
    before = dump()

    for args in (("apply", "--dry-run", "--no-slurm", str(site)), ("sync-slurm", "--dry-run")):
        done = gw(env, "admin", *args)
        assert done.returncode == 69, done.stdout + done.stderr
        assert "schema is at revision 0001" in done.stderr and "gw admin db upgrade" in done.stderr
        assert "nothing was changed" in done.stderr
    assert dump() == before  # no upgrade, no write
    behind = schema_behind(engine)
    assert behind is not None and behind[0] == "0001"
    engine.dispose()


def test_the_default_url_names_where_it_came_from(tmp_path):
    env = plain_env(GATEWAY_SETTINGS_FILE="")
    done = gw(env, "admin", "export")
    if done.returncode == 0:
        pytest.skip("this host has a gateway database at the default place")
    assert done.returncode == 69
    assert "no gateway database at /var/lib/gateway/gateway.db" in done.stderr
    assert "the default: neither the environment nor a settings file sets it" in done.stderr


def test_a_named_settings_file_that_is_missing_is_named(tmp_path):
    missing = tmp_path / "nowhere.env"
    for args in (("admin", "export"), ("serve", "--port", "1"), ("admin", "db", "upgrade")):
        done = gw(plain_env(GATEWAY_SETTINGS_FILE=str(missing)), *args)
        assert done.returncode == 2, done.stderr
        assert f"GATEWAY_SETTINGS_FILE names {missing}, which does not exist" in done.stderr


def test_a_bad_line_in_the_file_is_named_with_the_file(tmp_path):
    settings = tmp_path / "gateway.env"
    settings.write_text(f"GATEWAY_DATABASE_URL=sqlite:///{tmp_path}/g.db\nGATEWAY_REFRESH_INTERVAL_S=0\n")
    done = gw(plain_env(GATEWAY_SETTINGS_FILE=str(settings)), "admin", "export")
    assert done.returncode == 2
    assert f"invalid gateway settings (environment and {settings})" in done.stderr
    assert "GATEWAY_REFRESH_INTERVAL_S" in done.stderr
