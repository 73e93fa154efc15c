"""Which gate decision a protected alias counts (issue 27, items 1, 2 and 6), on the real cluster.

The attacks of the issue, each against the real service stack on both databases: a lenient suite
version registered by a member and gated by them; a gate with no baseline, and one against a weak
baseline of the gater's choosing, both passing while the candidate regressed against the release
the alias points at; a self-review counted by a gate. The eval results are real lm-eval runs in
Slurm jobs on the eval world's two trained models (strong, weak), on a suite of this module's own,
so the reviews and gates written here touch no other module's records.
"""

from __future__ import annotations

import json
import time

import pytest

from gateway.errors import Conflict, Forbidden, SpecError
from gateway.services.eval.runs import ArtifactChoice
from tests.service.conftest import PROJECT, unique_tag
from tests.service.eval_world import cycle, settle, suite_data

pytestmark = pytest.mark.slurm


def lenient(data: dict) -> dict:
    """The same suite with a gate anything passes: no threshold to speak of, no regression rule, no review."""
    out = json.loads(json.dumps(data))
    out["gate"] = {"thresholds": [{"task": "*", "rule": "acc >= 0.0"}], "reviews_required": 0}
    return out


@pytest.fixture(scope="module")
def policy_world(services, principal, eval_world):
    """Suite gp-TAG: v1 as the example (but acc >= 0.1), McNemar regression rule, one approving review,
    registered by the lead; v2 a lenient one registered by the member mia (the lead let members add
    versions for it, then took that back). Results: v1 on the strong and the weak model (the lead's
    eval runs), v2 on the weak one (mia's)."""
    tag = unique_tag()
    who = {u: services.access.principal(u, source="pytest") for u in ("mia", "rita", "fuzzer", "watcher")}
    strict = suite_data(eval_world.dataset, f"gp-{tag}")
    # a low bar that the weak model clears too: what must stop it is the regression rule
    strict["gate"]["thresholds"] = [{"task": "*", "rule": "acc >= 0.1"}]
    v1 = services.eval_suites.register(strict, principal=principal)[0]
    services.eval_suites.set_settings(PROJECT, v1.name, principal=principal, versions_by="member")
    v2 = services.eval_suites.register(lenient(strict), principal=who["mia"])[0]
    services.eval_suites.set_settings(PROJECT, v1.name, principal=principal, versions_by="lead")
    plan = {
        "strong": (v1, "strong", principal),
        "weak": (v1, "weak", principal),
        "weak-lenient": (v2, "weak", who["mia"]),
    }
    started = {
        label: services.evals.start(
            version.ref, ArtifactChoice(sha256=eval_world.artifacts[model]), principal=by
        ).eval_run
        for label, (version, model, by) in plan.items()
    }
    settle(services, [e.run_id for e in started.values()], cycles=True)
    deadline = time.monotonic() + 120
    while True:
        found = {label: services.evals.store.eval_run(e.id) for label, e in started.items()}
        if all(e.status != "pending" for e in found.values()):
            break
        assert time.monotonic() < deadline, {k: e.status for k, e in found.items()}
        cycle(services)
        time.sleep(0.5)
    assert all(e.status == "ingested" for e in found.values()), {
        k: (e.status, e.note) for k, e in found.items()
    }
    return {
        "tag": tag,
        "who": who,
        "strict": strict,
        "v1": v1,
        "v2": v2,
        "results": {label: e.result_id for label, e in found.items()},
    }


def gateway_gates(services, result_id: str) -> list:
    return [g for g in services.gates.gates.gates_of([result_id]) if g.made_for is not None]


def test_new_versions_need_the_suites_role_and_its_owner_decides(services, principal, policy_world):
    world = policy_world
    mia, watcher = world["who"]["mia"], world["who"]["watcher"]
    assert world["v2"].number == 2 and world["v2"].registered_by == "mia"
    another = lenient(world["strict"]) | {"description": "yet another"}
    with pytest.raises(Forbidden, match=r"needs the role lead .*--versions-by member"):
        services.eval_suites.register(another, principal=mia)
    # the same content again is no new version: answered with the existing one, whoever asks
    again, created = services.eval_suites.register(world["strict"], principal=mia)
    assert not created and again.id == world["v1"].id
    with pytest.raises(Forbidden):
        services.eval_suites.set_settings(PROJECT, world["v1"].name, principal=mia, versions_by="member")
    with pytest.raises(SpecError, match="versions_by"):
        services.eval_suites.set_settings(
            PROJECT, world["v1"].name, principal=principal, versions_by="anyone"
        )
    suite, _ = services.eval_suites.get(PROJECT, world["v1"].name, principal=watcher)
    assert suite.versions_by == "lead" and suite.count_self_reviews is False
    changes = services.audit.events(principal, project=PROJECT, action="eval.suite.settings").items
    assert [e.after["versions_by"] for e in changes if e.target_id == suite.id][-2:] == ["member", "lead"]


