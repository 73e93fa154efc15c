"""Waiting for a run to end: ``gw wait``, ``gw submit --wait`` and ``gw sbatch --wait``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from gateway.cli import common, exits
from gateway.cli.output import err_console, state_text
from gateway.client.errors import ApiError

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient

TERMINAL = {
    "succeeded",
    "failed",
    "cancelled",
    "timed_out",
    "out_of_memory",
    "node_failed",
    "preempted",
    "never_submitted",
}


def wait_for(
    client: GatewayClient, run_id: str, *, timeout_s: float | None, poll_s: float, quiet: bool
) -> int:
    """Poll the run until it ends; its exit status (``exits.for_end_state``), or WAIT_TIMEOUT."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    last = None
    while True:
        try:
            run: dict[str, Any] = client.run(run_id)
        except ApiError as exc:
            if exc.status in (0, 502, 503):  # the server restarts or Slurm is slow: keep waiting
                time.sleep(poll_s)
                continue
            common.fail(exc)
        if run["state"] != last and not quiet:
            err_console.print(f"run {run_id}: {state_text(run['state'])}")
            last = run["state"]
        if run["state"] in TERMINAL:
            return exits.for_end_state(run["state"])
        if deadline is not None and time.monotonic() > deadline:
            err_console.print(f"run {run_id} is still {run['state']} after {timeout_s:g} s")
            return exits.WAIT_TIMEOUT
        time.sleep(poll_s)
