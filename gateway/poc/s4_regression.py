"""Scenario 4, an eval regression: a second, worse model on the same suite version; its gate against
the released model finds the regression with its statistics; promotion is refused; an override needs a
reason and then shows in the alias history and the release record."""

from __future__ import annotations

from typing import Any

from gateway.client.api import ApiError
from gateway.poc import s1_normal
from gateway.poc.checks import Scenario
from gateway.poc.words import say
from gateway.poc.world import World

WEAK = "--order 2 --epochs 1"
REASON = "gw poc: known regression, accepted to show the override"


def _refused(world: World, path: str, body: dict[str, Any]) -> ApiError | None:
    """The API error a call answers with, or None when it was accepted."""
    try:
        world.call("POST", path, body=body)
    except ApiError as exc:
        return exc
    return None


def _statistics(gate: dict[str, Any]) -> list[dict[str, Any]]:
    """The gate's paired comparisons that found a regression, each with its test's numbers."""
    return [
        c
        for c in gate["decision"].get("comparisons", [])
        if c.get("regression")
        and (c.get("test") or {}).get("p_value") is not None
        and (c.get("test") or {}).get("n")
    ]


def run(world: World, sc: Scenario) -> None:
    """Needs scenario 1's suite, model and result (``world.shared``)."""
    shared = world.shared
    suite = shared["suite"]
    weak = s1_normal.train(world, sc, "train-weak", WEAK, "text")
    evaluated = s1_normal.evaluate(world, sc, suite["ref"], weak["id"], "weak")
    result = evaluated["result_id"]
    sc.check(
        "same suite version",
        evaluated["suite_version_id"] == suite["id"],
        f"suite version {suite['ref']}",
        evaluated["suite_ref"],
    )
    world.call("POST", "/eval/reviews", body={"target": result, "verdict": "approve", "notes": "gw poc"})
    gate = world.call("POST", f"/eval/results/{result}/gate", body={"baseline": shared["strong_result"]})
    sc.made("gate", gate["id"])
    shared.update(weak=weak, weak_gate=gate, weak_result=result)
    sc.check(
        "gate: baseline is the released model's result",
        gate["baseline_id"] == shared["strong_result"],
        shared["strong_result"],
        gate["baseline_id"],
    )
    sc.did(
        f"Trained a weaker model ({weak['id']}, `{WEAK}`), evaluated it with the same suite version "
        f"(result {result}) and gated it against scenario 1's released result {shared['strong_result']}."
    )
    sc.check(
        "gate: finds the regression",
        gate["verdict"] == "fail",
        "verdict fail",
        f"verdict {gate['verdict']}: " + ("; ".join(gate["decision"].get("reasons", [])) or "no reason"),
    )
    found = _statistics(gate)
    sc.check(
        "gate: with statistics",
        bool(found),
        "a paired comparison with its method, p-value and sample count that marks a regression",
        "; ".join(_stat_words(c) for c in gate["decision"].get("comparisons", [])) or "no comparison",
    )
    sc.showed(
        f"the regression's statistics (gate {gate['id']}, {gate['verdict']})",
        "; ".join(_stat_words(c) for c in gate["decision"].get("comparisons", [])),
    )
    _traceable(world, sc, result)
    _release_refused_then_overridden(world, sc, weak, gate)


def _stat_words(c: dict[str, Any]) -> str:
    """One paired comparison in words: task, means, change with its interval, test, p, verdict."""
    t = c.get("test") or {}
    if t.get("delta") is None:
        return f"{c.get('task')}: not tested ({c.get('reason')})"
    return (
        f"{c.get('task')} {c.get('metric')} {t.get('baseline_mean'):.4g} -> {t.get('candidate_mean'):.4g}, "
        f"change {t['delta']:+.4g} [{t.get('ci_low'):+.4g}, {t.get('ci_high'):+.4g}], {t.get('method')} "
        f"n={t.get('n')} p={t.get('p_value'):.3g} (adjusted {c.get('p_adjusted'):.3g}), "
        f"{'regression' if c.get('regression') else 'no regression'}"
    )