def test_a_self_review_does_not_count_unless_the_suite_says_so(services, principal, policy_world):
    world = policy_world
    rita = world["who"]["rita"]
    strong = world["results"]["strong"]
    # Training is deterministic: this artifact may be the shared eval world's strong one, which other
    # files review (of the artifact too); each earlier approver's newest review is made a non-approval.
    for earlier in services.reviews.approving(services.gates.result(strong, principal=principal)):
        who = services.access.principal(earlier.reviewer, source="pytest")
        services.reviews.record(strong, verdict="needs-work", principal=who, notes="reset for this test")
    own = services.reviews.record(strong, verdict="approve", principal=principal, notes="mine, looks fine")
    alone = services.gates.gate(strong, principal=principal)
    # the lead submitted the training run and the eval run: their approval is not a review of the result
    assert alone.verdict == "fail" and alone.review_ids == ()
    (left_out,) = alone.reviews_not_counted
    assert left_out["id"] == own.id and left_out["reviewer"] == "tester" and "submitted" in left_out["why"]
    assert alone.decision["approving_reviews"] == 0
    services.eval_suites.set_settings(PROJECT, world["v1"].name, principal=principal, count_self_reviews=True)
    try:
        counted = services.gates.gate(strong, principal=principal)
        assert counted.review_ids == (own.id,) and counted.reviews_not_counted == ()
    finally:
        services.eval_suites.set_settings(
            PROJECT, world["v1"].name, principal=principal, count_self_reviews=False
        )
    other = services.reviews.record(strong, verdict="approve", principal=rita, notes="read 20 endings")
    passed = services.gates.gate(strong, principal=principal)
    assert passed.verdict == "pass" and passed.review_ids == (other.id,)
    assert [r["id"] for r in passed.reviews_not_counted] == [own.id]


def test_a_protected_alias_counts_the_gateways_decision_on_the_policys_terms(
    services, principal, policy_world, eval_world
):
    world = policy_world
    mia, rita, fuzzer = (world["who"][u] for u in ("mia", "rita", "fuzzer"))
    results, v1 = world["results"], world["v1"]
    model = f"gp-{world['tag']}"
    services.releases.register_model(PROJECT, model, principal=principal)
    for flavour in ("strong", "weak"):
        services.releases.create_release(
            PROJECT,
            model,
            eval_world.artifacts[flavour],
            principal=principal,
            run_id=eval_world.training[flavour],
        )
    suite = f"{PROJECT}/{v1.name}"
    policy = services.alias_policies.set_policy(
        PROJECT, model, "prod", principal=principal, roles=["lead"], gate_suite=suite
    )
    # no version named: the suite's newest now is pinned (v2 here, the member's lenient one), so the
    # lead names the version they mean
    assert policy.gate_version == 2 and policy.baseline_alias == "prod"
    policy = services.alias_policies.set_policy(
        PROJECT, model, "prod", principal=principal, roles=["lead"], gate_suite=suite, gate_version=1
    )
    assert policy.gate_version == 1 and policy.as_dict()["gate_version"] == 1
    with pytest.raises(SpecError, match="gate_version"):
        services.alias_policies.set_policy(
            PROJECT, model, "prod", principal=principal, gate_suite=suite, gate_version=9
        )
    with pytest.raises(SpecError, match="gate_baseline"):
        services.alias_policies.set_policy(
            PROJECT, model, "prod", principal=principal, gate_suite=suite, gate_baseline="Not An Alias"
        )

    # the first release: no baseline (prod points at nothing yet); thresholds and reviews decide.
    # fuzzer (a lead) asks for the move and approves the result: the requester's review is not counted
    request = services.promotions.request(PROJECT, model, 1, "prod", principal=fuzzer)
    services.reviews.record(results["strong"], verdict="approve", principal=rita, notes="read 20 endings")
    services.reviews.record(results["strong"], verdict="approve", principal=fuzzer, notes="asked for it")
    first = services.promotions.promote(PROJECT, model, 1, "prod", principal=principal, reason="first cut")
    gate = services.gates.gate_record(first.gate_id, principal=principal)
    assert gate.verdict == "pass" and gate.decided_by == "gateway" and gate.baseline_id is None
    assert gate.baseline_source == "first release" and gate.candidate_id == results["strong"]
    assert gate.made_for["alias"] == "prod" and gate.made_for["release"] == f"{PROJECT}/{model}@1"
    assert gate.made_for["suite_version"] == v1.ref and gate.made_for["baseline_release"] is None
    assert "fuzzer" in {r["reviewer"] for r in gate.reviews_not_counted}
    assert any("requested the promotion" in r["why"] for r in gate.reviews_not_counted)
    assert first.request_id == request.id
    moved = services.audit.events(principal, project=PROJECT, action="alias.move").items[-1]
    assert moved.target_id == first.id and moved.after["gate"] == first.gate_id
    assert moved.after["gate_made_for"]["baseline_alias"] == "prod"

    # the attacks: the weak model (it regressed against prod's release) gated by a member with no
    # baseline, against itself as a weak baseline of their choosing, and on their lenient version
    services.reviews.record(results["weak"], verdict="approve", principal=rita, notes="reads fine")
    no_baseline = services.gates.gate(results["weak"], principal=mia)
    assert no_baseline.verdict == "pass" and no_baseline.baseline_id is None
    weak_baseline = services.gates.gate(results["weak"], principal=mia, baseline_id=results["weak"])
    assert weak_baseline.verdict == "pass"
    on_lenient = services.gates.gate(results["weak-lenient"], principal=mia)
    assert on_lenient.verdict == "pass" and on_lenient.made_for is None
    with pytest.raises(Conflict) as refused:
        services.promotions.promote(PROJECT, model, 2, "prod", principal=principal, reason="the newest")
    text = str(refused.value)
    assert f"on {v1.ref} against {PROJECT}/{model}@1 (prod now) is fail" in text, text
    assert "--override --reason" in text
    (decided,) = gateway_gates(services, results["weak"])
    assert decided.baseline_id == results["strong"] and decided.baseline_source == "alias prod"
    assert decided.made_for["baseline_release"] == f"{PROJECT}/{model}@1"
    assert any("regress" in c["reason"] for c in decided.decision["comparisons"] if not c["passed"])
    # asking again decides again on the same terms: the same decision, not a second record
    with pytest.raises(Conflict):
        services.promotions.promote(PROJECT, model, 2, "prod", principal=principal)
    assert [g.id for g in gateway_gates(services, results["weak"])] == [decided.id]
    # a policy on "latest" would take the member's lenient version: whoever may add versions is the
    # suite's setting, leads by default, so v2 stands only because its owner allowed it for a while
    latest = services.alias_policies.set_policy(
        PROJECT, model, "canary", principal=principal, gate_suite=suite, gate_version="latest"
    )
    assert latest.gate_version is None and latest.as_dict()["gate_version"] == "latest"

    # an override stands in for the gateway's failed decision, which the move and its events name
    override = services.promotions.promote(
        PROJECT, model, 2, "prod", principal=principal, override=True, reason="accepted regression"
    )
    assert override.override and override.gate_id == decided.id
    event = services.audit.events(principal, project=PROJECT, action="release.override").items[-1]
    assert event.after["gate"] == decided.id and event.after["gate_verdict"] == "fail"

    # the evidence shows who reviewed: the reviews the gates counted are in the bundle
    bundle = services.evidence.bundle(f"{PROJECT}/{model}@1", principal=principal, redacted=True)
    doc = json.loads(bundle.files["evidence.json"])
    reviewed = {r["id"] for r in doc["evaluations"]["reviews"]}
    assert set(gate.review_ids) <= reviewed and gate.review_ids
    assert all(r["id"] in bundle.files["index.html"].decode() for r in doc["evaluations"]["reviews"])


