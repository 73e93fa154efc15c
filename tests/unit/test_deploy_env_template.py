"""The deploy role's environment file template sets the web session key it read from the host's key file
(the deploy test, tests/service/test_deploy_playbook.py, runs the whole play twice)."""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml

from gateway.settings import Settings

ROLE = Path(__file__).resolve().parents[2] / "ansible" / "roles" / "gateway"


def render(**extra: object) -> str:
    variables = {
        "ansible_managed": "managed",
        "gateway_instance": "gw",
        "gateway_user": "gw",
        "gateway_db_user": "gw",
        "_gateway_db_password": "p" * 48,
        "gateway_db_host": "127.0.0.1",
        "gateway_db_port": 5432,
        "gateway_db_name": "gw",
        "gateway_runs_dir": "/srv/runs",
        "gateway_home": "/var/lib/gw",
        "gateway_config_dir": "/etc/gw",
        "gateway_submit_host": "",
        "gateway_settings": {},
        **extra,
    }
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True)
    return env.from_string((ROLE / "templates" / "gateway.env.j2").read_text()).render(**variables)


def test_the_env_file_carries_the_generated_web_session_key():
    key = "0123456789abcdef" * 4
    lines = dict(
        line.split("=", 1)
        for line in render(_gateway_web_session_key=key).splitlines()
        if "=" in line and not line.startswith("#")
    )
    assert lines["GATEWAY_WEB_SESSION_KEY"] == key
    # gw serve and gw admin under these variables read this file, never another (make up's)
    assert lines["GATEWAY_SETTINGS_FILE"] == "/etc/gw/gateway.env"
    assert Settings(
        database_url="sqlite://", web_session_key=lines["GATEWAY_WEB_SESSION_KEY"]
    ).web_session_key
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert defaults["gateway_web_session_key_file"].endswith("/web_session.key")
    tasks = yaml.safe_load((ROLE / "tasks" / "config.yml").read_text())
    (generate,) = [t for t in tasks if t["name"] == "Generate the web session key once"]
    assert generate["args"]["creates"] == "{{ gateway_web_session_key_file }}"  # once: a rerun leaves it
    (mode,) = [t for t in tasks if t["name"] == "The web session key file is root's alone"]
    assert mode["ansible.builtin.file"]["mode"] == "0600"
    env_file = next(t for t in tasks if t["name"].startswith("The environment file"))
    assert tasks.index(generate) < tasks.index(env_file)
