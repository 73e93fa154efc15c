"""Bad gateway settings are reported by variable and reason, never with the refused value."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from gateway.settings import Settings, settings_problems

SECRET = "hunter2-short"


def test_a_short_metrics_token_is_named_but_never_shown(monkeypatch):
    monkeypatch.setenv("GATEWAY_METRICS_TOKEN", SECRET)
    monkeypatch.setenv("GATEWAY_REFRESH_INTERVAL_S", "-1")
    with pytest.raises(ValidationError) as info:
        Settings()
    assert SECRET in str(info.value)  # pydantic's own text would have shown it
    text = settings_problems(info.value)
    assert SECRET not in text
    assert "metrics_token (GATEWAY_METRICS_TOKEN): the metrics token has 13 characters" in text
    assert "refresh_interval_s (GATEWAY_REFRESH_INTERVAL_S): Input should be greater than 0" in text
    assert len(text.splitlines()) == 2


def test_gw_serve_refuses_bad_settings_without_echoing_them(tmp_path):
    env = {
        **os.environ,
        "GATEWAY_METRICS_TOKEN": SECRET,
        "GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/g.db",
    }
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli.main", "serve", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "GATEWAY_METRICS_TOKEN" in result.stderr and SECRET not in result.stderr + result.stdout
