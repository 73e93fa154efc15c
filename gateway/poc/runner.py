"""All five scenarios in order against one gateway, their evidence, the summary and the clean-up."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.client.api import ApiError, GatewayClient
from gateway.poc import (
    by_cluster,
    cost,
    placement,
    report,
    s1_normal,
    s2_waiting,
    s3_failure,
    s4_regression,
    s5_trace,
)
from gateway.poc.checks import Check, Scenario, StepFailed
from gateway.poc.site import PocSite
from gateway.poc.world import World


@dataclass(frozen=True)
class Plan:
    """One scenario: its steps, and which bundle is its evidence (kind, key and ids it must name)."""

    number: int
    title: str
    steps: Callable[[World, Scenario], None]
    bundle: Callable[[World], tuple[str, str, list[str]]]
    needs: tuple[int, ...] = ()


def _release_key(ref: str) -> str:
    project_name, version = ref.split("@")
    return f"{project_name}/{version}"


PLANS = (
    Plan(
        1,
        "Normal run: dataset version, training, evaluation, release",
        s1_normal.run,
        lambda w: (
            "releases",
            _release_key(w.shared["release"]["ref"]),
            [
                w.shared["strong"]["id"],
                w.shared["strong_result"],
                w.shared["gate"]["id"],
                w.shared["dataset"]["digest"],
            ],
        ),
    ),
    Plan(
        2,
        "Waiting for resources: the project's GPU cap and busy nodes",
        s2_waiting.run,
        lambda w: ("runs", w.shared["cap_run"], [w.shared["cap_run"]]),
    ),
    Plan(
        3,
        "Failure midway: data, environment and code failures; a fixed rerun",
        s3_failure.run,
        lambda w: ("runs", w.shared["fixed"], [w.shared["fixed"], w.shared["failed"]]),
    ),
    Plan(
        4,
        "Eval regression: a worse model, the gate, a refused promotion, an override",
        s4_regression.run,
        lambda w: (
            "releases",
            _release_key(w.shared["weak_release"]["ref"]),
            [w.shared["weak_gate"]["id"], "override"],
        ),
        needs=(1,),
    ),
    Plan(
        5,
        "Trace back from delivery: from the model file to everything",
        s5_trace.run,
        lambda w: (
            "artifacts",
            w.shared["delivered_sha"],
            [w.shared["strong"]["id"], w.shared["release"]["ref"]],
        ),
        needs=(1,),
    ),
)


def _play(world: World, plan: Plan, done: dict[int, Scenario]) -> Scenario:
    """Run one scenario, then fetch its bundle (a failed scenario's too, when it got that far); every
    failure ends up in the record, none escapes."""
    sc = Scenario(plan.number, plan.title)
    missing = [n for n in plan.needs if n not in done]
    if missing:
        sc.error = f"prerequisites: needs scenario {missing}, which was not run (--only)"
    else:
        _guarded(sc, lambda: plan.steps(world, sc))
        _guarded(sc, lambda: sc.clusters.update(placement.run_clusters(world, sc.ids.get("run", []))))
        try:
            kind, key, names = plan.bundle(world)
        except KeyError:
            if sc.error is None:
                sc.error = "evidence bundle: the scenario did not make what its bundle is of"
        else:
            _guarded(sc, lambda: report.save_bundle(world, sc, kind, key, names))
    sc.seconds = time.monotonic() - sc.started
    return sc


def _guarded(sc: Scenario, step: Callable[[], None]) -> None:
    """Run ``step``; a failed check, an API refusal or a missing prerequisite becomes ``sc.error``
    (the first one wins)."""
    try:
        step()
    except StepFailed as exc:
        error = f"{exc.step}: expected {exc.expected}; saw {exc.seen}"
        if not any(c.step == exc.step for c in sc.checks):
            sc.checks.append(Check(exc.step, False, exc.expected, exc.seen))
    except ApiError as exc:
        error = f"the API refused a step ({exc.status} {exc.kind}): {exc.detail}"
    except KeyError as exc:
        error = f"prerequisites: needs {exc} from an earlier scenario, which did not make it"
    except (OSError, ValueError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    else:
        return
    sc.error = sc.error or error


def run_poc(
    client: GatewayClient,
    site: PocSite,
    out: Path,
    *,
    only: set[int] | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Play the scenarios (``only``: those numbers), write the evidence and the summary into ``out``,
    clean up; the summary (its ``passed`` says whether every scenario passed)."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    world = World(client, site, out)
    done: dict[int, Scenario] = {}
    cleanup: list[str] = []
    accounting: dict[str, Any] | None = None
    try:
        world.setup()
        echo(f"project {world.project} made for this run (tag {world.tag})")
        for plan in PLANS:
            if only and plan.number not in only:
                continue
            sc = _play(world, plan, done)
            done[plan.number] = sc
            echo(_line(sc))
        cost.collect(world, list(done.values()))
        accounting = by_cluster.check(world, {c for s in done.values() for c in s.clusters.values()})
        echo(_accounting_lines(accounting))
    except (StepFailed, ApiError) as exc:
        sc = Scenario(0, "setup: the POC's project")
        sc.error = str(exc)
        done[0] = sc
        echo(f"setup FAILED: {exc}")
    finally:
        try:
            cleanup = world.teardown()
        except ApiError as exc:
            cleanup = [f"clean-up failed: {exc}"]
    data = report.summary(world, list(done.values()), cleanup, time.monotonic() - started, accounting)
    as_json, page = report.write(out, data)
    echo(f"{'PASS' if data['passed'] else 'FAIL'}: summary {page} ({as_json})")
    return data


def _line(sc: Scenario) -> str:
    """``scenario N pass|FAIL (s)``, the ids it made, and each failed check on its own line."""
    ids = "; ".join(f"{k} {', '.join(v)}" for k, v in sc.ids.items())
    lines = [
        f"scenario {sc.number} {'pass' if sc.passed else 'FAIL'} ({sc.seconds:.0f} s): {sc.title}",
        f"  ids: {ids}",
    ]
    on: dict[str, list[str]] = {}
    for run_id, cluster in sc.clusters.items():
        on.setdefault(cluster or "the one cluster", []).append(run_id)
    if any(sc.clusters.values()):
        lines.append("  runs on: " + "; ".join(f"{c}: {', '.join(r)}" for c, r in sorted(on.items())))
    for check in sc.failed_checks:
        lines.append(f"  FAILED {check.step}: expected {check.expected}; saw {check.seen}")
    if sc.error and not sc.failed_checks:
        lines.append(f"  FAILED {sc.error}")
    return "\n".join(lines)


def _accounting_lines(accounting: dict[str, Any]) -> str:
    """``accounting on C: N records, ... (sacct -M C: ...) pass|FAIL``, one line per cluster."""
    lines = [f"accounting per cluster ({accounting['period']}, account {accounting['account']}):"]
    for entry in accounting["clusters"]:
        g, hand = entry["gateway"], entry["sacct"]
        theirs = (
            f"sacct -M {entry['cluster']}: {hand['records']} records, {hand['cpu_hours']:.4f} CPU-h, "
            f"{hand['gpu_hours']:.4f} GPU-h"
            if hand
            else entry["why"]
        )
        lines.append(
            f"  {entry['cluster']}: gateway {g['records']} records, {float(g['cpu_hours'] or 0):.4f} CPU-h, "
            f"{float(g['gpu_hours'] or 0):.4f} GPU-h; {theirs}"
        )
    for check in accounting["checks"]:
        if not check["ok"]:
            lines.append(f"  FAILED {check['step']}: expected {check['expected']}; saw {check['seen']}")
    return "\n".join(lines)