def test_a_baseline_alias_that_points_at_nothing_is_no_baseline_only_for_the_first_release(
    services, principal, policy_world, eval_world
):
    # The policy's gate_baseline names another alias (staging) that nobody has moved yet: prod's first
    # release has no baseline; a later prod move must not be "no baseline" too, or the weak model (it
    # regressed against prod's release) would pass on thresholds and reviews alone.
    world = policy_world
    rita = world["who"]["rita"]
    results, v1 = world["results"], world["v1"]
    model = f"gp-{world['tag']}-staged"
    services.releases.register_model(PROJECT, model, principal=principal)
    for flavour in ("strong", "weak"):
        services.releases.create_release(
            PROJECT, model, eval_world.artifacts[flavour], principal=principal,
            run_id=eval_world.training[flavour],
        )  # fmt: skip
    for label in ("strong", "weak"):
        services.reviews.record(results[label], verdict="approve", principal=rita, notes="read 20 endings")
    services.alias_policies.set_policy(
        PROJECT, model, "prod", principal=principal, gate_suite=f"{PROJECT}/{v1.name}", gate_version=1,
        gate_baseline="staging",
    )  # fmt: skip
    first = services.promotions.promote(PROJECT, model, 1, "prod", principal=principal, reason="first")
    gate = services.gates.gate_record(first.gate_id, principal=principal)
    assert gate.verdict == "pass" and gate.baseline_id is None and gate.baseline_source == "first release"

    with pytest.raises(Conflict) as refused:
        services.promotions.promote(PROJECT, model, 2, "prod", principal=principal, reason="the newest")
    text = str(refused.value)
    assert f"baseline alias staging points at nothing, while prod points at {PROJECT}/{model}@1" in text, text
    assert "no baseline is only for the first release" in text and "--gate-baseline" in text
    preview = services.promotions.preview(PROJECT, model, 2, "prod", principal=principal)
    assert preview.gate_id is None and "staging points at nothing" in preview.gate_detail
    assert preview.gate_failed and preview.may_override  # a missing gate: a lead may override it

    # staging (no policy of its own) moved to prod's release: the gate compares with it, and fails
    services.promotions.promote(PROJECT, model, 1, "staging", principal=principal)
    with pytest.raises(Conflict, match=rf"against {PROJECT}/{model}@1 \(staging now\) is fail"):
        services.promotions.promote(PROJECT, model, 2, "prod", principal=principal)
    decided = [g for g in gateway_gates(services, results["weak"]) if g.made_for["model"].endswith(model)]
    (against,) = decided
    assert against.baseline_id == results["strong"] and against.baseline_source == "alias staging"