def _detail(detail: Any) -> str:
    """An API error's detail in words: validation errors as ``field: message``."""
    if isinstance(detail, list):
        return "; ".join(
            f"{'.'.join(str(p) for p in d.get('loc', []) if p != 'body')}: {d.get('msg')}"
            if isinstance(d, dict)
            else str(d)
            for d in detail
        )
    return say(detail)


def _traceable(world: World, sc: Scenario, result: str) -> None:
    """The two results' per-task comparison (their configuration and numbers side by side)."""
    compared = world.call("GET", f"/eval/compare/{result}/{world.shared['strong_result']}")
    sc.check(
        "configuration and results traceable",
        bool(compared.get("rows") or compared.get("tasks")),
        "a per-task comparison",
        f"{len(compared.get('rows') or compared.get('tasks') or [])} task row(s) comparing "
        f"{compared.get('a')} ({compared.get('a_suite_version')}) with {compared.get('b')} "
        f"({compared.get('b_suite_version')}), verdict {compared.get('verdict')}",
    )


def _release_refused_then_overridden(world: World, sc: Scenario, weak: dict[str, Any], gate: dict) -> None:
    """Release the weak model; promotion refused, an override without a reason refused, one with it on
    record in the history and on the release."""
    model = world.shared["model"]
    release = world.call(
        "POST",
        f"/models/{model}/releases",
        body={"artifact_sha256": weak["sha256"], "run_id": weak["id"], "notes": "gw poc scenario 4"},
    )
    sc.made("release", release["ref"])
    path = f"/models/{model}/aliases/staging"
    refused = _refused(world, path, {"version": release["version"], "reason": "try"})
    sc.check(
        "promotion refused",
        refused is not None and refused.status in (403, 409, 422),
        "a refusal naming the failed gate",
        f"{refused.status} {say(refused.detail)}" if refused else "accepted",
    )
    assert refused is not None  # the fatal check above raised otherwise
    sc.showed("the refused promotion, in the gateway's words", f"{refused.status}: {say(refused.detail)}")
    sc.check(
        "refusal names the gate",
        "gate" in str(refused.detail),
        "the word gate in the refusal",
        str(refused.detail),
    )
    bare = _refused(world, path, {"version": release["version"], "override": True})
    sc.check(
        "override needs a reason",
        bare is not None and bare.status == 422,
        "422 for an override without a reason",
        f"{bare.status} {_detail(bare.detail)}" if bare else "accepted",
    )
    moved = world.call("POST", path, body={"version": release["version"], "override": True, "reason": REASON})
    # the gate that counted: the gateway's own, the weak result against staging's release (the strong one)
    counted = world.call("GET", f"/eval/gates/{moved.get('gate_id')}") if moved.get("gate_id") else {}
    sc.check(
        "override on record",
        moved.get("override") is True
        and counted.get("verdict") == "fail"
        and counted.get("candidate_id") == gate["candidate_id"]
        and counted.get("baseline_id") == gate["baseline_id"],
        f"override true, the gateway's failed gate of {gate['candidate_id']} against {gate['baseline_id']}",
        f"override {say(moved.get('override'))}, gate {moved.get('gate_id')} {counted.get('verdict')} of "
        f"{counted.get('candidate_id')} against {counted.get('baseline_id')}; reason: {moved.get('reason')}",
    )
    sc.did(
        f"Released it as {release['ref']}; moving staging to it was refused, an override without a reason "
        "was refused, and an override with a reason moved staging."
    )
    history = world.call("GET", f"/models/{model}/history", params={"alias": "staging"})
    sc.check(
        "override shows in the alias history",
        REASON in repr(history),
        "the reason in the history",
        "; ".join(
            f"#{e.get('seq')} v{e.get('from_version')} -> v{e.get('to_version')}"
            + (f" OVERRIDE ({e.get('reason')})" if e.get("override") else "")
            for e in history.get("events", [])
        )
        or "no move",
    )
    detail = world.call("GET", f"/models/{model}/releases/{release['version']}")
    sc.check(
        "override shows on the release",
        detail.get("overridden") is True,
        "overridden true",
        detail.get("overridden"),
    )
    world.shared["weak_release"] = release
