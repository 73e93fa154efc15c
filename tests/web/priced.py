"""What the web cost tests share: the example rate table applied to a test site, runs waited to
their end, and accounting ingested until every run's cost is priced (all bounded in time)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tests.service.conftest import SITE
from tests.service.gw_serve import GW, Serve
from tests.web.conftest import REPO

T = TypeVar("T")
ENDED = ("succeeded", "failed", "cancelled")


def wait_until(what: str, check: Callable[[], T | None], timeout_s: float) -> T:
    """``check()`` every 2 s until it returns something true; that value (AssertionError past
    ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out after {timeout_s:g} s waiting for {what}"
        time.sleep(2)


def apply_rates(serve: Serve, directory: Path) -> None:
    """The test site again, with the example rate table (accounting/rates.example.yaml) as its
    accounting section, applied with ``gw admin apply``."""
    site = directory / "site-rates.yaml"
    rates = (REPO / "accounting" / "rates.example.yaml").read_text()
    site.write_text(SITE.format(account=serve.account) + rates)
    applied = subprocess.run(
        [*GW, "admin", "apply", str(site)], env=serve.env, capture_output=True, text=True
    )
    assert applied.returncode == 0, applied.stderr


def ended(client, run_id: str) -> str | None:
    """The run's state once it has ended; None before."""
    state = client.get(f"/runs/{run_id}").json()["state"]
    return state if state in ENDED else None


def priced_costs(admin, client, since: str, run_ids: dict[str, str], timeout_s: float = 120) -> dict:
    """Ingest accounting since ``since`` (as ``admin``) until every run's cost (read as ``client``) is
    priced and its last attempt's record has ended; the costs by the same keys as ``run_ids``."""

    def ingested() -> dict | None:
        assert admin.post("/admin/accounting/ingest", json={"since": since}).status_code == 200
        costs = {key: client.get(f"/runs/{run_id}/cost").json() for key, run_id in run_ids.items()}
        done = all(
            c["priced"] and c["attempts"] and c["attempts"][-1]["state"] != "RUNNING" for c in costs.values()
        )
        return costs if done else None

    return wait_until("the runs' accounting records, ended and priced", ingested, timeout_s)
