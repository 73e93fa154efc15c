"""The hand-off's pure parts: MLflow tags from a release snapshot, drift, run params and metrics,
the back-off, and the settings' refusals."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.core.handoff.mirror import (
    RELEASE_TAG,
    TAG_VALUE_MAX,
    ObservedModel,
    ObservedVersion,
    ReleaseLinks,
    drift,
    registered_model_name,
    release_tags,
    run_metrics,
    run_params,
)
from gateway.core.handoff.webhooks import backoff_s, event_body
from gateway.settings import Settings, settings_problems

SNAPSHOT = {
    "run": {
        "id": "r-1",
        "attempts": [{"job_id": "101"}, {"job_id": None}, {"job_id": "103"}],
        "datasets": [
            {"version": {"dataset": "demo/corpus", "version": 2, "digest": "d" * 64}},
            {"version": None},
        ],
        "code": {"commit": "abc"},
    },
    "evaluations": {
        "eval_runs": [{"result": {"id": "er-1", "suite_version": "demo/qa@1"}}, {"result": None}],
        "gates": [{"id": "gd-1", "verdict": "pass"}],
    },
}


def test_release_tags_carry_the_gateways_ids_and_fit_mlflows_limit():
    tags = release_tags(
        release_id="rl-1",
        ref="demo/m@1",
        sha256="a" * 64,
        snapshot=SNAPSHOT | {"run": SNAPSHOT["run"] | {"code": {"diff": "x" * 9000}}},
        links=ReleaseLinks(evidence="https://gw/evidence/releases/demo/m/1"),
        approvals=["rob", "ann"],
        gate={"gate_id": "gd-2"},
    )
    assert tags[RELEASE_TAG] == "rl-1" and tags["gateway.run_id"] == "r-1"
    assert tags["gateway.slurm_job_ids"] == "101,103"
    assert tags["gateway.datasets"] == f'["demo/corpus@2:{"d" * 64}"]'
    assert '"er-1"' in tags["gateway.eval_results"] and '"pass"' in tags["gateway.gates"]
    assert tags["gateway.approvals"] == "rob,ann" and "gd-2" in tags["gateway.gate_decision"]
    assert all(isinstance(v, str) and len(v) <= TAG_VALUE_MAX for v in tags.values())
    assert len(tags["gateway.code"]) == TAG_VALUE_MAX and tags["gateway.code"].endswith("…")
    assert registered_model_name("demo", "tiny-lm") == "demo.tiny-lm"


def test_drift_names_each_difference_and_ignores_unmirrored_aliases():
    observed = ObservedModel(
        "demo.m",
        aliases={"prod": "2", "scratch": "1"},
        versions=[ObservedVersion("1", {RELEASE_TAG: "rl-1"}), ObservedVersion("2", {RELEASE_TAG: "rl-x"})],
    )
    found = drift(
        observed,
        expected_aliases={"prod": "rl-1", "candidate": "rl-1"},
        expected_versions={"rl-1": "1", "rl-2": "2", "rl-3": "3"},
    )
    assert found == [
        "version 2's tag gateway.release_id is 'rl-x' in MLflow, the gateway mirrored it as 'rl-2'",
        "version 3 (release rl-3) was deleted in MLflow",
        "alias candidate points at nothing in MLflow; the gateway says version 1 (release rl-1)",
        "alias prod points at version 2 (release rl-2) in MLflow; the gateway says version 1 (release rl-1)",
    ]
    in_step = drift(
        ObservedModel("demo.m", {"prod": "1"}, [ObservedVersion("1", {RELEASE_TAG: "rl-1"})]),
        expected_aliases={"prod": "rl-1"},
        expected_versions={"rl-1": "1"},
    )
    assert in_step == []
    assert drift(None, expected_aliases={}, expected_versions={}) == []
    assert drift(None, expected_aliases={}, expected_versions={"rl-1": "1"}) == [
        "the registered model is missing in MLflow (1 versions mirrored)"
    ]


def test_run_params_flatten_and_metrics_are_stable_points():
    assert run_params({"lr": 0.1, "optim": {"name": "adamw", "betas": [0.9, 0.95]}, "tag": "x"}) == {
        "lr": "0.1",
        "optim.betas": "[0.9, 0.95]",
        "optim.name": "adamw",
        "tag": "x",
    }
    points = run_metrics({"acc": 0.5, "loss": 0.1}, {"loss": [(1, 2.0), (None, 1.0)]}, ended_ms=7)
    assert [(p.key, p.value, p.step, p.timestamp_ms) for p in points] == [
        ("loss", 2.0, 1, 7),
        ("loss", 1.0, 0, 7),
        ("acc", 0.5, 0, 7),
    ]  # the summary "loss" is not logged again beside its series


def test_backoff_doubles_up_to_its_cap_and_bodies_are_canonical():
    assert [backoff_s(n, base_s=5, cap_s=30) for n in (1, 2, 3, 4, 5)] == [5, 10, 20, 30, 30]
    assert event_body("alias.moved", "ev-1", {"b": 1, "a": "é"}) == (
        b'{"a":"\\u00e9","b":1,"id":"ev-1","type":"alias.moved"}'
    )  # ASCII on the wire: the signed bytes never depend on an encoding


@pytest.mark.parametrize(
    ("env", "says"),
    [
        (
            {"webhooks": [{"name": "x", "url": "ftp://h/", "secret": "s" * 16}]},
            "not an http:// or https:// URL",
        ),
        ({"webhooks": [{"name": "x", "url": "http://h/", "secret": "short"}]}, "at least 16 characters"),
        ({"webhooks": [{"name": "X Y", "url": "http://h/", "secret": "s" * 16}]}, "lower-case letters"),
        (
            {
                "webhooks": [
                    {"name": "x", "url": "http://h/", "secret": "s" * 16, "events": ["release.deleted"]}
                ]
            },
            "the types are release.created, alias.moved",
        ),
        (
            {"webhooks": [{"name": "x", "url": "http://h/", "secret": "s" * 16}] * 2},
            "x is given twice",
        ),
        ({"mlflow_artifacts": "reference"}, "needs mlflow_reference_uri"),
        (
            {"mlflow_artifacts": "reference", "mlflow_reference_uri": "s3://m/{digest}"},
            "it may use {sha256}, {project}, {model}, {version} and {path}",
        ),
    ],
)
def test_bad_handoff_settings_are_refused_with_what_is_valid(env, says):
    with pytest.raises(ValidationError) as refused:
        Settings(**env)
    assert says in settings_problems(refused.value)
    assert "s" * 16 not in settings_problems(refused.value)  # a secret is never echoed
