"""gw's client settings: GW_* over the config file over the defaults, and clear errors for bad values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.client.settings import ClientSettings, ClientSettingsError


def config(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return {"GW_CONFIG": str(path)}


def test_the_environment_wins_over_the_file_and_the_file_over_the_defaults(tmp_path: Path) -> None:
    text = 'url = "http://gw.example:8000"\ntoken = "gwt_file"\nproject = "vision"\nother = 1\n'
    env = config(tmp_path, text)
    assert ClientSettings.load(env) == ClientSettings("http://gw.example:8000", "gwt_file", 30.0, "vision")
    env |= {"GW_TOKEN": "gwt_env", "GW_TIMEOUT_S": "2.5"}
    assert ClientSettings.load(env) == ClientSettings("http://gw.example:8000", "gwt_env", 2.5, "vision")
    assert ClientSettings.load({"GW_CONFIG": str(tmp_path / "none.toml")}) == ClientSettings()


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"GW_TIMEOUT_S": "abc"}, "GW_TIMEOUT_S='abc': the request time-out must be a number of seconds"),
        ({"GW_TIMEOUT_S": "-1"}, "GW_TIMEOUT_S: timeout_s -1.0: the request time-out must be"),
        ({"GW_TIMEOUT_S": "nan"}, "GW_TIMEOUT_S: timeout_s nan"),
        ({"GW_URL": " "}, "GW_URL: url ' ': the gateway URL must be set"),
    ],
)
def test_a_bad_variable_is_named(tmp_path: Path, environ: dict[str, str], message: str) -> None:
    with pytest.raises(ClientSettingsError, match=message.replace("(", r"\(").replace(".", r"\.")):
        ClientSettings.load({"GW_CONFIG": str(tmp_path / "none.toml"), **environ})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('timeout_s = "soon"\n', "timeout_s = 'soon': the request time-out must be a number"),
        ("timeout_s = 0\n", "timeout_s 0: the request time-out must be a number of seconds above 0"),
        ("token = 42\n", "token = 42: token must be a string"),
        ("url = [\n", "not a readable TOML file"),
    ],
)
def test_a_bad_config_file_is_named(tmp_path: Path, text: str, message: str) -> None:
    env = config(tmp_path, text)
    with pytest.raises(ClientSettingsError) as raised:
        ClientSettings.load(env)
    assert str(tmp_path / "config.toml") in str(raised.value)
    assert message in str(raised.value)


def test_settings_made_in_code_are_checked_too() -> None:
    with pytest.raises(ClientSettingsError, match="timeout_s"):
        ClientSettings(timeout_s=0)
    assert ClientSettings(url="http://x").with_timeout(600).timeout_s == 600


def gw(*args: str, **environ: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GW_")} | {"COLUMNS": "200", **environ}
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(sorted(m for m in ('pydantic', 'httpx') if m in sys.modules),"
        " file=sys.stderr))\n"
        "from gateway.cli.main import app\n"
        "app()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_gw_says_which_setting_is_bad_without_a_traceback(tmp_path: Path) -> None:
    done = gw("health", GW_TIMEOUT_S="abc", GW_CONFIG=str(tmp_path / "none.toml"))
    assert done.returncode == 2, done.stderr
    assert "gw's settings: GW_TIMEOUT_S='abc'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_command_that_talks_to_the_server_loads_neither_pydantic_nor_httpx(tmp_path: Path) -> None:
    done = gw("health", GW_URL="http://127.0.0.1:1", GW_CONFIG=str(tmp_path / "none.toml"))
    assert done.returncode == 69, done.stderr
    assert "cannot reach the gateway at http://127.0.0.1:1" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[]"
