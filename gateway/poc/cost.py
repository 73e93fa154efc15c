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
from gateway.poc.words import money
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
        f"a cost for run {run_id} listing its attempts' jobs {', '.join(sorted(jobs))}",
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
    sc.costs.append(
        {
            "run_id": run_id,
            "step": step,
            "total": cost.get("total"),
            "failed_total": cost.get("failed_total"),
            "currency": cost.get("currency"),
        }
    )
    if failed:
        _failed_attempts(sc, step, cost)
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


def _failed_attempts(sc: Scenario, step: str, cost: dict[str, Any]) -> None:
    """The failed attempts' cost is on record: ``failed_total`` is their sum, and each attempt that ran
    (Slurm accounted seconds for it) costs more than nothing. An attempt that failed in its first second
    (sacct's Elapsed 0) costs nothing: the check says so, and compares that zero with its 0 s."""
    records = [a for a in cost.get("attempts", []) if _failed(a)]
    shown = cost.get("failed_total")
    summed = sum(a.get("cost") or 0 for a in records)
    ran = [a for a in records if (a.get("elapsed_s") or 0) > 0]
    priced_right = all((a.get("cost") or 0) > 0 for a in ran) and all(
        (a.get("cost") or 0) == 0 for a in records if a not in ran
    )
    currency = cost.get("currency")
    seen = (
        "; ".join(
            f"attempt {a.get('attempt')} (job {a.get('job_id')}, {a.get('state')}): {a.get('elapsed_s')} s, "
            f"{money(a.get('cost'), currency)}"
            for a in records
        )
        or "no failed attempt in the cost answer"
    )
    sc.check(
        f"{step}: cost of the failed attempts",
        bool(records) and shown is not None and abs(shown - summed) < 1e-9 and priced_right,
        "failed_total the sum of the failed attempts' cost; more than 0 for each attempt that ran",
        f"failed_total {money(shown, currency)}; {seen}",
        fatal=False,
        kind="cost",
    )


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
    """The cost answer in words: the total, what failed cost, and each attempt by its job."""
    currency = cost.get("currency")
    attempts = "; ".join(
        f"attempt {a.get('attempt')} job {a.get('job_id')} {a.get('state')} {money(a.get('cost'), currency)}"
        for a in cost.get("attempts", [])
    )
    priced = "priced" if cost.get("priced") else "not priced"
    return (
        f"run {cost.get('run_id')}: total {money(cost.get('total'), currency)}, failed attempts "
        f"{money(cost.get('failed_total'), currency)}, cancelled attempts "
        f"{money(cost.get('cancelled_total'), currency)}, {priced}; {attempts or 'no attempt'}"
    )


def collect(world: World, scenarios: list[Scenario]) -> None:
    """Each scenario's cost: every run it made that no cost step priced yet, asked for once all have ended
    (one ingest first), added to its ``costs`` with no check of its own (the cost steps are the checks).
    A run without a priced record yet is left out; a gateway without the routes adds nothing."""
    try:
        world.call("POST", "/admin/accounting/ingest", body={})
    except ApiError:
        return
    for sc in scenarios:
        priced = {c["run_id"] for c in sc.costs}
        for run_id in sc.ids.get("run", []):
            if run_id in priced:
                continue
            try:
                answer = world.call("GET", f"/runs/{run_id}/cost")
            except ApiError:
                return
            if not answer.get("attempts"):
                continue
            sc.costs.append(
                {
                    "run_id": run_id,
                    "step": "the run's cost (after the scenarios)",
                    "total": answer.get("total"),
                    "failed_total": answer.get("failed_total"),
                    "cancelled_total": answer.get("cancelled_total"),
                    "currency": answer.get("currency"),
                }
            )
