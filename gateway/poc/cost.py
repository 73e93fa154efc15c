"""The cost steps: ``POST /admin/accounting/ingest``, then ``GET /runs/{id}/cost`` of a run.

The contract (docs/poc.md): the answer is ``{run_id, currency, total,
failed_total, attempts: [{attempt, job_id, state, elapsed_s, gpu_hours,
cpu_hours, cost, rate_version, failed, cancelled}], priced, note, cancelled_total}`` (``state`` is
Slurm's, ``failed`` whether the record failed, ``cancelled`` whether someone cancelled it: a
cancellation is counted apart from failures). A gateway without accounting
answers 404 for the route: the step then fails, saying so; the POC goes on.
"""

from __future__ import annotations

from typing import Any

from gateway.client.api import ApiError
from gateway.poc.checks import Scenario
from gateway.poc.world import World

COST_PATH = "GET /runs/{id}/cost"


def _missing_route(exc: ApiError) -> bool:
    """A 404 for the route itself (the framework's bare "Not Found"), not the gateway's own answer that
    names a missing run."""
    return exc.status == 404 and str(exc.detail).strip() == "Not Found"


def ingest(world: World, sc: Scenario, step: str) -> bool:
    """Ask the gateway to read Slurm's accounting now; False (and a failed cost check) when it cannot."""
    try:
        world.call("POST", "/admin/accounting/ingest", body={})
    except ApiError as exc:
        seen = (
            "cost: not available on this gateway (POST /admin/accounting/ingest answered 404)"
            if _missing_route(exc)
            else f"{exc.status} {exc.kind}: {exc.detail}"
        )
        sc.check(step, False, "the accounting ingested", seen, fatal=False, kind="cost")
        return False
    return True


def run_cost(world: World, sc: Scenario, run_id: str, step: str, *, failed: bool) -> dict[str, Any] | None:
    """Check the run's cost answer against the run: every attempt by its job id, priced, the failed
    attempts' cost summed in ``failed_total`` (``failed``: the run has failed attempts). The answer, or
    None when the step failed."""
    ingest(
        world, sc, f"{step}: ingest"
    )  # a failed ingest is its own check; the cost is asked for all the same
    try:
        cost = world.call("GET", f"/runs/{run_id}/cost")
    except ApiError as exc:
        seen = (
            "cost: not available on this gateway (GET /runs/{id}/cost answered 404)"
            if _missing_route(exc)
            else f"{exc.status} {exc.kind}: {exc.detail}"
        )
        sc.check(step, False, f"{COST_PATH} of {run_id}", seen, fatal=False, kind="cost")
        return None
    run = world.run(run_id)
    jobs = {a["job_id"] for a in run["attempts"] if a["job_id"]}
    listed = {a.get("job_id") for a in cost.get("attempts", [])}
    ok = cost.get("run_id") == run_id and jobs <= listed
    sc.check(
        step,
        ok,
        f"a cost for run {run_id} listing attempts {sorted(jobs)}",
        _brief(cost),
        fatal=False,
        kind="cost",
    )
    if world.site.cost.require_priced:
        sc.check(
            f"{step}: priced",
            bool(cost.get("priced")),
            "priced: true (a rate for every attempt)",
            cost.get("note"),
            fatal=False,
            kind="cost",
        )
    if world.site.cost.currency:
        sc.check(
            f"{step}: currency",
            cost.get("currency") == world.site.cost.currency,
            world.site.cost.currency,
            cost.get("currency"),
            fatal=False,
            kind="cost",
        )
    if failed:
        costs = [a.get("cost") or 0 for a in cost.get("attempts", []) if _failed(a)]
        shown = cost.get("failed_total")
        sc.check(
            f"{step}: cost of the failed attempts",
            bool(costs) and shown is not None and abs(shown - sum(costs)) < 1e-9,
            "failed_total, the sum of the failed attempts' cost",
            _brief(cost),
            fatal=False,
            kind="cost",
        )
    cancelled = [a.get("cost") or 0 for a in cost.get("attempts", []) if _cancelled(a)]
    if cancelled:
        shown = cost.get("cancelled_total")
        sc.check(
            f"{step}: cost of the cancelled attempts, apart from failures",
            shown is not None and abs(shown - sum(cancelled)) < 1e-9,
            "cancelled_total, the sum of the cancelled attempts' cost (not in failed_total)",
            _brief(cost),
            fatal=False,
            kind="cost",
        )
    return cost


def _failed(record: dict[str, Any]) -> bool:
    """A record that failed: its ``failed`` flag, else its Slurm state other than COMPLETED and
    CANCELLED (a cancellation is its own outcome)."""
    if "failed" in record:
        return bool(record["failed"])
    state = str(record.get("state", "")).upper()
    return state not in ("COMPLETED", "SUCCEEDED") and not state.startswith("CANCELLED")


def _cancelled(record: dict[str, Any]) -> bool:
    """A record someone cancelled: its ``cancelled`` flag, else its Slurm state CANCELLED."""
    if "cancelled" in record:
        return bool(record["cancelled"])
    return str(record.get("state", "")).upper().startswith("CANCELLED")


def _brief(cost: dict[str, Any]) -> str:
    keys = ("run_id", "currency", "total", "failed_total", "cancelled_total", "priced")
    attempts = [
        (a.get("attempt"), a.get("job_id"), a.get("state"), a.get("cost")) for a in cost.get("attempts", [])
    ]
    return repr({**{k: cost.get(k) for k in keys}, "attempts": attempts})
